package reconcile

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/typed"
)

// Errors of the controller.
var (
	// ErrNilInformer is returned by New for a nil informer.
	ErrNilInformer = errors.New("reconcile: nil informer")
	// ErrNilReconciler is returned by New for a nil Reconciler.
	ErrNilReconciler = errors.New("reconcile: nil reconciler")
	// ErrBadOptions is wrapped by New's error for an invalid option.
	ErrBadOptions = errors.New("reconcile: invalid options")
	// ErrDropped is wrapped by the *KeyError reported for a key dropped
	// after Options.MaxRetries retries.
	ErrDropped = errors.New("reconcile: key dropped after too many retries")
	// ErrPanic wraps the value of a recovered Reconcile panic.
	ErrPanic = errors.New("reconcile: Reconcile panicked")
	// ErrDrainTimeout is reported when reconciles still run
	// Options.DrainTimeout after Run's context ended; their context is
	// then canceled.
	ErrDrainTimeout = errors.New("reconcile: drain timed out")
)

// Default values of Options.
const (
	// DefaultWorkers is the number of workers when Options.Workers is 0:
	// with one, Reconcile calls never overlap.
	DefaultWorkers = 1
	// DefaultDrainTimeout is Options.DrainTimeout's default, well inside
	// the 30 seconds a pod gets between SIGTERM and SIGKILL.
	DefaultDrainTimeout = 10 * time.Second
)

// Reconciler brings the world in line with the cached state of one object.
// Reconcile is called with the key of an object that changed (or was
// deleted: the lister then says NotFound), or whose children did (see
// Watch); it reads the object from the informer's lister. A nil error
// marks the key done; RequeueAfter(d) asks for it again after d; an error
// wrapped by Terminal is reported and not retried; any other error, or a
// panic, retries it after the rate limiter's delay. It must honour ctx,
// which is canceled when a shutdown's drain times out.
type Reconciler interface {
	Reconcile(ctx context.Context, key cache.Key) error
}

// Func adapts a function to a Reconciler.
type Func func(ctx context.Context, key cache.Key) error

// Reconcile calls f.
func (f Func) Reconcile(ctx context.Context, key cache.Key) error { return f(ctx, key) }

// Options configures New. The zero value is ready to use; each field
// documents its default.
type Options[T cache.Object] struct {
	// Workers is how many keys are reconciled at the same time, never the
	// same key twice at once; with more than one, Reconcile must be safe
	// for concurrent calls on different keys. Default: DefaultWorkers (1).
	Workers int
	// RateLimiter says how long a failed key waits before its retry.
	// Default: workqueue.DefaultTypedControllerRateLimiter (per key 5ms
	// doubling up to 1000s, and 10 retries per second, bursts of 100, over
	// all keys).
	RateLimiter workqueue.TypedRateLimiter[cache.Key]
	// MaxRetries, if positive, is how many times a failing key is retried
	// before it is dropped; the drop is reported (a *KeyError wrapping
	// ErrDropped and the last error). The next change to the object
	// enqueues it again. Default: 0, retried until it succeeds.
	MaxRetries int
	// Predicates decide which changes enqueue their key: all must accept
	// it. Default: none, every change does.
	Predicates []Predicate[T]
	// Watches are other informers whose changes reconcile keys of this
	// one: owned children (Owned), objects naming it in a label
	// (Labeled), any mapping (Mapped). Default: none.
	Watches []Watch
	// Trigger, if set, is a channel of keys to reconcile, from outside
	// any informer: a webhook, an external system's events. Each key
	// received is queued as a live change, until the channel is closed or
	// Run returns. Default: none.
	Trigger <-chan cache.Key
	// Periodic, if positive, reconciles every key of the informer's cache
	// about this often even if nothing changed, as background work (behind
	// live changes): each round comes after Periodic plus a random
	// jitter of up to PeriodicJitter of it, so that replicas and
	// controllers started together do not reconcile everything at once.
	// Unlike typed.Options.ResyncPeriod it calls no handler and touches no
	// other controller. Default: 0, never.
	Periodic time.Duration
	// PeriodicJitter is the fraction of Periodic added at random to each
	// round's wait, between 0 and 1. Default (0): 0.1.
	PeriodicJitter float64
	// Name names the controller in its Status, its errors and its
	// metrics, and its workqueue. Default: the informer's name. The
	// workqueue reports metrics only if Name or MetricsProvider is set.
	Name string
	// MetricsProvider receives the workqueue's metrics (client-go's
	// workqueue.MetricsProvider). Default: client-go's global provider,
	// used only when Name is set.
	MetricsProvider workqueue.MetricsProvider
	// DrainTimeout bounds the shutdown: when Run's context ends, no new
	// key starts, and reconciles in progress get this long to finish
	// before their context is canceled. Default: DefaultDrainTimeout
	// (10s).
	DrainTimeout time.Duration
	// ErrorHandler receives every failed reconcile and every dropped key
	// as a *KeyError, and ErrDrainTimeout. It is called from the
	// controller's goroutines and should not block for long. Default:
	// errors are logged (klog, from Run's context).
	ErrorHandler func(error)
}

