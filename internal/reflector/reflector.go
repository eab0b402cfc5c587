package reflector

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
	"github.com/typedinformer/informer/metrics"
	"github.com/typedinformer/informer/source"
)

// Sink is where the reflector writes: a *fifo.Queue, or anything that takes
// deltas the same way.
type Sink[T cache.Object] interface {
	Push(deltas ...fifo.Delta[T]) error
}

// Defaults of [Options].
const (
	DefaultPageSize        = 500
	DefaultMinWatchTimeout = 5 * time.Minute
	DefaultBackoffInit     = 800 * time.Millisecond
	DefaultBackoffMax      = 30 * time.Second
	// shortWatch is how long a watch must last to be reopened at once; a
	// watch that ends sooner, whatever it delivered, is reopened after a
	// backoff, so a server that keeps closing watches causes no tight loop.
	shortWatch = time.Second
	// errorBuffer is how many reported errors wait for Errors' reader.
	errorBuffer = 64
)

// Options configures [New].
type Options[T cache.Object] struct {
	// Name identifies the reflector in logs. Default: "reflector".
	Name string
	// PageSize is the LIST page size. Default: DefaultPageSize.
	PageSize int64
	// NoWatchList turns off the streaming initial list. Default: false,
	// streaming is tried first and LIST is the fallback.
	NoWatchList bool
	// MinWatchTimeout is the lower bound of the randomised watch timeout
	// (the upper bound is twice it). Default: DefaultMinWatchTimeout.
	MinWatchTimeout time.Duration
	// Backoff between failed attempts. Default: 800ms doubling to 30s with
	// full jitter. It goes back to its start once a watch has lasted a
	// second: the source is healthy again.
	Backoff *wait.Backoff
	// Tweak, if set, changes the options of every list and watch request
	// before it is sent: the informer sets label and field selectors here.
	// It must set the same selectors every time.
	Tweak func(*metav1.ListOptions)
	// Prepare turns an object from the source into the entry to queue, for
	// a delta of type t (Added, Updated, Deleted or Replaced). An error
	// refuses the object: the reflector reports it and relists after a
	// backoff rather than move its resourceVersion past the object, unless
	// PushRefused. Default: the entry of the object's key, refusing nil and
	// nameless objects.
	Prepare func(t fifo.DeltaType, obj T) (cache.Entry[T], error)
	// PushRefused makes an object Prepare refuses, if it has a name, go to
	// the sink as a Refused delta in its place, with Prepare's error, and
	// the reflector goes on past it: the sink decides what a refusal means
	// (an informer quarantines it). A nil or nameless object, which no
	// later event can name, goes so only as an item of a list, as a
	// Refused delta with an empty key: the sink reports it and the rest of
	// the list is taken. In a watch it is refused all the same. Default:
	// false.
	PushRefused bool
	// ErrWatchIdle is wrapped by the error reported for a watch stopped by
	// WatchIdleTimeout. Default: an error of this package.
	ErrWatchIdle error
	// WatchIdleTimeout, if positive, stops a watch that delivers neither
	// an event nor a bookmark for that long, once the source has sent a
	// periodic bookmark (a server that sends none is never timed out),
	// and watches again from the last resourceVersion: a stalled
	// connection is given up without a relist. Default: 0, off.
	WatchIdleTimeout time.Duration
	// Shard, if set, restricts the reflector to one shard (see Shard).
	// Default: nil, the whole resource.
	Shard *Shard[T]
	// Warm, if set, is called once, before the first list, for a saved
	// state to start from instead of listing (see warm.go). An error, or
	// a saved state the server no longer serves, is reported once,
	// wrapping ErrWarm, and the reflector lists as it would have.
	Warm func() (Saved[T], error)
	// WarmAccept bounds how long a warm start waits, once the saved
	// objects are loaded, for the server to accept the watch from the
	// saved version. Default: DefaultWarmAccept.
	WarmAccept time.Duration
	// ErrWarm is wrapped by the error reported for a warm start given up.
	// Default: an error of this package.
	ErrWarm error
	// Reported, if set, is called after an error was queued for Errors'
	// reader, so that it need not wait on the channel to learn of it.
	Reported func()
}

