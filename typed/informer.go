package typed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
	"github.com/typedinformer/informer/internal/intern"
	"github.com/typedinformer/informer/internal/reflector"
	"github.com/typedinformer/informer/source"
)

// Errors of the informer.
var (
	// ErrStopped is returned by Run, AddHandler and waits once Run has
	// returned: an informer runs once. Everything of this module that runs
	// once (factory.Factory.Start, reconcile.Controller.Run, the sharding
	// package's Run) returns it too, after it ran.
	ErrStopped = errors.New("typed: stopped")
	// ErrRunning is returned by Run while the informer is already running,
	// and by every other Run of this module that runs once while it runs.
	ErrRunning = errors.New("typed: already running")
	// ErrHandlerPanic wraps the value of a recovered handler panic.
	ErrHandlerPanic = errors.New("typed: handler panicked")
	// ErrHandlerStuck is wrapped by the error Run reports for a handler
	// still in a call Options.StopTimeout after the informer began to stop.
	ErrHandlerStuck = errors.New("typed: handler stuck")
	// ErrTransformPanic wraps the value of a recovered Options.Transform
	// panic.
	ErrTransformPanic = errors.New("typed: transform panicked")
	// ErrUnknownHandler is returned by RemoveHandler for a registration of
	// another informer, or one already removed.
	ErrUnknownHandler = errors.New("typed: unknown handler registration")
	// ErrRemoved is the wait error of a registration whose handler was
	// removed before it synced.
	ErrRemoved = errors.New("typed: handler removed")
)

// queueLen bounds the informer's queue: when the writer falls behind, the
// reflector waits rather than hold more decoded objects than the writer
// can free (a relist of unchanged objects frees each copy as the writer
// takes it).
const queueLen = 4 * fifo.DefaultMaxBatch

// state is an informer's lifecycle: idle until Run, running, then stopped
// for good.
type state uint8

const (
	idle state = iota
	running
	stopped
)

// Informer keeps a typed cache of one resource in step with a source and
// notifies handlers. Create it with [NewInformer]; run it with Run.
type Informer[T cache.Object] struct {
	name   string
	res    source.Resource
	opts   Options[T]
	writer *cache.Writer[T]
	store  *cache.Store[T]
	queue  *fifo.Queue[T]
	refl   *reflector.Reflector[T]

	// handlers is the current set of listeners, copied on write under mu
	// and read by the writer without a lock.
	handlers atomic.Pointer[[]*listener[T]]
	// listedRev is the store revision of the first list, 0 until then.
	listedRev atomic.Uint64
	synced    chan struct{} // closed by the writer once the first list is applied
	seen      observed      // the resourceVersion the cache has caught up with
	done      chan struct{} // closed when Run returns
	errs      chan error    // errors of the writer, the listeners and the checks, for the reporter
	reported  chan struct{} // closed once nothing more can be reported: a panic reported later is logged
	reporter  struct {      // the goroutine that delivers errors, started when there are some (kickReporter)
		mu     sync.Mutex
		active chan struct{} // closed when the running reporter returns; nil when none runs
	}
	logger atomic.Pointer[klog.Logger]
	logged struct { // the default error logging's, the reporter's alone
		text    string
		at      time.Time
		repeats int
	}
	metrics informerMetrics
	poison  quarantine // objects left out of the cache (poison.go)

	// The consistency check (consistency.go) lists src itself;
	// mutations is nil unless mutations are detected (mutation.go).
	src        source.Source[T]
	consistent consistency
	mutations  *mutationDetector[T]
	strs       *intern.Interner[T] // nil: strings are not shared (intern.go)
	loadShared atomic.Bool         // the next list is a saved file's, its strings shared as it was decoded (warm.go)
	size       sizeState           // the cache's size estimate (size.go)
	warm       *warmState          // nil without Options.WarmStart (warm.go)

	// Moves of a sharded informer (move.go): what it holds on to, the
	// Moved deltas the writer has handled, and whether the cache holds a
	// list of the current shard.
	moving      sync.Mutex // serialises Move
	fenceGen    uint64     // under mu
	keep        atomic.Pointer[keeper[T]]
	moves       progress
	shardListed atomic.Bool

	mu     sync.Mutex
	state  state
	regs   map[*Registration]*listener[T]
	nextID int
	live   map[*listener[T]]struct{} // listeners whose goroutine runs
	exited chan struct{}             // closed and replaced when one ends; under mu
}

