package reflector

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// Queue is what the reflector writes to: a fifo.Queue, or anything with the
// same write methods.
type Queue[T cache.Object] interface {
	Add(obj T) error
	Update(obj T) error
	Delete(obj T) error
	Replace(list []T, resourceVersion string) error
}

// Defaults of [Options].
const (
	DefaultPageSize        = 500
	DefaultMinWatchTimeout = 5 * time.Minute
	DefaultBackoffInit     = 800 * time.Millisecond
	DefaultBackoffMax      = 30 * time.Second
	DefaultBackoffReset    = 2 * time.Minute
)

// Options configures [New].
type Options struct {
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
	// full jitter, reset to 800ms every DefaultBackoffReset.
	Backoff *wait.Backoff
	// OnError receives every error the reflector recovers from. Default:
	// errors are only logged.
	OnError func(error)
	// OnSynced is called after each successful Replace, with its
	// resourceVersion.
	OnSynced func(resourceVersion string)
	// OnRecovered is called when a watch delivers an event again after an
	// error was reported: the cache is current again without a relist.
	OnRecovered func()
}

// Stats counts what the reflector did. It is safe to read while the
// reflector runs.
type Stats struct {
	Lists, Watches, WatchLists, Relists int
	Events, Bookmarks, Errors           int
}

// Reflector lists and watches a source into a queue.
type Reflector[T cache.Object] struct {
	src   source.Source[T]
	queue Queue[T]
	opts  Options
	delay wait.DelayFunc

	mu            sync.Mutex
	lastSyncRV    string
	rvUnavailable bool // the last RV was refused as expired or too large
	noWatchList   bool // the source refused a streaming list

	lists, watches, watchLists, relists, events, bookmarks, errs atomic.Int64
	failing                                                      atomic.Bool // an error was reported and not yet followed by an event
}

// New returns a reflector that feeds queue from src.
func New[T cache.Object](src source.Source[T], queue Queue[T], opts Options) *Reflector[T] {
	if opts.Name == "" {
		opts.Name = "reflector"
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.MinWatchTimeout <= 0 {
		opts.MinWatchTimeout = DefaultMinWatchTimeout
	}
	b := wait.Backoff{Duration: DefaultBackoffInit, Cap: DefaultBackoffMax, Factor: 2, Jitter: 1, Steps: 64}
	if opts.Backoff != nil {
		b = *opts.Backoff
	}
	return &Reflector[T]{
		src: src, queue: queue, opts: opts,
		delay:       b.DelayWithReset(clock.RealClock{}, DefaultBackoffReset),
		noWatchList: opts.NoWatchList,
	}
}

// LastSyncResourceVersion is the resourceVersion of the last list or event
// handed to the queue.
func (r *Reflector[T]) LastSyncResourceVersion() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastSyncRV
}

// Stats returns a copy of the counters.
func (r *Reflector[T]) Stats() Stats {
	return Stats{
		Lists: int(r.lists.Load()), Watches: int(r.watches.Load()), WatchLists: int(r.watchLists.Load()),
		Relists: int(r.relists.Load()), Events: int(r.events.Load()), Bookmarks: int(r.bookmarks.Load()),
		Errors: int(r.errs.Load()),
	}
}

// synced reports whether a list has succeeded before.
func (r *Reflector[T]) synced() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastSyncRV != ""
}

// Run lists and watches until ctx ends, then returns nil. Errors are
// reported to Options.OnError and retried with backoff.
func (r *Reflector[T]) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("reflector", r.opts.Name)
	ctx = klog.NewContext(ctx, logger)
	for ctx.Err() == nil {
		if err := r.listAndWatch(ctx); err != nil && ctx.Err() == nil {
			r.report(ctx, err)
		}
		if !r.sleep(ctx) {
			break
		}
	}
	return nil
}

// sleep waits one backoff step; false if ctx ended first.
func (r *Reflector[T]) sleep(ctx context.Context) bool {
	t := time.NewTimer(r.delay())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (r *Reflector[T]) report(ctx context.Context, err error) {
	r.errs.Add(1)
	r.failing.Store(true)
	klog.FromContext(ctx).V(2).Info("list/watch error", "err", err)
	if r.opts.OnError != nil {
		r.opts.OnError(err)
	}
}

func (r *Reflector[T]) watchTimeout() *int64 {
	min := r.opts.MinWatchTimeout.Seconds()
	s := int64(min + rand.Float64()*min)
	return &s
}

func (r *Reflector[T]) setSynced(rv string) {
	r.mu.Lock()
	r.lastSyncRV = rv
	r.rvUnavailable = false
	r.mu.Unlock()
}

func (r *Reflector[T]) setRV(rv string) {
	if rv == "" {
		return
	}
	r.mu.Lock()
	r.lastSyncRV = rv
	r.mu.Unlock()
}

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
		case ctx.Err() != nil:
			return nil
		case err != nil && isWriteError(err):
			return err
		case err != nil:
			klog.FromContext(ctx).V(3).Info("streaming list failed, falling back to LIST", "err", err)
			if refusesWatchList(err) {
				r.mu.Lock()
				r.noWatchList = true
				r.mu.Unlock()
			}
			if !refusesWatchList(err) && !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) && !apierrors.IsNotFound(err) {
				// A bad frame or a server error is an error, not a refusal;
				// a refusal, an RBAC error or a missing resource (a CRD not
				// installed yet) the LIST below reports itself.
				r.report(ctx, err)
			}
			w = nil
			streaming = false
		}
	}
	if !streaming {
		if err := r.list(ctx); err != nil {
			return err
		}
	}
	return r.watch(ctx, w)
}