// Status is the reflector's view of its source.
type Status struct {
	// LastError is the last error since the source was last healthy (a
	// list succeeded, a watch was established, an event or bookmark
	// arrived); nil when it is healthy.
	LastError error
	// LastErrorTime is when LastError happened.
	LastErrorTime time.Time
	// StaleSince is when the current run of errors began: since then the
	// cache may be stale. Zero when healthy.
	StaleSince time.Time
	// Stats are the reflector's counters.
	Stats metrics.Stats
	// Shard is the state of the shard; zero without one.
	Shard metrics.ShardStatus
}

// Reflector lists and watches a source into a sink.
type Reflector[T cache.Object] struct {
	src  source.Source[T]
	sink Sink[T]
	opts Options[T]
	// backoff is the current backoff, used and reset by Run's goroutine
	// only; initial is where a reset puts it.
	backoff, initial wait.Backoff
	errs             chan error
	dropped          atomic.Int64
	one              [1]fifo.Delta[T] // pushOne's slot, used by Run's goroutine only
	// pagesAnyVersion: a LIST at "0" came back in pages, so the server
	// pages whatever the version (no watch cache, or one that serves
	// pages from snapshots) and relists at a version page too. Run's
	// goroutine only.
	pagesAnyVersion bool

	mu            sync.Mutex
	lastSyncRV    string
	listed        bool // a list was handed to the sink
	resumable     bool // watches can resume from lastSyncRV (the last list had a version)
	rvUnavailable bool // the last RV was refused as expired or too large
	noWatchList   bool // the source refused a streaming list
	lastErr       error
	lastErrTime   time.Time
	staleSince    time.Time
	changed       chan struct{} // closed and replaced when the status changes

	current      source.Watcher[T] // the watch being consumed, for Relist; under mu
	relistWanted bool              // Relist was called; under mu
	beating      atomic.Bool       // a periodic bookmark arrived: idle watches are stalled
	idle         atomic.Int64      // watches stopped by the idle timeout

	lists, watches, restarts, watchLists, relists, events, bookmarks, errCount, warmStarts atomic.Int64

	// Moves (shard.go): asked for by Move under mu, taken by Run.
	shard    shardState[T]
	pending  *move[T]      // under mu
	moveGen  uint64        // moves asked for; under mu
	movedGen uint64        // the last move taken; under mu
	marks    uint64        // Moved deltas pushed; under mu
	moved    chan struct{} // closed and replaced when a move is taken; under mu
	wakeMove chan struct{} // wakes a paused Run
	paused   bool          // Run's goroutine only
}