// Validate reports the first invalid option, as New would: negative
// Workers, MaxRetries, DrainTimeout or Periodic, a PeriodicJitter outside
// 0..1, a nil Predicate, a nil or invalid Watch. The error wraps
// ErrBadOptions.
func (opts Options[T]) Validate() error {
	switch {
	case opts.Workers < 0:
		return fmt.Errorf("%w: Workers %d is negative", ErrBadOptions, opts.Workers)
	case opts.MaxRetries < 0:
		return fmt.Errorf("%w: MaxRetries %d is negative", ErrBadOptions, opts.MaxRetries)
	case opts.DrainTimeout < 0:
		return fmt.Errorf("%w: DrainTimeout %v is negative", ErrBadOptions, opts.DrainTimeout)
	case opts.Periodic < 0:
		return fmt.Errorf("%w: Periodic %v is negative", ErrBadOptions, opts.Periodic)
	case opts.PeriodicJitter < 0 || opts.PeriodicJitter > 1:
		return fmt.Errorf("%w: PeriodicJitter %v is not between 0 and 1", ErrBadOptions, opts.PeriodicJitter)
	}
	for i, w := range opts.Watches {
		if w == nil {
			return fmt.Errorf("%w: Watches[%d] is nil", ErrBadOptions, i)
		}
		if err := w.spec().err; err != nil {
			return fmt.Errorf("%w: Watches[%d]: %w", ErrBadOptions, i, err)
		}
	}
	for i, p := range opts.Predicates {
		if p == nil {
			return fmt.Errorf("%w: Predicates[%d] is nil", ErrBadOptions, i)
		}
	}
	return nil
}

// KeyError is what the controller reports about a key: a failed (or
// panicked) Reconcile that will be retried; with Terminal set, a failure
// that is not retried (see Terminal); with Dropped set, a key given up
// after Options.MaxRetries retries.
type KeyError struct {
	// Key is the key that failed.
	Key cache.Key
	// Attempts counts the failed Reconcile calls in a row, this one
	// included.
	Attempts int
	// Dropped says the key was given up.
	Dropped bool
	// Terminal says Reconcile marked the error with Terminal: the key is
	// not retried.
	Terminal bool
	// Err is the error Reconcile returned (or ErrPanic, wrapped).
	Err error
}

// Error names the key, the attempt and the error, and says whether the
// key was dropped.
func (e *KeyError) Error() string {
	switch {
	case e.Dropped:
		return fmt.Sprintf("reconcile %v: dropped after %d attempts: %v", e.Key, e.Attempts, e.Err)
	case e.Terminal:
		return fmt.Sprintf("reconcile %v: attempt %d, not retried: %v", e.Key, e.Attempts, e.Err)
	}
	return fmt.Sprintf("reconcile %v: attempt %d: %v", e.Key, e.Attempts, e.Err)
}

// Unwrap returns Err, and ErrDropped for a dropped key.
func (e *KeyError) Unwrap() []error {
	if e.Dropped {
		return []error{ErrDropped, e.Err}
	}
	return []error{e.Err}
}

// Controller feeds the keys of an informer's changes to a Reconciler from
// client-go's typed rate-limited workqueue. Create it with New; run it
// with Run.
type Controller[T cache.Object] struct {
	inf     *typed.Informer[T]
	r       Reconciler
	opts    Options[T]
	name    string
	watches []*watchSpec
	stats   *counters

	ran      atomic.Bool
	started  atomic.Bool // the caches synced and the workers run
	done     atomic.Bool // Run has returned
	stopping atomic.Bool
	prio     *twoLevel
	queue    atomic.Pointer[workqueue.TypedRateLimitingInterface[cache.Key]]
	logger   atomic.Pointer[klog.Logger]
	active   atomic.Int64
}

