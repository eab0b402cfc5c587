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

	set  *indexSet[T] // the index set vals were computed for; nil: none
	vals [][]string   // values per index of set, aligned with set.names
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