// New returns a reflector that feeds sink from src.
func New[T cache.Object](src source.Source[T], sink Sink[T], opts Options[T]) *Reflector[T] {
	if opts.Name == "" {
		opts.Name = "reflector"
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.MinWatchTimeout <= 0 {
		opts.MinWatchTimeout = DefaultMinWatchTimeout
	}
	if opts.Prepare == nil {
		opts.Prepare = keyEntry[T]
	}
	if opts.ErrWatchIdle == nil {
		opts.ErrWatchIdle = errWatchIdle
	}
	if opts.WarmAccept <= 0 {
		opts.WarmAccept = DefaultWarmAccept
	}
	if opts.ErrWarm == nil {
		opts.ErrWarm = errWarm
	}
	b := wait.Backoff{Duration: DefaultBackoffInit, Cap: DefaultBackoffMax, Factor: 2, Jitter: 1, Steps: 64}
	if opts.Backoff != nil {
		b = *opts.Backoff
	}
	r := &Reflector[T]{
		src: guard(src), sink: sink, opts: opts,
		backoff:     b,
		initial:     b,
		errs:        make(chan error, errorBuffer),
		noWatchList: opts.NoWatchList || opts.Shard != nil,
		changed:     make(chan struct{}),
		moved:       make(chan struct{}),
		wakeMove:    make(chan struct{}, 1),
	}
	r.shard.current.Store(opts.Shard)
	return r
}

// request returns opts as Options.Tweak changes them.
func (r *Reflector[T]) request(opts metav1.ListOptions) metav1.ListOptions {
	r.shardRequest(&opts)
	if r.opts.Tweak != nil {
		r.opts.Tweak(&opts)
	}
	return opts
}

// keyEntry is the default Prepare.
func keyEntry[T cache.Object](_ fifo.DeltaType, obj T) (cache.Entry[T], error) {
	var zero T
	if obj == zero {
		return cache.Entry[T]{}, cache.ErrNilObject
	}
	k := cache.KeyOf(obj)
	if k.Name == "" {
		return cache.Entry[T]{}, cache.ErrNoName
	}
	return cache.Entry[T]{Key: k, Object: obj}, nil
}

// Run lists and watches until ctx ends, then returns nil. Failures are
// reported (Errors, Status) and retried with backoff, with one exception:
// before the first list succeeds, a list the server refuses as malformed
// (400, 405, 406, 415, 422: retrying the same request cannot help) ends Run
// with that error.
func (r *Reflector[T]) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("reflector", r.opts.Name)
	ctx = klog.NewContext(ctx, logger)
	for ctx.Err() == nil {
		if !r.takeMove(ctx) {
			break
		}
		var err error
		warmed := false
		if r.opts.Warm != nil {
			warmed, err = r.warmStart(ctx)
		}
		if !warmed && ctx.Err() == nil {
			err = r.listAndWatch(ctx)
		}
		if ctx.Err() != nil {
			break
		}
		if errors.Is(err, errRelistNow) {
			r.backoff = r.initial
			continue
		}
		if err != nil {
			if isMalformedRequest(err) && !r.hasListed() {
				r.record(err) // Run returns it: the caller gets it once, from Run
				return err
			}
			r.report(ctx, reportable(err))
		}
		if errors.Is(err, source.ErrParked) {
			r.backoff = r.initial // the source waits itself, and serves again from scratch
			continue
		}
		if r.movePending() {
			continue // a move lists its new shard at once
		}
		if !r.sleep(ctx) {
			break
		}
	}
	return nil
}

// Errors delivers every error the reflector recovers from, in order (a
// fatal error is returned by Run instead). If
// nobody reads it, errors beyond a small buffer are dropped (Status still
// holds the last one).
func (r *Reflector[T]) Errors() <-chan error { return r.errs }

// Status returns the reflector's status.
func (r *Reflector[T]) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Status{
		LastError: r.lastErr, LastErrorTime: r.lastErrTime, StaleSince: r.staleSince,
		Stats: metrics.Stats{
			Lists: int(r.lists.Load()), Watches: int(r.watches.Load()), WatchRestarts: int(r.restarts.Load()), WatchLists: int(r.watchLists.Load()),
			Relists: int(r.relists.Load()), Events: int(r.events.Load()), Bookmarks: int(r.bookmarks.Load()),
			Errors: int(r.errCount.Load()), IdleWatches: int(r.idle.Load()), WarmStarts: int(r.warmStarts.Load()),
		},
		Shard: r.shardStatus(),
	}
}

// Changed returns a channel closed at the next change of LastError.
func (r *Reflector[T]) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// LastSyncResourceVersion is the resourceVersion of the last list or event
// handed to the sink. It never goes back, except to a relist's version.
func (r *Reflector[T]) LastSyncResourceVersion() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastSyncRV
}

func (r *Reflector[T]) hasListed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.listed
}

// sleep waits one backoff step; false if ctx ended first.
func (r *Reflector[T]) sleep(ctx context.Context) bool {
	t := time.NewTimer(r.backoff.Step())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// report records err in the status and hands it to Errors' reader.
func (r *Reflector[T]) report(ctx context.Context, err error) {
	r.errCount.Add(1)
	r.record(err)
	klog.FromContext(ctx).V(4).Info("list/watch error", "err", err)
	select {
	case r.errs <- err:
		if r.opts.Reported != nil {
			r.opts.Reported()
		}
	default:
		r.dropped.Add(1)
	}
}

// record sets err as the status's last error.
func (r *Reflector[T]) record(err error) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastErr, r.lastErrTime = err, now
	if r.staleSince.IsZero() {
		r.staleSince = now
	}
	r.notifyLocked()
}

