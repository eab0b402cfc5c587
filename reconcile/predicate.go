package reconcile

import (
	"maps"

	"github.com/typedinformer/informer/cache"
)

// EventType says what happened to an object.
type EventType uint8

// Event types.
const (
	// Added: an object new to the controller (Event.Initial says whether
	// the initial list brought it).
	Added EventType = iota + 1
	// Updated: an object changed, or was resynced or relisted unchanged
	// (then Old and Object have the same resourceVersion).
	Updated
	// Deleted: an object is gone.
	Deleted
)

// String returns "Added", "Updated" or "Deleted".
func (t EventType) String() string {
	switch t {
	case Added:
		return "Added"
	case Updated:
		return "Updated"
	case Deleted:
		return "Deleted"
	}
	return "EventType(?)"
}

// Event is one change a Predicate judges.
type Event[T cache.Object] struct {
	// Type is what happened.
	Type EventType
	// Key is the object's key; it is always set.
	Key cache.Key
	// Object is the added or updated object, or the deleted object's last
	// known state (the zero T if nothing was known). Shared with the
	// cache: never modify it.
	Object T
	// Old is the object before an update; the zero T otherwise.
	Old T
	// Initial is set for an Added object of the initial list.
	Initial bool
	// FinalStateUnknown is set for a deletion inferred from a relist.
	FinalStateUnknown bool
}

// Predicate reports whether a change should enqueue its key. It runs on
// the informer's handler goroutine for the controller, so it must be fast
// and must not block.
type Predicate[T cache.Object] func(e Event[T]) bool

// GenerationChanged passes an update only if metadata.generation changed,
// that is, the object's spec (for most kinds) did; status-only updates,
// resyncs and relists are filtered out. Adds and deletes pass. For a kind
// whose objects have no generation (both 0) every update passes, since
// nothing else can tell a spec change.
func GenerationChanged[T cache.Object]() Predicate[T] {
	return func(e Event[T]) bool {
		if e.Type != Updated {
			return true
		}
		og, ng := e.Old.GetGeneration(), e.Object.GetGeneration()
		return og != ng || (og == 0 && ng == 0)
	}
}

// LabelsChanged passes an update only if the object's labels changed.
// Adds and deletes pass.
func LabelsChanged[T cache.Object]() Predicate[T] {
	return func(e Event[T]) bool {
		if e.Type != Updated {
			return true
		}
		return !maps.Equal(e.Old.GetLabels(), e.Object.GetLabels())
	}
}

// IgnoreResync filters out updates that change nothing: old and new are
// the same object, or have the same (non-empty) resourceVersion, as on a
// resync (typed.Options.ResyncPeriod) or a relist of an unchanged object.
// Adds, deletes and real updates pass.
func IgnoreResync[T cache.Object]() Predicate[T] {
	return func(e Event[T]) bool {
		return e.Type != Updated || !unchanged(e.Old, e.Object)
	}
}

// unchanged reports whether an update from old to cur changes nothing.
func unchanged[T cache.Object](old, cur T) bool {
	if old == cur {
		return true
	}
	rv := cur.GetResourceVersion()
	return rv != "" && rv == old.GetResourceVersion()
}

// Any passes a change that at least one of ps passes, for example the
// updates that change either the generation or the labels. With no
// predicates it passes nothing.
func Any[T cache.Object](ps ...Predicate[T]) Predicate[T] {
	ps = append([]Predicate[T](nil), ps...)
	return func(e Event[T]) bool {
		for _, p := range ps {
			if p != nil && p(e) {
				return true
			}
		}
		return false
	}
}
