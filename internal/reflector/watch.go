package reflector

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// shortWatch is how long a watch that delivered nothing must have lasted for
// an immediate re-watch; a shorter one is retried after a backoff so that a
// server that closes every watch at once does not cause a tight loop.
const shortWatch = time.Second

// watch consumes w (or new watches from the last synced version) until a
// failure that needs a relist, which it returns, or ctx ends (nil).
func (r *Reflector[T]) watch(ctx context.Context, w source.Watcher[T]) error {
	defer func() {
		if w != nil {
			w.Stop()
		}
	}()
	for ctx.Err() == nil {
		start := time.Now()
		if w == nil {
			var err error
			r.watches.Add(1)
			w, err = r.src.Watch(ctx, metav1.ListOptions{
				ResourceVersion:     r.LastSyncResourceVersion(),
				TimeoutSeconds:      r.watchTimeout(),
				AllowWatchBookmarks: true,
			})
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if isRetriable(err) {
					r.report(ctx, err)
					if !r.sleep(ctx) {
						return nil
					}
					continue
				}
				return err
			}
		}
		n, err := r.consume(ctx, w)
		w.Stop()
		w = nil
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
			if n == 0 && time.Since(start) < shortWatch {
				klog.FromContext(ctx).V(3).Info("watch closed at once; backing off before re-watching")
				if !r.sleep(ctx) {
					return nil
				}
			}
			continue // ended normally (timeout, cut): re-watch from the last RV
		case isExpired(err), isTooLarge(err):
			klog.FromContext(ctx).V(2).Info("watch resourceVersion unavailable, relisting", "err", err)
			if isTooLarge(err) {
				r.mu.Lock()
				r.rvUnavailable = true
				r.mu.Unlock()
			}
			return nil
		case apierrors.IsTooManyRequests(err), apierrors.IsInternalError(err), isMalformed(err):
			// Retry the watch from the last good resourceVersion; nothing
			// was lost, so no relist.
			r.report(ctx, err)
			if !r.sleep(ctx) {
				return nil
			}
			continue
		default:
			return err
		}
	}
	return nil
}

// consume hands every event of w to the queue until the stream ends (nil),
// an error event arrives or a queue write fails (that error). It returns the
// number of events handled.
func (r *Reflector[T]) consume(ctx context.Context, w source.Watcher[T]) (int, error) {
	n := 0
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			if errors.Is(err, source.ErrWatchClosed) || ctx.Err() != nil {
				return n, nil
			}
			return n, err
		}
		n++
		if err := r.apply(ev); err != nil {
			return n, err
		}
	}
}

// apply hands one watch event to the queue and advances the last synced
// resourceVersion only if the queue took it.
func (r *Reflector[T]) apply(ev source.Event[T]) error {
	if err := checkObject(ev); err != nil {
		return err
	}
	var err error
	switch ev.Type {
	case watch.Added:
		err = r.queue.Add(ev.Object)
	case watch.Modified:
		err = r.queue.Update(ev.Object)
	case watch.Deleted:
		err = r.queue.Delete(ev.Object)
	case watch.Bookmark:
		r.bookmarks.Add(1)
	case watch.Error:
		if ev.Err == nil {
			return &source.Error{Phase: source.PhaseWatch, Err: source.ErrMalformed}
		}
		return ev.Err
	default:
		return &source.Error{Phase: source.PhaseWatch, Err: source.ErrMalformed}
	}
	if err != nil {
		return &WriteError{Op: string(ev.Type), Err: err}
	}
	if ev.Type != watch.Bookmark {
		r.events.Add(1)
	}
	r.setRV(ev.Object.GetResourceVersion())
	if r.failing.Load() && r.failing.CompareAndSwap(true, false) && r.opts.OnRecovered != nil {
		r.opts.OnRecovered()
	}
	return nil
}

// checkObject rejects an event that must carry an object but carries the
// zero T (a source that breaks the Event contract): a malformed frame, so
// the watch is restarted instead of the reflector dereferencing nil.
func checkObject[T cache.Object](ev source.Event[T]) error {
	var zero T
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		if ev.Object == zero {
			return &source.Error{Phase: source.PhaseWatch, Err: fmt.Errorf("%w: %w: %s event without an object", source.ErrMalformed, cache.ErrNilObject, ev.Type)}
		}
	}
	return nil
}
