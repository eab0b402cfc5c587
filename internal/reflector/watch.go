package reflector

import (
	"context"
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
	"github.com/typedinformer/informer/source"
)

// watch consumes w (or new watches from the last synced version) until a
// failure that needs a relist, which it returns (nil for an expired or too
// large version), or ctx ends (nil). Everything else is retried from the
// same resourceVersion after a backoff: nothing was lost, so no relist.
func (r *Reflector[T]) watch(ctx context.Context, w source.Watcher[T]) error {
	defer func() {
		if w != nil {
			w.Stop()
		}
	}()
	shorts := 0   // watches in a row that ended within shortWatch
	lastBad := "" // the last bad frame or object, and the version it came after
	for resume := false; ctx.Err() == nil; resume = true {
		start := time.Now()
		if w == nil {
			if resume {
				r.restarts.Add(1)
			}
			var err error
			w, err = r.startWatch(ctx)
			switch {
			case ctx.Err() != nil:
				return nil
			case err != nil && needsRelist(err) && errors.Is(err, source.ErrParked):
				return errRelistNow // a source served again after a park: list anew, at once
			case err != nil && needsRelist(err):
				return r.unavailable(ctx, err)
			case err != nil:
				r.report(ctx, err)
				if errors.Is(err, source.ErrParked) {
					r.backoff = r.initial // not a failure of the source: it waits, and serves again from scratch
					continue
				}
				if !r.sleep(ctx) {
					return nil
				}
				continue
			}
		}
		r.healthy() // the watch is established
		n, err := r.consume(ctx, w)
		w.Stop()
		w = nil
		switch {
		case ctx.Err() != nil:
			return nil
		case r.movePending():
			return nil // Run takes the move, then lists the new shard
		case r.takeRelist():
			klog.FromContext(ctx).V(2).Info("relist requested; relisting")
			return nil
		case errors.Is(err, r.opts.ErrWatchIdle):
			// A stalled connection, not an overloaded server: watch again
			// at once from the same resourceVersion (the stalled watch
			// lasted the idle timeout, so this is no tight loop).
			r.idle.Add(1)
			r.report(ctx, err)
		case err != nil && (isRefusal(err) || errors.Is(err, errSinkClosed)):
			return err
		case err != nil && needsRelist(err):
			return r.unavailable(ctx, err)
		case err != nil && !r.canResume():
			// No resume point (see below): Run reports the error and
			// relists after a backoff.
			return err
		case err != nil && isBadContent(err) && badKey(r.LastSyncResourceVersion(), err) == lastBad:
			// The same bad object or frame again after the same version:
			// the server replays it to every watch from there, and only a
			// relist (after a backoff, by Run) gets past it once it is
			// fixed or deleted.
			return err
		case err != nil:
			if isBadContent(err) {
				lastBad = badKey(r.LastSyncResourceVersion(), err)
			}
			r.report(ctx, err)
			if !r.sleep(ctx) {
				return nil
			}
		case !r.canResume():
			// The last list had no resourceVersion: a watch from "" sends
			// the whole state again as ADDED events and no deletion for
			// what vanished meanwhile, so only a relist can go on.
			klog.FromContext(ctx).V(3).Info("watch ended and cannot resume without a resourceVersion; relisting")
			return nil
		case time.Since(start) >= shortWatch:
			shorts = 0
			r.backoff = r.initial // a watch that lasted: the source is healthy
		default:
			// A watch that ended at once is reopened at once only if it
			// delivered something and the one before it lasted; otherwise
			// after a backoff, so a server that keeps closing watches,
			// whatever they deliver, causes no tight loop.
			shorts++
			if n == 0 || shorts > 1 {
				klog.FromContext(ctx).V(3).Info("watches end at once; backing off before re-watching", "events", n, "inARow", shorts)
				if !r.sleep(ctx) {
					return nil
				}
			}
		}
	}
	return nil
}

// startWatch opens a watch from the last synced version.
func (r *Reflector[T]) startWatch(ctx context.Context) (source.Watcher[T], error) {
	r.watches.Add(1)
	return r.src.Watch(ctx, r.request(metav1.ListOptions{
		ResourceVersion:     r.LastSyncResourceVersion(),
		TimeoutSeconds:      r.watchTimeout(),
		AllowWatchBookmarks: true,
	}))
}