// NewInformer returns an informer for the objects of src. It does nothing
// until Run. It fails for a nil source and for invalid indexes.
func NewInformer[T cache.Object](src source.Source[T], opts Options[T]) (*Informer[T], error) {
	if err := source.Check(src); err != nil {
		return nil, fmt.Errorf("typed: NewInformer: %w", err)
	}
	info := src.Info()
	res := source.ResourceOf(src)
	if !opts.Resource.Empty() {
		res.GroupResource = opts.Resource
	}
	if opts.Scope != cache.ScopeUnknown {
		res.Scope = opts.Scope
	}
	name := opts.Name
	if name == "" && !opts.Resource.Empty() {
		name = res.String()
	}
	if name == "" {
		name = source.DefaultName(src)
	}
	if opts.KeepManagedFields && info.NoManagedFields {
		return nil, fmt.Errorf("typed: informer %s: Options.KeepManagedFields, but the source drops managedFields (for FromConfig, set RESTOptions.KeepManagedFields)", name)
	}
	tweak, err := requestOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("typed: informer %s: %w", name, err)
	}
	if opts.PageSize < 0 || opts.MinWatchTimeout < 0 {
		return nil, fmt.Errorf("typed: informer %s: PageSize %d, MinWatchTimeout %v: want 0 (the default) or more", name, opts.PageSize, opts.MinWatchTimeout)
	}
	if b := opts.MemoryBudget; b != nil && b.Bytes <= 0 {
		return nil, fmt.Errorf("typed: informer %s: MemoryBudget.Bytes is %d, want more than 0 (or no MemoryBudget)", name, b.Bytes)
	}
	ws, err := newWarmState(opts, res.GroupResource, tweak)
	if err != nil {
		return nil, fmt.Errorf("typed: informer %s: %w", name, err)
	}
	w, err := cache.NewWriter(cache.Options[T]{
		Indexers: opts.Indexers, LabelIndexes: opts.LabelIndexes,
		Resource: res.GroupResource, Scope: res.Scope,
	})
	if err != nil {
		return nil, fmt.Errorf("typed: informer %s: %w", name, err)
	}
	inf := &Informer[T]{
		name: name, res: res, opts: opts, writer: w, store: w.Store(),
		queue:  fifo.New[T](fifo.Options{MaxLen: queueLen}),
		synced: make(chan struct{}), done: make(chan struct{}), errs: make(chan error, errorBuffer), reported: make(chan struct{}),
		regs: map[*Registration]*listener[T]{},
		warm: ws,
	}
	inf.handlers.Store(&[]*listener[T]{})
	inf.src = src
	inf.strs = newSharer(info, opts)
	if detectMutations(opts) {
		inf.mutations = newMutationDetector[T]()
	}
	inf.metrics.id = metricsID(name, res.GroupResource.WithVersion(""))
	ropts := reflector.Options[T]{
		Name:            name,
		PageSize:        opts.PageSize,
		NoWatchList:     opts.NoWatchList || !info.WatchList,
		MinWatchTimeout: opts.MinWatchTimeout,
		Prepare:         inf.prepare,
		PushRefused:     opts.OnRefused == Quarantine,
		Tweak:           tweak,
		Shard:           reflectorShard[T](opts.Shard),
		ErrWatchIdle:    ErrWatchIdle,
		Reported:        func() { inf.kickReporter() },

		WatchIdleTimeout: idleTimeout(opts.WatchIdleTimeout),
	}
	if ws != nil {
		ropts.Warm, ropts.WarmAccept, ropts.ErrWarm = inf.openSaved, ws.opts.Accept, ErrWarmStart
	}
	inf.refl = reflector.New[T](src, inf.queue, ropts)
	return inf, nil
}

