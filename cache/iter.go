package cache

import (
	"iter"
	"sync"
)

// snapshot is a reusable buffer of key/object pairs copied out under the read
// lock, so that iterators can yield without holding it.
type snapshot[T Object] struct {
	keys []Key
	objs []T
}

// snapshots pools snapshot buffers per Indexer. A pool per Indexer keeps the
// buffers typed without a global map of pools.
type snapshots[T Object] struct{ pool sync.Pool }

func (p *snapshots[T]) get() *snapshot[T] {
	if s, ok := p.pool.Get().(*snapshot[T]); ok {
		return s
	}
	return &snapshot[T]{}
}

func (p *snapshots[T]) put(s *snapshot[T]) {
	clear(s.keys)
	clear(s.objs)
	s.keys, s.objs = s.keys[:0], s.objs[:0]
	p.pool.Put(s)
}

// snapshot copies the entries that set yields, under the read lock, into a
// pooled buffer; wantKeys and wantObjs pick what to copy. The caller puts
// the buffer back when done.
func (x *Indexer[T]) snapshot(set func(yield func(Key, T) bool), wantKeys, wantObjs bool) *snapshot[T] {
	s := x.snaps.get()
	x.mu.RLock()
	// Deferred so that a panic in set (a custom labels.Selector's Matches
	// runs there) does not leave the read lock held, which would block
	// every later write forever.
	defer x.mu.RUnlock()
	set(func(k Key, obj T) bool {
		if wantKeys {
			s.keys = append(s.keys, k)
		}
		if wantObjs {
			s.objs = append(s.objs, obj)
		}
		return true
	})
	return s
}

// allLocked ranges over every entry; the caller holds the read lock.
func (x *Indexer[T]) allLocked(yield func(Key, T) bool) {
	for k, obj := range x.items {
		if !yield(k, obj) {
			return
		}
	}
}

// All yields every key and object from a snapshot taken when iteration
// starts. No lock is held while yielding.
func (x *Indexer[T]) All() iter.Seq2[Key, T] {
	return func(yield func(Key, T) bool) {
		s := x.snapshot(x.allLocked, true, true)
		defer x.snaps.put(s)
		for i, k := range s.keys {
			if !yield(k, s.objs[i]) {
				return
			}
		}
	}
}

// Keys yields every key from a snapshot taken when iteration starts. No lock
// is held while yielding.
func (x *Indexer[T]) Keys() iter.Seq[Key] {
	return func(yield func(Key) bool) {
		s := x.snapshot(x.allLocked, true, false)
		defer x.snaps.put(s)
		for _, k := range s.keys {
			if !yield(k) {
				return
			}
		}
	}
}

// Values yields every object from a snapshot taken when iteration starts.
// No lock is held while yielding.
func (x *Indexer[T]) Values() iter.Seq[T] {
	return x.values(x.allLocked)
}

// values yields the objects of set from a snapshot.
func (x *Indexer[T]) values(set func(yield func(Key, T) bool)) iter.Seq[T] {
	return func(yield func(T) bool) {
		s := x.snapshot(set, false, true)
		defer x.snaps.put(s)
		for _, obj := range s.objs {
			if !yield(obj) {
				return
			}
		}
	}
}

// ByIndexValues yields the objects indexed under value in the index called
// name, from a snapshot; no lock is held while yielding. A missing index
// yields nothing; use [Indexer.HasIndex] to tell the cases apart.
func (x *Indexer[T]) ByIndexValues(name, value string) iter.Seq[T] {
	return x.values(func(yield func(Key, T) bool) {
		ix, err := x.indexLocked(name)
		if err != nil {
			return
		}
		for k := range ix[value] {
			if !yield(k, x.items[k]) {
				return
			}
		}
	})
}
