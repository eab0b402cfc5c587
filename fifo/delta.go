package fifo

import (
	"errors"
	"strconv"

	"github.com/typedinformer/informer/cache"
)

// ErrClosed is returned by Pop once the queue is closed and drained, and by
// writes after Close.
var ErrClosed = errors.New("fifo: queue closed")

// DeltaType is the kind of change a [Delta] carries.
type DeltaType uint8

// The kinds of change a [Queue] carries.
const (
	// Added: the object was created (a watch ADDED event).
	Added DeltaType = iota + 1
	// Updated: the object was modified (a watch MODIFIED event).
	Updated
	// Deleted: the object was deleted (a watch DELETED event, or an
	// object removed from a streaming list being collected).
	Deleted
	// Replaced: the object is part of a full list: Replaced deltas come
	// between a ReplaceStart and a ReplaceEnd.
	Replaced
	// Sync: a request to resync every object the consumer holds (no
	// object).
	Sync
	// ReplaceStart opens a full list in a Queue: the consumer collects the
	// Replaced deltas that follow and, at ReplaceEnd, makes its content
	// exactly that list. A ReplaceStart while a list is open discards it.
	ReplaceStart
	// ReplaceEnd closes a full list; ResourceVersion is the list's.
	ReplaceEnd
	// Bookmark reports progress without a change: the source is at
	// ResourceVersion.
	Bookmark
	// Refused is an object the producer could not take (a transform, an
	// index function or the decoder failed on it), in the place of the
	// change it came with, inside a list or not: Key and ResourceVersion
	// name it (Object is the zero T) and Err says why. The consumer
	// decides what a refusal means (an informer quarantines the object).
	Refused
	// Moved marks where the producer moved to another part of the
	// resource (an informer's shard changed): the deltas before it are of
	// the old part, those after it of the new one. It carries nothing;
	// which objects the consumer keeps is its own configuration (an
	// informer drops the objects outside its new shard here).
	Moved
)

// String returns the type's name ("Added", "ReplaceEnd", ...).
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
	case ReplaceStart:
		return "ReplaceStart"
	case ReplaceEnd:
		return "ReplaceEnd"
	case Bookmark:
		return "Bookmark"
	case Refused:
		return "Refused"
	case Moved:
		return "Moved"
	}
	return "DeltaType(" + strconv.Itoa(int(t)) + ")"
}

// Delta is one change. Entry holds the object (and its key) for Added,
// Updated, Deleted and Replaced; a Refused delta has the key alone.
type Delta[T cache.Object] struct {
	// Type is the kind of change.
	Type DeltaType
	// Entry is the object after the change; for Deleted, the object as it
	// was deleted, or only its key when the producer could not take its
	// final state (the zero T then).
	cache.Entry[T]
	// ResourceVersion is set on ReplaceEnd, Bookmark and Refused, and on
	// a Deleted delta that carries only its key.
	ResourceVersion string
	// Progress, on a watch change, is the version the cache reaches once
	// it applied the change, when that is not the object's: the
	// source.Event's Progress of a merged source. Empty otherwise.
	Progress string
	// Err is why a Refused object was refused; nil for every other type.
	Err error
}

// sliceQueue is a FIFO slice with an O(1) pop from the head and amortised
// O(1) push; it compacts when the consumed head dominates.
type sliceQueue[E any] struct {
	buf  []E
	head int
}

func (r *sliceQueue[E]) len() int { return len(r.buf) - r.head }

func (r *sliceQueue[E]) push(e E) {
	r.compact()
	r.buf = append(r.buf, e)
}

// pushAll pushes es in order, growing the buffer at most once.
func (r *sliceQueue[E]) pushAll(es []E) {
	r.compact()
	r.buf = append(r.buf, es...)
}

// compact reclaims the consumed head before a push.
func (r *sliceQueue[E]) compact() {
	if r.head > 0 && r.head == len(r.buf) {
		r.buf, r.head = r.buf[:0], 0
	} else if r.head >= 1024 && r.head*2 >= len(r.buf) {
		n := copy(r.buf, r.buf[r.head:])
		clear(r.buf[n:])
		r.buf, r.head = r.buf[:n], 0
	}
}

// at returns the i-th item from the head.
func (r *sliceQueue[E]) at(i int) E { return r.buf[r.head+i] }

// keepCap is the largest array an empty queue keeps: the array an
// initial list of 100k objects grew is given back once it is drained,
// not held for the queue's lifetime.
const keepCap = 4096

// pop removes and returns the head item.
func (r *sliceQueue[E]) pop() E {
	var zero E
	e := r.buf[r.head]
	r.buf[r.head] = zero
	r.head++
	if r.head == len(r.buf) && cap(r.buf) > keepCap {
		r.buf, r.head = nil, 0
	}
	return e
}

// all yields the queued items from head to tail.
func (r *sliceQueue[E]) all(yield func(E) bool) {
	for _, e := range r.buf[r.head:] {
		if !yield(e) {
			return
		}
	}
}