// requestOptions checks the selectors of opts and returns the function
// that sets them, and TweakListOptions, on every request; nil if none.
func requestOptions[T cache.Object](opts Options[T]) (func(*metav1.ListOptions), error) {
	if opts.LabelSelector == "" && opts.FieldSelector == "" && opts.TweakListOptions == nil {
		return nil, nil
	}
	if _, err := labels.Parse(opts.LabelSelector); err != nil {
		return nil, fmt.Errorf("Options.LabelSelector: %w", err)
	}
	if _, err := fields.ParseSelector(opts.FieldSelector); err != nil {
		return nil, fmt.Errorf("Options.FieldSelector: %w", err)
	}
	return func(o *metav1.ListOptions) {
		o.LabelSelector, o.FieldSelector = opts.LabelSelector, opts.FieldSelector
		if opts.TweakListOptions != nil {
			opts.TweakListOptions(o)
		}
	}, nil
}

// Name returns the informer's name, as errors and logs give it.
func (inf *Informer[T]) Name() string { return inf.name }

// Resource returns what the informer holds, as its source and
// Options.Resource and Options.Scope declare it; either part may be
// unknown (see source.ResourceOf).
func (inf *Informer[T]) Resource() source.Resource { return inf.res }

// Run starts the informer and blocks until ctx ends; it then stops every
// goroutine it started and returns nil. A handler call in progress when
// ctx ends is waited for up to Options.StopTimeout; one still running then
// is reported (ErrHandlerStuck, naming the handler) and left to return on
// its own, with nothing more delivered to it. The last errors are then
// handed to Options.ErrorHandler, waited for up to StopTimeout as well. It
// returns an error when the
// informer cannot go on: the source refused the first list as a malformed
// request, which no retry can fix. Run returns ErrRunning while the
// informer runs and ErrStopped after it ran.
func (inf *Informer[T]) Run(ctx context.Context) error {
	inf.mu.Lock()
	switch inf.state {
	case running:
		inf.mu.Unlock()
		return ErrRunning
	case stopped:
		inf.mu.Unlock()
		return ErrStopped
	}
	inf.state = running
	logger := klog.FromContext(ctx)
	inf.logger.Store(&logger)
	for _, l := range *inf.handlers.Load() {
		inf.startListener(l)
	}
	inf.mu.Unlock()
	defer inf.startMetrics()()
	g, gctx := errgroup.WithContext(ctx)
	stopQueue := context.AfterFunc(gctx, inf.queue.Close) // wakes a reflector waiting for room
	defer stopQueue()
	g.Go(func() error {
		if err := inf.refl.Run(gctx); err != nil {
			return fmt.Errorf("informer %s: %w", inf.name, err)
		}
		return nil
	})
	app := &applier[T]{inf: inf}
	g.Go(func() error { return app.run(gctx) })
	if inf.opts.ResyncPeriod > 0 {
		g.Go(func() error { inf.resyncLoop(gctx); return nil })
	}
	if inf.opts.ConsistencyCheck > 0 {
		g.Go(func() error { inf.consistencyLoop(gctx); return nil })
	}
	if inf.mutations != nil {
		g.Go(func() error { inf.mutationLoop(gctx); return nil })
	}
	if inf.warm != nil && inf.warm.opts.Interval >= 0 {
		g.Go(func() error { inf.saveLoop(gctx); return nil })
	}
	err := g.Wait()
	inf.queue.Close()
	if inf.warm != nil {
		if err := inf.save(true); err != nil {
			inf.reportAsync(err)
		}
	}

	inf.mu.Lock()
	inf.state = stopped
	hs := *inf.handlers.Load()
	inf.mu.Unlock()
	for _, l := range hs {
		l.shutdown()
	}
	if stuck := inf.waitListeners(); len(stuck) > 0 {
		for _, name := range stuck {
			inf.reportAsync(fmt.Errorf("handler %s: still in a call %v after the informer began to stop; Run returns and the call is left to end on its own: %w",
				name, stopTimeout(inf.opts.StopTimeout), ErrHandlerStuck))
		}
	} else if inf.mutations != nil {
		inf.checkMutations(inf.reportAsync) // no handler runs any more: a last look at what they did
	}
	close(inf.reported)
	inf.waitReporter(inf.kickReporter())
	close(inf.done)
	return err
}

