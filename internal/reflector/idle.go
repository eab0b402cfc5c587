package reflector

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
	"github.com/typedinformer/informer/source"
)

// prepared is what Prepare made of obj for a delta of type t: the delta
// to push, or, for an object Prepare refused, a Refused delta in its place
// when Options.PushRefused lets the reflector go on past it, else the
// error that stops the reflector before the object.
func (r *Reflector[T]) prepared(t fifo.DeltaType, obj T) (fifo.Delta[T], error) {
	e, err := r.opts.Prepare(t, obj)
	if err == nil {
		return fifo.Delta[T]{Type: t, Entry: e}, nil
	}
	var zero T
	if obj == zero || obj.GetName() == "" {
		return r.nameless(t, err)
	}
	if !r.opts.PushRefused {
		return fifo.Delta[T]{}, &refusal{err: err}
	}
	return fifo.Delta[T]{Type: fifo.Refused, Entry: cache.Entry[T]{Key: cache.KeyOf(obj)}, ResourceVersion: obj.GetResourceVersion(), Err: err}, nil
}

// nameless is the delta, or the error, for a refused object without a
// name (or a nil one), met as a delta of type t: with Options.PushRefused
// and in a list (t is Replaced), a Refused delta without a key, which the
// sink reports, so that the rest of the list is taken (relisting would
// meet it again); anywhere else the error that stops the reflector before
// it.
func (r *Reflector[T]) nameless(t fifo.DeltaType, err error) (fifo.Delta[T], error) {
	if !r.opts.PushRefused || t != fifo.Replaced {
		return fifo.Delta[T]{}, &refusal{err: err}
	}
	return fifo.Delta[T]{Type: fifo.Refused, Err: err}, nil
}

// undecodable is the delta for an object the source read but could not
// decode (u), met as a delta of type t: with Options.PushRefused, a
// deletion by key for Deleted, else a Refused delta with u as its error,
// so that the sink quarantines the object as one Prepare refused;
// without it, the error that stops the reflector before the object. One
// without a name goes as nameless says.
func (r *Reflector[T]) undecodable(t fifo.DeltaType, u *source.UndecodableError) (fifo.Delta[T], error) {
	if u.Name == "" {
		return r.nameless(t, u)
	}
	if !r.opts.PushRefused {
		return fifo.Delta[T]{}, &refusal{err: u}
	}
	e := cache.Entry[T]{Key: u.Key()}
	if t == fifo.Deleted {
		return fifo.Delta[T]{Type: fifo.Deleted, Entry: e, ResourceVersion: u.ResourceVersion}, nil
	}
	return fifo.Delta[T]{Type: fifo.Refused, Entry: e, ResourceVersion: u.ResourceVersion, Err: u}, nil
}

// pushUndecodable hands the sink the delta for u, an object that did not
// decode in an event: changed (Updated in a watch, Replaced in a
// streaming list) for ADDED and MODIFIED, Deleted for DELETED (see
// undecodable). It returns false, pushing nothing, for an event that
// carries no change.
func (r *Reflector[T]) pushUndecodable(u *source.UndecodableError, changed fifo.DeltaType) (bool, error) {
	t := changed
	switch u.Event {
	case watch.Added, watch.Modified:
	case watch.Deleted:
		t = fifo.Deleted
	default:
		return false, nil
	}
	d, err := r.undecodable(t, u)
	if err != nil {
		return true, err
	}
	return true, r.pushOne(d)
}

// Relist makes the reflector stop its watch and list again, with a quorum
// read (resourceVersion ""), after the usual short backoff. The informer's
// consistency check calls it to repair a cache that diverged from the
// server. It returns at once; calling it again before the relist changes
// nothing.
func (r *Reflector[T]) Relist() {
	r.mu.Lock()
	r.relistWanted, r.rvUnavailable = true, true
	w := r.current
	r.mu.Unlock()
	if w != nil {
		w.Stop()
	}
}

