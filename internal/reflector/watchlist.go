package reflector

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// errNoEndBookmark: the stream ended before the initial-events-end bookmark.
var errNoEndBookmark = errors.New("streaming list ended before its end bookmark")

// watchList streams the initial state (sendInitialEvents), collects it in a
// private map and, only once the end bookmark arrives, replaces the queue's
// content in one Replace. It returns the still open watch to continue with.
// A stream cut before the bookmark is started over; an error the source
// answers at once is returned so the caller can fall back to LIST.
func (r *Reflector[T]) watchList(ctx context.Context) (source.Watcher[T], error) {
	for ctx.Err() == nil {
		r.mu.Lock()
		rv := r.lastSyncRV
		if r.rvUnavailable {
			rv = ""
		}
		r.mu.Unlock()
		r.watchLists.Add(1)
		if r.synced() {
			r.relists.Add(1)
		}
		send := true
		w, err := r.src.Watch(ctx, metav1.ListOptions{
			ResourceVersion:      rv,
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
			SendInitialEvents:    &send,
			AllowWatchBookmarks:  true,
			TimeoutSeconds:       r.watchTimeout(),
		})
		if err == nil {
			var items []T
			var endRV string
			items, endRV, err = r.collectInitial(ctx, w)
			if err == nil {
				if err := r.queue.Replace(items, endRV); err != nil {
					w.Stop()
					return nil, &WriteError{Op: "replace", Err: err}
				}
				r.setSynced(endRV)
				r.failing.Store(false)
				if r.opts.OnSynced != nil {
					r.opts.OnSynced(endRV)
				}
				return w, nil
			}
			w.Stop()
		}
		switch {
		case ctx.Err() != nil:
			return nil, nil
		case errors.Is(err, errNoEndBookmark), isRetriable(err):
			r.report(ctx, err)
			if !r.sleep(ctx) {
				return nil, nil
			}
		case isExpired(err), isTooLarge(err):
			klog.FromContext(ctx).V(2).Info("streaming list resourceVersion unavailable, retrying from etcd", "err", err)
			r.mu.Lock()
			r.rvUnavailable = true
			r.mu.Unlock()
			if rv == "" {
				// This was already the quorum read (a watch cache behind
				// etcd answers it "too large"): retrying at once would spin.
				r.report(ctx, err)
				if !r.sleep(ctx) {
					return nil, nil
				}
			}
		default:
			return nil, err
		}
	}
	return nil, nil
}

// collectInitial reads the initial events of a streaming list up to the end
// bookmark and returns the objects and the bookmark's resourceVersion.
func (r *Reflector[T]) collectInitial(ctx context.Context, w source.Watcher[T]) ([]T, string, error) {
	state := map[cache.Key]T{}
	var order []cache.Key
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			if errors.Is(err, source.ErrWatchClosed) {
				return nil, "", errNoEndBookmark
			}
			return nil, "", err
		}
		if err := checkObject(ev); err != nil {
			return nil, "", err
		}
		switch ev.Type {
		case watch.Added, watch.Modified:
			k := cache.KeyOf(ev.Object)
			if _, seen := state[k]; !seen {
				order = append(order, k)
			}
			state[k] = ev.Object
		case watch.Deleted:
			delete(state, cache.KeyOf(ev.Object))
		case watch.Bookmark:
			if ev.Object.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
				continue
			}
			items := make([]T, 0, len(state))
			for _, k := range order {
				if obj, ok := state[k]; ok {
					items = append(items, obj)
				}
			}
			return items, ev.Object.GetResourceVersion(), nil
		case watch.Error:
			if ev.Err == nil {
				return nil, "", &source.Error{Phase: source.PhaseWatch, Err: source.ErrMalformed}
			}
			return nil, "", ev.Err
		default:
			return nil, "", &source.Error{Phase: source.PhaseWatch, Err: fmt.Errorf("%w: event type %q", source.ErrMalformed, ev.Type)}
		}
	}
}