// waitReporter waits, bounded by Options.StopTimeout, for the reporter to
// hand the last errors to ErrorHandler; an ErrorHandler that blocks does
// not keep Run from returning (it gets the rest when it returns).
func (inf *Informer[T]) waitReporter(reporter <-chan struct{}) {
	d := stopTimeout(inf.opts.StopTimeout)
	if d == 0 {
		<-reporter
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-reporter:
	case <-t.C:
		inf.log().Error(nil, "Options.ErrorHandler has not returned; Run returns, and the errors left are handed over when it does",
			"informer", inf.name, "waited", d)
	}
}

// startListener starts l's goroutine; the caller holds mu while running.
func (inf *Informer[T]) startListener(l *listener[T]) {
	if inf.live == nil {
		inf.live, inf.exited = map[*listener[T]]struct{}{}, make(chan struct{})
	}
	inf.live[l] = struct{}{}
	go func() {
		defer func() {
			inf.mu.Lock()
			delete(inf.live, l)
			close(inf.exited)
			inf.exited = make(chan struct{})
			inf.mu.Unlock()
		}()
		l.run()
	}()
}

// waitListeners waits, bounded by Options.StopTimeout, until every
// listener goroutine has ended (each was shut down, so each ends once the
// call it is in returns), and returns the names of those still running.
func (inf *Informer[T]) waitListeners() []string {
	var expired <-chan time.Time
	if d := stopTimeout(inf.opts.StopTimeout); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		expired = t.C
	}
	for {
		inf.mu.Lock()
		n, ch := len(inf.live), inf.exited
		inf.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-expired:
			inf.mu.Lock()
			defer inf.mu.Unlock()
			var names []string
			for l := range inf.live {
				names = append(names, l.name)
			}
			slices.Sort(names)
			return names
		}
	}
}

// errorBuffer is how many errors wait for the reporter before the writer
// logs the next instead of waiting (the writer never waits on user code).
const errorBuffer = 64

// The reporter hands every error of the run to handleError, on one
// goroutine at a time, with no lock held: the reflector's, the writer's,
// the handlers' panics and what the checks find. It runs only while there
// are errors to deliver, so an informer without errors has no goroutine
// for them. Every sender queues its error, then calls kickReporter.

// kickReporter starts the reporter if none runs, and returns the channel
// closed when the reporter returns. A running one finds the sender's
// error: it returns only once it sees both queues empty, under the lock
// kickReporter takes.
func (inf *Informer[T]) kickReporter() <-chan struct{} {
	r := &inf.reporter
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active != nil {
		return r.active
	}
	done := make(chan struct{})
	r.active = done
	go inf.reportLoop(done)
	return done
}

// reportLoop delivers the queued errors until none is left, then closes
// done and returns.
func (inf *Informer[T]) reportLoop(done chan struct{}) {
	r := &inf.reporter
	for {
		for drained := false; !drained; {
			select {
			case err := <-inf.refl.Errors():
				inf.deliver(err)
			case err := <-inf.errs:
				inf.deliver(err)
			default:
				drained = true
			}
		}
		r.mu.Lock()
		if len(inf.errs) > 0 || len(inf.refl.Errors()) > 0 {
			r.mu.Unlock()
			continue
		}
		r.active = nil
		close(done)
		r.mu.Unlock()
		return
	}
}

// deliver counts err in the metrics (a handler's panic has a count of
// its own, Registration.Panics) and passes it, naming the informer, to
// handleError.
func (inf *Informer[T]) deliver(err error) {
	if !errors.Is(err, ErrHandlerPanic) {
		inf.observeError(err)
	}
	if inf.opts.ErrorHandler == nil {
		inf.logOnce(err)
		return
	}
	inf.handleError(fmt.Errorf("informer %s: %w", inf.name, err))
}

// repeatLogEvery is how often the default error logging logs an error
// that repeats unchanged (a Forbidden list retried with backoff).
const repeatLogEvery = 5 * time.Minute