// New returns a controller that calls r for the keys of inf's changes.
// It does nothing until Run. It fails for a nil informer or reconciler,
// for negative Workers, MaxRetries, DrainTimeout or Periodic, a
// PeriodicJitter outside 0..1, and for a nil or invalid Watch.
func New[T cache.Object](inf *typed.Informer[T], r Reconciler, opts Options[T]) (*Controller[T], error) {
	switch {
	case inf == nil:
		return nil, ErrNilInformer
	case r == nil:
		return nil, ErrNilReconciler
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	var watches []*watchSpec
	for _, w := range opts.Watches {
		watches = append(watches, w.spec())
	}
	if opts.Workers == 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.DrainTimeout == 0 {
		opts.DrainTimeout = DefaultDrainTimeout
	}
	if opts.RateLimiter == nil {
		opts.RateLimiter = workqueue.DefaultTypedControllerRateLimiter[cache.Key]()
	}
	if opts.PeriodicJitter == 0 {
		opts.PeriodicJitter = 0.1
	}
	name := opts.Name
	if name == "" {
		name = inf.Name()
	}
	if opts.Name == "" && opts.MetricsProvider != nil {
		opts.Name = name
	}
	scope := inf.Resource().Scope
	for i, w := range watches {
		if err := w.bind(scope); err != nil {
			return nil, fmt.Errorf("%w: Watches[%d]: %w", ErrBadOptions, i, err)
		}
	}
	opts.Predicates = append([]Predicate[T](nil), opts.Predicates...)
	opts.Watches = nil // the specs are kept
	return &Controller[T]{inf: inf, r: r, opts: opts, name: name, watches: watches, stats: newCounters(), prio: newTwoLevel()}, nil
}

// Run adds the controller's handler to the informer, waits for the
// informer to sync (the informer runs on its own: start its Run too),
// then reconciles keys with Options.Workers workers until ctx ends.
// It returns the informer's sync error (a *typed.NotSyncedError) if the
// sync fails or ctx ends first.
//
// When ctx ends after the sync, Run drains: the handler is removed and
// the queue shut down, so no new key starts; reconciles in progress
// finish (their context is canceled after Options.DrainTimeout, and
// ErrDrainTimeout reported); keys still queued are dropped. Run then
// returns nil. If the informer stops while ctx is live, Run drains the
// same way and returns an error wrapping typed.ErrStopped: its cache will
// not change any more. No goroutine Run started outlives it. A controller
// runs once: Run returns typed.ErrRunning while it runs and
// typed.ErrStopped after.
func (c *Controller[T]) Run(ctx context.Context) error {
	if c.ran.Swap(true) {
		if c.done.Load() {
			return typed.ErrStopped
		}
		return typed.ErrRunning
	}
	defer c.done.Store(true)
	logger := klog.FromContext(ctx)
	c.logger.Store(&logger)
	q := workqueue.NewTypedRateLimitingQueueWithConfig(c.opts.RateLimiter, workqueue.TypedRateLimitingQueueConfig[cache.Key]{
		Name:            c.opts.Name,
		MetricsProvider: c.opts.MetricsProvider,
		DelayingQueue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[cache.Key]{
			Name:            c.opts.Name,
			MetricsProvider: c.opts.MetricsProvider,
			Queue: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[cache.Key]{
				Name:            c.opts.Name,
				MetricsProvider: c.opts.MetricsProvider,
				Queue:           c.prio,
			}),
		}),
	})
	c.queue.Store(&q)
	enqueue := func(key cache.Key, bg bool) {
		if bg {
			c.prio.markBackground(key)
		} else {
			c.prio.markLive(key)
		}
		q.Add(key)
	}
	var removes []func() error
	stopHandlers := func() {
		for _, remove := range removes {
			// An informer may have stopped already: then no handler runs.
			if err := remove(); err != nil && !errors.Is(err, typed.ErrStopped) {
				c.report(err)
			}
		}
	}
	reg, err := c.inf.AddHandler(c.handler(enqueue))
	if err != nil {
		q.ShutDown()
		return fmt.Errorf("reconcile: %w", err)
	}
	removes = append(removes, func() error { return c.inf.RemoveHandler(reg) })
	for _, w := range c.watches {
		remove, err := w.add(enqueue)
		if err != nil {
			stopHandlers()
			q.ShutDown()
			return fmt.Errorf("reconcile: watch %s: %w", w.name, err)
		}
		removes = append(removes, remove)
	}
	if err := c.waitForSync(ctx); err != nil {
		stopHandlers()
		q.ShutDown()
		return err
	}

	// Reconciles run on a context that outlives ctx by the drain; the
	// loops that feed the queue (triggers, periodic rounds, watching the
	// informers) on one that ends with the drain's start.
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	lctx, stopLoops := context.WithCancel(ctx)
	defer stopLoops()
	var workers, loops sync.WaitGroup
	for range c.opts.Workers {
		workers.Go(func() { c.work(rctx, q) })
	}
	stopped := make(chan string, 1+len(c.watches))
	watchStop := func(name string, ch <-chan struct{}) {
		loops.Go(func() {
			select {
			case <-ch:
				stopped <- name
			case <-lctx.Done():
			}
		})
	}
	watchStop(c.inf.Name(), c.inf.Stopped())
	for _, w := range c.watches {
		watchStop(w.name, w.stopped())
	}
	if c.opts.Trigger != nil {
		loops.Go(func() { c.triggers(lctx, enqueue) })
	}
	if c.opts.Periodic > 0 {
		loops.Go(func() { c.periodic(lctx, enqueue) })
	}
	c.started.Store(true)
	var result error
	select {
	case <-ctx.Done():
	case name := <-stopped:
		if ctx.Err() == nil { // stopped on its own, not by a shared ctx
			result = fmt.Errorf("reconcile: informer %s: %w: nothing more will change", name, typed.ErrStopped)
		}
	}

	c.stopping.Store(true)
	stopLoops()
	loops.Wait()
	stopHandlers()
	q.ShutDown() // wakes idle workers; adds are ignored from now on
	done := make(chan struct{})
	go func() { workers.Wait(); close(done) }()
	timer := time.NewTimer(c.opts.DrainTimeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		c.report(fmt.Errorf("%w: %d reconciles still running after %v, canceling them", ErrDrainTimeout, c.active.Load(), c.opts.DrainTimeout))
		cancel()
		<-done
	}
	return result
}

