package reflector

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/fifo"
	"github.com/typedinformer/informer/source"
)

// errNoEndBookmark: the stream ended before the initial-events-end bookmark.
var errNoEndBookmark = errors.New("streaming list ended before its end bookmark")

// errNoProgress: the stream stalled before the end bookmark.
var errNoProgress = errors.New("streaming list made no progress")

// streamStall is how long a streaming list may go without an event before
// its end bookmark: a source that never sends the bookmark (a proxy that
// drops it, a fake) is given up on, and LIST is used from then on.
const streamStall = 30 * time.Second

// watchList streams the initial state (sendInitialEvents) and hands it to
// the sink as one list while it arrives; the list ends at the end bookmark,
// and only then does the consumer apply it. It returns the still open watch
// to continue with. A stream cut before the bookmark is started over; an
// error the source answers at once is returned so the caller can fall back
// to LIST.
func (r *Reflector[T]) watchList(ctx context.Context) (source.Watcher[T], error) {
	for ctx.Err() == nil {
		r.mu.Lock()
		rv := r.lastSyncRV
		if r.rvUnavailable || !r.resumable {
			rv = ""
		}
		r.mu.Unlock()
		r.watchLists.Add(1)
		if r.hasListed() {
			r.relists.Add(1)
		}
		send := true
		w, err := r.src.Watch(ctx, r.request(metav1.ListOptions{
			ResourceVersion:      rv,
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
			SendInitialEvents:    &send,
			AllowWatchBookmarks:  true,
			TimeoutSeconds:       r.watchTimeout(),
		}))
		if err == nil {
			var endRV string
			endRV, err = r.streamInitial(ctx, w)
			if err == nil {
				r.setListed(endRV)
				return w, nil
			}
			w.Stop()
		}
		switch {
		case ctx.Err() != nil:
			return nil, nil
		case errors.Is(err, errSinkClosed):
			// Returned, not swallowed: with (nil, nil) the caller would go
			// on to watch without a list.
			return nil, err
		case isRefusal(err):
			return nil, err
		case errors.Is(err, errNoProgress):
			return nil, err // the caller reports it and lists instead
		case errors.Is(err, errNoEndBookmark), isTransient(err):
			r.report(ctx, err)
			if !r.sleep(ctx) {
				return nil, nil
			}
		case needsRelist(err):
			klog.FromContext(ctx).V(2).Info("streaming list resourceVersion unavailable, retrying from etcd", "err", err)
			r.setUnavailable()
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

// streamInitial pushes the initial events of a streaming list up to the end
// bookmark as one list and returns the bookmark's resourceVersion.
func (r *Reflector[T]) streamInitial(ctx context.Context, w source.Watcher[T]) (string, error) {
	if err := r.pushOne(fifo.Delta[T]{Type: fifo.ReplaceStart}); err != nil {
		return "", err
	}
	// A watchdog stops the stream if no event arrives for streamStall.
	var stalled atomic.Bool
	dog := time.AfterFunc(streamStall, func() { stalled.Store(true); w.Stop() })
	defer dog.Stop()
	for {
		ev, err := w.Next(ctx)
		if stalled.Load() {
			return "", fmt.Errorf("%w for %v before its end bookmark; using LIST", errNoProgress, streamStall)
		}
		dog.Reset(streamStall)
		if u, ok := namedUndecodable(err); ok {
			// An object of the list that did not decode: refused in the
			// list, and the stream goes on after it.
			if pushed, err := r.pushUndecodable(u, fifo.Replaced); pushed {
				if err != nil {
					return "", err
				}
				continue
			}
		}
		if err != nil {
			if errors.Is(err, source.ErrWatchClosed) {
				return "", errNoEndBookmark
			}
			return "", err
		}
		if err := checkObject(ev); err != nil {
			return "", err
		}
		var t fifo.DeltaType
		switch ev.Type {
		case watch.Added, watch.Modified:
			t = fifo.Replaced
		case watch.Deleted:
			t = fifo.Deleted // removes the object from the list being built
		case watch.Bookmark:
			if ev.Object.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
				r.heartbeat()
				continue
			}
			rv := ev.Object.GetResourceVersion()
			if err := r.pushOne(fifo.Delta[T]{Type: fifo.ReplaceEnd, ResourceVersion: rv}); err != nil {
				return "", err
			}
			return rv, nil
		default:
			return "", malformedEvent("event type %q", ev.Type)
		}
		d, err := r.prepared(t, ev.Object)
		if err != nil {
			return "", err
		}
		if err := r.pushOne(d); err != nil {
			return "", err
		}
	}
}