// logOnce is the default error handler: it logs err, naming the informer
// once, unless it is the error logged last, unchanged, less than
// repeatLogEvery ago; it then counts it, and says how often it came when
// it logs it again. The reporter alone calls it, one call at a time.
func (inf *Informer[T]) logOnce(err error) {
	text := err.Error()
	now := time.Now()
	if text == inf.logged.text && now.Sub(inf.logged.at) < repeatLogEvery {
		inf.logged.repeats++
		return
	}
	if text == inf.logged.text && inf.logged.repeats > 0 {
		inf.log().Error(err, "informer error", "informer", inf.name, "repeatedSince", inf.logged.at, "repeats", inf.logged.repeats)
	} else {
		inf.log().Error(err, "informer error", "informer", inf.name)
	}
	inf.logged.text, inf.logged.at, inf.logged.repeats = text, now, 0
}

// reportAsync queues an error for the reporter without waiting: the
// writer and the checks never wait on user code. An error that finds the
// queue full is logged instead.
func (inf *Informer[T]) reportAsync(err error) {
	select {
	case inf.errs <- err:
		inf.kickReporter()
	default:
		inf.log().Error(err, "informer error (error queue full)", "informer", inf.name)
	}
}

// reportPanic queues a handler's panic for the reporter: the panicking
// handler's goroutine waits for room, unless the run is over (a handler
// that outlived it), when the panic is logged instead.
func (inf *Informer[T]) reportPanic(err error) {
	select {
	case inf.errs <- err:
		inf.kickReporter()
	case <-inf.reported:
		inf.log().Error(err, "handler panicked after the informer stopped", "informer", inf.name)
	}
}

// handleError passes err to Options.ErrorHandler. A panicking
// ErrorHandler is recovered and logged.
func (inf *Informer[T]) handleError(err error) {
	defer func() {
		if r := recover(); r != nil {
			inf.log().Error(fmt.Errorf("%v", r), "Options.ErrorHandler panicked", "informer", inf.name, "handling", err.Error())
		}
	}()
	inf.opts.ErrorHandler(err)
}

func (inf *Informer[T]) log() klog.Logger {
	if l := inf.logger.Load(); l != nil {
		return *l
	}
	return klog.Background()
}

func (inf *Informer[T]) resyncLoop(ctx context.Context) {
	t := time.NewTicker(inf.opts.ResyncPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if inf.queue.Push(fifo.Delta[T]{Type: fifo.Sync}) != nil {
				return
			}
		}
	}
}

// Store returns the read side of the cache.
func (inf *Informer[T]) Store() *cache.Store[T] { return inf.store }

// Lister returns the typed lister over the cache.
func (inf *Informer[T]) Lister() *cache.Lister[T] { return inf.store.Lister() }

// AddIndexers adds custom indexes to the cache, also after it is filled and
// while the informer runs (see cache.Writer.AddIndexers).
func (inf *Informer[T]) AddIndexers(indexers cache.Indexers[T]) error {
	if err := inf.writer.AddIndexers(indexers); err != nil {
		return fmt.Errorf("typed: informer %s: %w", inf.name, err)
	}
	return nil
}

// LastSyncResourceVersion is the newest resourceVersion the informer has
// taken from its source: its last list's, or a later watch event's or
// bookmark's. It never goes back. The cache may not have applied it yet:
// WaitForResourceVersion waits for that.
func (inf *Informer[T]) LastSyncResourceVersion() string {
	return inf.refl.LastSyncResourceVersion()
}

// HasSynced reports whether the initial list is in the cache. Handlers may
// still be processing it: see Registration.HasSynced.
func (inf *Informer[T]) HasSynced() bool {
	select {
	case <-inf.synced:
		return true
	default:
		return false
	}
}

// Synced returns a channel closed once HasSynced is true, for code that
// selects on it (client-go's DoneChecker); WaitForSync says why it is not.
func (inf *Informer[T]) Synced() <-chan struct{} { return inf.synced }

// Stopped returns a channel closed once Run has returned.
func (inf *Informer[T]) Stopped() <-chan struct{} { return inf.done }
