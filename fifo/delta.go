package fifo

import (
	"iter"
	"strconv"

	"github.com/typedinformer/informer/cache"
)

// DeltaType is the kind of change a [Delta] carries.
type DeltaType uint8

// The kinds of change.
const (
	// Added: the object was created (a watch ADDED event).
	Added DeltaType = iota + 1
	// Updated: the object was modified (a watch MODIFIED event).
	Updated
	// Deleted: the object was deleted. With FinalStateUnknown set, the
	// deletion was inferred from a list that no longer had the object.
	Deleted
	// Replaced: the object was in a full list (Replace).
	Replaced
	// Sync: a periodic resync of an object already known to the consumer.
	Sync
)

// String returns the client-go name of the type ("Added", "Updated", ...).
func (t DeltaType) String() string {
	switch t {
	case Added:
		return "Added"
	case Updated:
		return "Updated"
	case Deleted:
		return "Deleted"
	case Replaced:
		return "Replaced"
	case Sync:
		return "Sync"
	}
	return "DeltaType(" + strconv.Itoa(int(t)) + ")"
}

// Delta is one change to one object.
type Delta[T cache.Object] struct {
	// Type is the kind of change.
	Type DeltaType
	// Object is the object after the change; for Deleted, the object as it
	// was deleted. For a Deleted delta with FinalStateUnknown, it is the last
	// state the queue or the consumer knew, and is the zero T if neither knew
	// one.
	Object T
	// FinalStateUnknown is set on a Deleted delta that Replace inferred
	// because the object was missing from a new list: the deletion happened
	// while nobody watched, and Object may be stale.
	FinalStateUnknown bool
}

// Item is what the consumer pops: a key and its deltas, oldest first. In
// [InOrder] queues an Item always holds exactly one delta.
type Item[T cache.Object] struct {
	// Key is the key of every delta's object.
	Key cache.Key
	// Deltas are the item's changes, oldest first.
	Deltas []Delta[T]
}

// Newest returns the most recent delta of the item.
func (it Item[T]) Newest() Delta[T] {
	if len(it.Deltas) == 0 {
		return Delta[T]{}
	}
	return it.Deltas[len(it.Deltas)-1]
}

// KnownObjects is the consumer's view of what it has already processed,
// usually its cache (a *cache.Indexer satisfies it). The queue uses it to
// find objects that vanished across a Replace and the objects to resync.
type KnownObjects[T cache.Object] interface {
	Keys() iter.Seq[cache.Key]
	GetByKey(key cache.Key) (T, bool, error)
}

// collapseDeletes collapses two consecutive deletions of a key into one,
// preferring a deletion with a known final state over an inferred one.
func collapseDeletes[T cache.Object](d []Delta[T]) []Delta[T] {
	n := len(d)
	if n < 2 || d[n-1].Type != Deleted || d[n-2].Type != Deleted {
		return d
	}
	if d[n-2].FinalStateUnknown {
		d[n-2] = d[n-1]
	}
	d[n-1] = Delta[T]{}
	return d[:n-1]
}