// waitForSync waits for the controller's informer and every watched one.
func (c *Controller[T]) waitForSync(ctx context.Context) error {
	if err := c.inf.WaitForSync(ctx); err != nil {
		return err
	}
	for _, w := range c.watches {
		if err := w.wait(ctx); err != nil {
			return fmt.Errorf("reconcile: watch %s: %w", w.name, err)
		}
	}
	return nil
}

// triggers queues the keys of Options.Trigger as live changes.
func (c *Controller[T]) triggers(ctx context.Context, enqueue func(cache.Key, bool)) {
	for {
		select {
		case <-ctx.Done():
			return
		case key, ok := <-c.opts.Trigger:
			if !ok {
				return
			}
			enqueue(key, false)
		}
	}
}

// periodic queues every cached key as background work each round.
func (c *Controller[T]) periodic(ctx context.Context, enqueue func(cache.Key, bool)) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		jitter := time.Duration(rand.Float64() * c.opts.PeriodicJitter * float64(c.opts.Periodic))
		timer.Reset(c.opts.Periodic + jitter)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		for _, key := range c.inf.Store().ListKeys() {
			enqueue(key, true)
		}
	}
}

// Len returns the number of keys waiting for a worker, not counting keys
// waiting for a retry's delay. It is 0 before Run.
func (c *Controller[T]) Len() int {
	if q := c.queue.Load(); q != nil {
		return (*q).Len()
	}
	return 0
}

// handler turns the informer's changes into keys, background work
// behind live changes.
func (c *Controller[T]) handler(enqueue func(cache.Key, bool)) handler.Funcs[T] {
	add := func(e Event[T]) {
		for _, p := range c.opts.Predicates {
			if !p(e) {
				return
			}
		}
		enqueue(e.Key, background(e))
	}
	return handler.Funcs[T]{
		AddFunc: func(obj T, initial bool) {
			add(Event[T]{Type: Added, Key: cache.KeyOf(obj), Object: obj, Initial: initial})
		},
		UpdateFunc: func(old, cur T) {
			add(Event[T]{Type: Updated, Key: cache.KeyOf(cur), Object: cur, Old: old})
		},
		DeleteFunc: func(d handler.Deleted[T]) {
			add(Event[T]{Type: Deleted, Key: d.Key, Object: d.Object, FinalStateUnknown: d.FinalStateUnknown})
		},
	}
}