// CheckRequest returns opts as the reflector sends its own lists (with the
// shard selector and Options.Tweak), for a check that compares what the
// reflector lists with the cache.
func (r *Reflector[T]) CheckRequest(opts metav1.ListOptions) metav1.ListOptions {
	return r.request(opts)
}

// setCurrent records the watch being consumed, so that Relist can stop it;
// it returns false if a relist is wanted: the watch must not be consumed.
func (r *Reflector[T]) setCurrent(w source.Watcher[T]) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.current = w
	return w == nil || (!r.relistWanted && r.pending == nil)
}

// takeRelist reports, and clears, a relist asked for by Relist.
func (r *Reflector[T]) takeRelist() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	wanted := r.relistWanted
	r.relistWanted = false
	return wanted
}

// heartbeat records a periodic bookmark: the source sends them, so a watch
// that goes quiet for the idle timeout is stalled rather than merely idle.
// An API server's watch cache sends one about every minute; with
// --watch-cache=false it sends none (only the end bookmark of a streaming
// list, which does not count).
func (r *Reflector[T]) heartbeat() {
	if !r.beating.Load() {
		r.beating.Store(true)
	}
}

// watchdog stops a watch that delivered nothing for the idle timeout, once
// the source has shown that it sends periodic bookmarks. The watch's
// goroutine calls progress for every event (one atomic add); a timer
// checks every quarter of the timeout, so a stall is found between the
// timeout and 1.25 times it after the last event.
type watchdog struct {
	timeout, tick time.Duration
	idleErr       error // Options.ErrWatchIdle
	beating       *atomic.Bool
	stopWatch     func()
	seen          atomic.Int64 // events so far
	stalled       atomic.Bool

	mu     sync.Mutex
	t      *time.Timer
	done   bool
	last   int64         // seen at the last check
	quiet  time.Duration // since seen last moved, in ticks
	quietT time.Time     // for the error's message
}

// newWatchdog starts a watchdog over a watch stopped by stop; nil (which
// does nothing) if the timeout is not positive.
func (r *Reflector[T]) newWatchdog(stop func()) *watchdog {
	if r.opts.WatchIdleTimeout <= 0 {
		return nil
	}
	d := &watchdog{timeout: r.opts.WatchIdleTimeout, tick: r.opts.WatchIdleTimeout / 4, idleErr: r.opts.ErrWatchIdle, beating: &r.beating, stopWatch: stop}
	d.mu.Lock() // the first check waits for d.t
	defer d.mu.Unlock()
	d.quietT = time.Now()
	d.t = time.AfterFunc(d.tick, d.check)
	return d
}

func (d *watchdog) progress() {
	if d != nil {
		d.seen.Add(1)
	}
}

func (d *watchdog) check() {
	d.mu.Lock()
	if d.done {
		d.mu.Unlock()
		return
	}
	if n := d.seen.Load(); n != d.last {
		d.last, d.quiet, d.quietT = n, 0, time.Now()
	} else if d.beating.Load() {
		d.quiet += d.tick
		if d.quiet >= d.timeout {
			d.stalled.Store(true)
			d.done = true
			d.mu.Unlock()
			d.stopWatch()
			return
		}
	}
	d.t.Reset(d.tick)
	d.mu.Unlock()
}

// stop ends the watchdog; no check runs after it returns.
func (d *watchdog) stop() {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.done = true
	d.t.Stop()
	d.mu.Unlock()
}

// err is the error for a stall the watchdog found, or nil.
func (d *watchdog) err(rv string) error {
	if d == nil || !d.stalled.Load() {
		return nil
	}
	d.mu.Lock()
	since := d.quietT
	d.mu.Unlock()
	return &source.Error{Phase: source.PhaseWatch, Err: fmt.Errorf("%w: nothing for %v (limit %v) after resourceVersion %q; watching again from it",
		d.idleErr, time.Since(since).Round(time.Millisecond), d.timeout, rv)}
}
