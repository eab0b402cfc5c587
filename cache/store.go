package cache

import "iter"

// Reader is the read-only view of a [Store]. Informers hand it out so that
// controller code can query the cache but never write to it.
type Reader[T Object] interface {
	// Get returns the stored object with the same key as obj.
	Get(obj T) (item T, exists bool, err error)
	// GetByKey returns the object stored under key. The error is for
	// parity with client-go's Store; an Indexer never returns one.
	GetByKey(key Key) (item T, exists bool, err error)
	// List returns every stored object, in no particular order.
	List() []T
	// ListKeys returns the key of every stored object, in no particular order.
	ListKeys() []Key
	// Len returns the number of stored objects.
	Len() int
	// All yields every key and object from a snapshot; no lock is held while
	// yielding.
	All() iter.Seq2[Key, T]
	// Keys yields every key from a snapshot; no lock is held while yielding.
	Keys() iter.Seq[Key]
	// Values yields every object from a snapshot; no lock is held while
	// yielding.
	Values() iter.Seq[T]
}

// Store is the typed twin of client-go's cache.Store: a keyed set of objects.
// Writes validate the key and every index before changing anything.
type Store[T Object] interface {
	Reader[T]
	// Add inserts obj, or replaces the object with the same key.
	Add(obj T) error
	// Update is Add: it inserts or replaces.
	Update(obj T) error
	// Delete removes the object with the same key as obj, if any.
	Delete(obj T) error
	// Replace atomically swaps the whole content for list. resourceVersion
	// is the version the list was read at; a plain store ignores it.
	Replace(list []T, resourceVersion string) error
	// Resync is meaningless for a plain store and returns nil; it exists for
	// parity with queues that implement Store.
	Resync() error
}