// background reports whether e is work that can wait behind live
// changes: an object of the initial list, or an update that changes
// nothing (a resync, a relist of an unchanged object).
func background[T cache.Object](e Event[T]) bool {
	switch e.Type {
	case Added:
		return e.Initial
	case Updated:
		return unchanged(e.Old, e.Object)
	}
	return false
}

// work reconciles keys until the queue shuts down or the controller
// stops: a key handed out after that is not started.
func (c *Controller[T]) work(ctx context.Context, q workqueue.TypedRateLimitingInterface[cache.Key]) {
	for {
		key, shutdown := q.Get()
		if shutdown {
			return
		}
		if c.stopping.Load() {
			q.Done(key)
			return
		}
		c.active.Add(1)
		began := time.Now()
		panicked, err := c.reconcile(ctx, key)
		o, after := classify(err, panicked)
		c.stats.observe(o, time.Since(began))
		c.active.Add(-1)
		c.settle(q, key, err, o, after)
		q.Done(key)
	}
}

// reconcile calls the Reconciler, turning a panic into an error.
func (c *Controller[T]) reconcile(ctx context.Context, key cache.Key) (panicked bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			panicked, err = true, fmt.Errorf("%w: %v\n%s", ErrPanic, r, debug.Stack())
		}
	}()
	return false, c.r.Reconcile(ctx, key)
}

// settle forgets a key that succeeded, requeues one that asked for it,
// reports a terminal failure, retries any other failure, or drops the key
// after MaxRetries retries.
func (c *Controller[T]) settle(q workqueue.TypedRateLimitingInterface[cache.Key], key cache.Key, err error, o outcome, after time.Duration) {
	switch o {
	case outcomeSuccess:
		q.Forget(key)
		c.prio.forget(key)
		return
	case outcomeRequeue, outcomeRequeueAfter:
		q.Forget(key) // not a failure: the backoff starts again
		switch {
		case c.stopping.Load():
		case after > 0:
			q.AddAfter(key, after)
		default:
			q.Add(key)
		}
		return
	case outcomeTerminal:
		q.Forget(key)
		c.prio.forget(key)
		c.fail(&KeyError{Key: key, Attempts: q.NumRequeues(key) + 1, Terminal: true, Err: err})
		return
	}
	retries := q.NumRequeues(key)
	if c.opts.MaxRetries > 0 && retries >= c.opts.MaxRetries {
		q.Forget(key)
		c.prio.forget(key)
		c.stats.dropped.Add(1)
		c.fail(&KeyError{Key: key, Attempts: retries + 1, Dropped: true, Err: err})
		return
	}
	c.fail(&KeyError{Key: key, Attempts: retries + 1, Err: err})
	if !c.stopping.Load() {
		q.AddRateLimited(key)
	}
}

// fail records a failed key in Status and reports it.
func (c *Controller[T]) fail(err *KeyError) {
	c.stats.failed(err)
	c.report(err)
}

// report passes err to Options.ErrorHandler, or logs it; a panicking
// ErrorHandler is recovered and logged.
func (c *Controller[T]) report(err error) {
	logger := klog.Background()
	if l := c.logger.Load(); l != nil {
		logger = *l
	}
	if c.opts.ErrorHandler == nil {
		var ke *KeyError
		if errors.As(err, &ke) {
			logger.Error(ke.Err, "reconcile failed", "controller", c.name, "key", ke.Key.String(), "attempts", ke.Attempts, "dropped", ke.Dropped, "terminal", ke.Terminal)
			return
		}
		logger.Error(err, "reconcile controller", "controller", c.name)
		return
	}
	defer func() {
		if r := recover(); r != nil {
			logger.Error(fmt.Errorf("%v", r), "Options.ErrorHandler panicked", "controller", c.name, "handling", err.Error())
		}
	}()
	c.opts.ErrorHandler(err)
}