// healthy clears the error: the source answered well again.
func (r *Reflector[T]) healthy() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lastErr != nil {
		r.lastErr, r.lastErrTime, r.staleSince = nil, time.Time{}, time.Time{}
		r.notifyLocked()
	}
}

func (r *Reflector[T]) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *Reflector[T]) watchTimeout() *int64 {
	min := r.opts.MinWatchTimeout.Seconds()
	s := int64(min + rand.Float64()*min)
	return &s
}

// listed records a list handed to the sink at rv.
func (r *Reflector[T]) setListed(rv string) {
	r.mu.Lock()
	r.lastSyncRV, r.listed, r.resumable, r.rvUnavailable = rv, true, rv != "", false
	r.mu.Unlock()
	r.healthy()
}

// advance records an event taken at rv: the source is healthy, and the
// resume point moves to rv, never back (versions that compare, all of a
// real server's, only go forward).
func (r *Reflector[T]) advance(rv string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lastErr != nil {
		r.lastErr, r.lastErrTime, r.staleSince = nil, time.Time{}, time.Time{}
		r.notifyLocked()
	}
	if rv == "" {
		return
	}
	if older(rv, r.lastSyncRV) {
		return
	}
	r.lastSyncRV = rv
}

// older reports whether resourceVersion rv is older than last. Versions
// of one length compare as strings when both are decimal numbers, as the
// API server writes them; anything else is parsed.
func older(rv, last string) bool {
	if len(rv) == len(last) && len(rv) > 0 && rv[0] != '0' && last[0] != '0' && digits(rv) && digits(last) {
		return rv < last
	}
	c, err := resourceversion.CompareResourceVersion(rv, last)
	return err == nil && c < 0
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (r *Reflector[T]) setUnavailable() {
	r.mu.Lock()
	r.rvUnavailable = true
	r.mu.Unlock()
}

// push hands deltas to the sink; a closed sink means the run is over.
func (r *Reflector[T]) push(ds []fifo.Delta[T]) error {
	if err := r.sink.Push(ds...); err != nil {
		return errSinkClosed
	}
	return nil
}

// pushOne is push for one delta, without allocating: the reflector's
// goroutine reuses one slot.
func (r *Reflector[T]) pushOne(d fifo.Delta[T]) error {
	r.one[0] = d
	err := r.push(r.one[:])
	r.one[0] = fifo.Delta[T]{}
	return err
}

// errWatchIdle is the default of Options.ErrWatchIdle.
var errWatchIdle = errors.New("reflector: watch idle")

// errSinkClosed ends a run quietly: the consumer is gone.
var errSinkClosed = errors.New("sink closed")

// errRelistNow ends a listAndWatch whose source asks for a list at once,
// with no report and no backoff: one served again after a park
// (source.ErrParked with a 410).
var errRelistNow = errors.New("relist at once")

// listAndWatch gets the initial state, then watches until the watch fails
// in a way that needs a relist, or ctx ends.
func (r *Reflector[T]) listAndWatch(ctx context.Context) error {
	var w source.Watcher[T]
	r.mu.Lock()
	streaming := !r.noWatchList
	r.mu.Unlock()
	if streaming {
		var err error
		w, err = r.watchList(ctx)
		switch {
		case ctx.Err() != nil || errors.Is(err, errSinkClosed):
			return nil
		case err != nil && isRefusal(err):
			return err
		case err != nil:
			klog.FromContext(ctx).V(3).Info("streaming list failed, falling back to LIST", "err", err)
			if refusesWatchList(err) || errors.Is(err, errNoProgress) {
				r.mu.Lock()
				r.noWatchList = true
				r.mu.Unlock()
			}
			if !refusesWatchList(err) && !NeedsIntervention(err) {
				// A bad frame or a server error is an error, not a refusal;
				// RBAC errors and a missing resource the LIST reports itself.
				r.report(ctx, err)
			}
			w, streaming = nil, false
		}
	}
	if !streaming {
		if err := r.list(ctx); err != nil {
			if errors.Is(err, errSinkClosed) {
				return nil
			}
			return err
		}
	}
	err := r.watch(ctx, w)
	if errors.Is(err, errSinkClosed) {
		return nil
	}
	return err
}
