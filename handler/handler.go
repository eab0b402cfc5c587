package handler

import (
	"github.com/typedinformer/informer/cache"
)

// Handler receives the changes to an informer's objects. An informer calls
// each Handler from one goroutine of its own, so calls to one Handler never
// overlap and arrive in order. Objects are shared with the cache and other
// handlers: never mutate them; DeepCopy first.
type Handler[T cache.Object] interface {
	// OnAdd is called for an object new to the handler. isInInitialList is
	// true for the objects of the initial list (or, for a handler added
	// later, of the cache's content when it was added).
	OnAdd(obj T, isInInitialList bool)
	// OnUpdate is called when an object changed, and on each resync (then
	// oldObj == newObj), and for every object of a relist that was already
	// known. Both objects always have the same UID: an object replaced by
	// another of the same name is an OnDelete and an OnAdd (see package
	// typed).
	OnUpdate(oldObj, newObj T)
	// OnDelete is called when an object is gone.
	OnDelete(d Deleted[T])
}

// Deleted describes a deletion.
type Deleted[T cache.Object] struct {
	// Object is the deleted object as the server sent it, or, when
	// FinalStateUnknown is set, the last state the cache held. It is the
	// zero T only when nothing at all was known about the object.
	Object T
	// Key is the deleted object's key; it is always set.
	Key cache.Key
	// FinalStateUnknown is set when the deletion was inferred from a relist
	// that no longer had the object: the deletion happened while the watch
	// was down, and Object may be older than the object's last state.
	FinalStateUnknown bool
	// MovedOut is set when the object was not deleted but left the
	// informer's shard (package sharding moves a replica's informer to
	// another range): another replica handles it now. Drop what is kept
	// for it; do not act on it as gone. A MovedOut deletion may come for an
	// object whose Add the move overtook (the handler never had it).
	MovedOut bool
}

// Funcs is a Handler built from functions; nil functions are skipped.
type Funcs[T cache.Object] struct {
	// AddFunc is called by OnAdd.
	AddFunc func(obj T, isInInitialList bool)
	// UpdateFunc is called by OnUpdate.
	UpdateFunc func(oldObj, newObj T)
	// DeleteFunc is called by OnDelete.
	DeleteFunc func(d Deleted[T])
}

// OnAdd calls AddFunc if set.
func (f Funcs[T]) OnAdd(obj T, isInInitialList bool) {
	if f.AddFunc != nil {
		f.AddFunc(obj, isInInitialList)
	}
}

// OnUpdate calls UpdateFunc if set.
func (f Funcs[T]) OnUpdate(oldObj, newObj T) {
	if f.UpdateFunc != nil {
		f.UpdateFunc(oldObj, newObj)
	}
}

// OnDelete calls DeleteFunc if set.
func (f Funcs[T]) OnDelete(d Deleted[T]) {
	if f.DeleteFunc != nil {
		f.DeleteFunc(d)
	}
}

// Filter passes to Handler only the objects Predicate accepts, and turns
// transitions across the predicate into adds and deletes, as client-go's
// FilteringResourceEventHandler does: an update from an accepted to a
// rejected object is a delete, the reverse an add. A nil Predicate accepts
// everything; a nil Handler receives nothing.
type Filter[T cache.Object] struct {
	// Predicate accepts the objects Handler gets.
	Predicate func(obj T) bool
	// Handler receives the accepted objects.
	Handler Handler[T]
}

func (f Filter[T]) accepts(obj T) bool { return f.Predicate == nil || f.Predicate(obj) }

// OnAdd forwards accepted objects.
func (f Filter[T]) OnAdd(obj T, isInInitialList bool) {
	if f.Handler != nil && f.accepts(obj) {
		f.Handler.OnAdd(obj, isInInitialList)
	}
}

// OnUpdate forwards, or converts into an add or a delete.
func (f Filter[T]) OnUpdate(oldObj, newObj T) {
	if f.Handler == nil {
		return
	}
	was, is := f.accepts(oldObj), f.accepts(newObj)
	switch {
	case was && is:
		f.Handler.OnUpdate(oldObj, newObj)
	case !was && is:
		f.Handler.OnAdd(newObj, false)
	case was && !is:
		f.Handler.OnDelete(Deleted[T]{Object: oldObj, Key: cache.KeyOf(oldObj)})
	}
}

// OnDelete forwards deletions of accepted objects; a deletion whose object
// is unknown is forwarded, since the handler may have had it.
func (f Filter[T]) OnDelete(d Deleted[T]) {
	var zero T
	if f.Handler != nil && (d.Object == zero || f.accepts(d.Object)) {
		f.Handler.OnDelete(d)
	}
}
