package cache

// Entry is an object ready to be written: its key and, once
// [Writer.Prepare] made it, the values of every custom index. The pipeline
// carries entries from the reflector to the writer so that index values are
// computed once per object, before anything is queued.
//
// An Entry built as a literal, with only Key and Object set, is valid too:
// [Writer.Apply] then computes its index values.
type Entry[T Object] struct {
	// Key is the object's key, KeyOf(Object). An empty Key is computed.
	Key Key
	// Object is the object to store.
	Object T

	idx *prepared[T] // index values; nil: not prepared
}

// prepared holds an entry's index values: one pointer in the Entry, so
// that entries (and the deltas that carry them) stay small.
type prepared[T Object] struct {
	set  *indexSet[T] // the index set vals were computed for
	vals [][]string   // values per index of set, aligned with set.names
}

// preparedFor returns the prepared values for set; a set without custom
// indexes shares one, so preparing allocates nothing then.
func preparedFor[T Object](set *indexSet[T], vals [][]string) *prepared[T] {
	if len(set.names) == 0 {
		return set.none
	}
	return &prepared[T]{set: set, vals: vals}
}

func (e *Entry[T]) set() *indexSet[T] {
	if e.idx == nil {
		return nil
	}
	return e.idx.set
}

func (e *Entry[T]) vals() [][]string {
	if e.idx == nil {
		return nil
	}
	return e.idx.vals
}

// Change is one write for [Writer.Apply]: store Entry.Object under
// Entry.Key, or, with Delete set, remove Entry.Key. Apply reports what the
// change replaced in Prev and Existed.
type Change[T Object] struct {
	Entry[T]
	// Delete removes the object under Key; Object is not used.
	Delete bool

	// Prev is set by Apply to the object the change replaced or removed,
	// the zero T if there was none.
	Prev T
	// Existed is set by Apply: Key held an object before the change.
	Existed bool

	refused bool // Apply found no key or no object: the change is skipped
}
