package clientgo

import (
	"context"

	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/typed"
)

// eventHandler is a typed handler that calls a client-go handler.
type eventHandler[T cache.Object] struct {
	h clientcache.ResourceEventHandler
}

// OnAdd passes obj on.
func (e eventHandler[T]) OnAdd(obj T, isInInitialList bool) { e.h.OnAdd(obj, isInInitialList) }

// OnUpdate passes both objects on.
func (e eventHandler[T]) OnUpdate(oldObj, newObj T) { e.h.OnUpdate(oldObj, newObj) }

// OnDelete passes the deleted object on, or, for a deletion inferred from a
// relist, the tombstone client-go gives there: the key and the last state
// the cache held. A deletion of an object nothing is known of (the zero T)
// is a tombstone without Obj, never a nil object.
func (e eventHandler[T]) OnDelete(d handler.Deleted[T]) {
	var zero T
	if !d.FinalStateUnknown && d.Object != zero {
		e.h.OnDelete(d.Object)
		return
	}
	tomb := clientcache.DeletedFinalStateUnknown{Key: d.Key.String()}
	if d.Object != zero {
		tomb.Obj = d.Object
	}
	e.h.OnDelete(tomb)
}

// registration is the client-go handle of a handler added through a view.
type registration[T cache.Object] struct {
	view    *view[T]
	reg     *typed.Registration
	checker syncChecker
}

// HasSynced reports whether the handler has been called for every object
// of the initial list (or of the cache when it was added).
func (r *registration[T]) HasSynced() bool { return r.reg.HasSynced() }

// HasSyncedChecker returns a DoneChecker whose channel is closed once
// HasSynced is true.
func (r *registration[T]) HasSyncedChecker() clientcache.DoneChecker { return r.checker }

// controller is what GetController returns.
type controller[T cache.Object] struct{ v *view[T] }

// Run does nothing: the informer runs through the view's Run.
func (controller[T]) Run(<-chan struct{}) {}

// RunWithContext does nothing: the informer runs through the view's Run.
func (controller[T]) RunWithContext(context.Context) {}

// HasSynced is the informer's HasSynced.
func (c controller[T]) HasSynced() bool { return c.v.HasSynced() }

// HasSyncedChecker is the view's HasSyncedChecker.
func (c controller[T]) HasSyncedChecker() clientcache.DoneChecker { return c.v.checker }

// LastSyncResourceVersion is the informer's LastSyncResourceVersion.
func (c controller[T]) LastSyncResourceVersion() string { return c.v.LastSyncResourceVersion() }

// syncChecker is a client-go DoneChecker over a typed sync channel: no
// goroutine, nothing to stop.
type syncChecker struct {
	name   string
	synced <-chan struct{}
}

// Name says what the checker waits for.
func (c syncChecker) Name() string { return c.name }

// Done returns a channel closed once the informer (or the handler) has
// synced; it is never closed for one that stopped, or was removed, before.
func (c syncChecker) Done() <-chan struct{} { return c.synced }