// unavailable handles a resourceVersion the server no longer (410) or not
// yet (too large) has: the relist that follows reads from etcd.
func (r *Reflector[T]) unavailable(ctx context.Context, err error) error {
	klog.FromContext(ctx).V(2).Info("watch resourceVersion unavailable, relisting", "err", err)
	if isTooLarge(err) {
		r.setUnavailable()
	}
	return nil
}

func (r *Reflector[T]) canResume() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resumable
}

// consume hands every event of w to the sink until the stream ends (nil),
// fails, or an object is refused (that error). It returns how many events
// (bookmarks included) it took.
func (r *Reflector[T]) consume(ctx context.Context, w source.Watcher[T]) (int, error) {
	if !r.setCurrent(w) {
		return 0, nil // Relist was called
	}
	defer r.setCurrent(nil)
	dog := r.newWatchdog(w.Stop)
	defer dog.stop()
	for n := 0; ; n++ {
		ev, err := w.Next(ctx)
		if u, ok := namedUndecodable(err); ok && ctx.Err() == nil {
			// The event was read, its object did not decode: the stream
			// goes on after it.
			dog.progress()
			if err := r.applyUndecodable(u); err != nil {
				return n, err
			}
			continue
		}
		if err != nil {
			if err := dog.err(r.LastSyncResourceVersion()); err != nil && ctx.Err() == nil {
				return n, err
			}
			if errors.Is(err, source.ErrWatchClosed) || ctx.Err() != nil {
				return n, nil
			}
			return n, err
		}
		dog.progress()
		if err := r.apply(ev); err != nil {
			return n, err
		}
	}
}

// applyUndecodable hands the sink the refusal, or the deletion by key, for
// a watch event whose object did not decode (u), and advances the last
// synced resourceVersion past it. An event that carries no change (a
// bookmark) is an error of the stream.
func (r *Reflector[T]) applyUndecodable(u *source.UndecodableError) error {
	pushed, err := r.pushUndecodable(u, fifo.Updated)
	switch {
	case !pushed:
		return &source.Error{Phase: source.PhaseWatch, Err: u}
	case err != nil:
		return err
	}
	r.events.Add(1)
	r.advance(u.ResourceVersion)
	return nil
}

// apply hands one watch event to the sink and advances the last synced
// resourceVersion only once the sink took it.
func (r *Reflector[T]) apply(ev source.Event[T]) error {
	if err := checkObject(ev); err != nil {
		return err
	}
	var d fifo.Delta[T]
	switch ev.Type {
	case watch.Added:
		d.Type = fifo.Added
	case watch.Modified:
		d.Type = fifo.Updated
	case watch.Deleted:
		d.Type = fifo.Deleted
	case watch.Bookmark:
		r.bookmarks.Add(1)
		r.heartbeat()
		rv := progressOf(ev)
		if rv != "" {
			if err := r.pushOne(fifo.Delta[T]{Type: fifo.Bookmark, ResourceVersion: rv}); err != nil {
				return err
			}
		}
		r.advance(rv)
		return nil
	default:
		return malformedEvent("event type %q", ev.Type)
	}
	if !r.inShard(ev.Object) {
		// Outside the shard: only its version moves on, so that a wait
		// for a write's resourceVersion sees the cache pass it.
		rv := progressOf(ev)
		if rv != "" {
			if err := r.pushOne(fifo.Delta[T]{Type: fifo.Bookmark, ResourceVersion: rv}); err != nil {
				return err
			}
		}
		r.advance(rv)
		return nil
	}
	d, err := r.prepared(d.Type, ev.Object)
	if err != nil {
		return err
	}
	var zero T
	if d.Type == fifo.Deleted && d.Object == zero {
		// A deletion by key alone (Prepare could not take its final
		// state): the delta carries the event's version.
		d.ResourceVersion = ev.Object.GetResourceVersion()
	}
	d.Progress = ev.Progress
	if err := r.pushOne(d); err != nil {
		return err
	}
	r.events.Add(1)
	r.advance(progressOf(ev))
	return nil
}

// progressOf is the version the stream has come to with ev: its Progress
// if a merged source set one, else its object's.
func progressOf[T cache.Object](ev source.Event[T]) string {
	if ev.Progress != "" {
		return ev.Progress
	}
	return ev.Object.GetResourceVersion()
}

// checkObject rejects an event that must carry an object but carries the
// zero T (a source that breaks the Event contract): a malformed frame, so
// the watch is restarted instead of the reflector dereferencing nil.
func checkObject[T cache.Object](ev source.Event[T]) error {
	var zero T
	if ev.Object == zero {
		return malformedEvent("%s event without an object", ev.Type)
	}
	return nil
}
