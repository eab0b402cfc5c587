package cache

import (
	"fmt"
	"iter"
	"slices"
)

// Store is the read side of a cache: what controllers use. Every method is
// safe for concurrent use and sees the cache between two writes, never in
// the middle of one. Objects handed out are shared with the cache and every
// other reader: never mutate them; DeepCopy first.
//
// Iterators take a snapshot under the read lock and yield with no lock
// held, so the loop body may call anything, including the cache.
type Store[T Object] struct{ c *core[T] }

// Get returns the stored object with the same key as obj.
func (s *Store[T]) Get(obj T) (T, bool) {
	var zero T
	if obj == zero {
		return zero, false
	}
	return s.GetByKey(KeyOf(obj))
}

// GetByKey returns the object stored under key.
func (s *Store[T]) GetByKey(key Key) (T, bool) {
	s.c.mu.RLock()
	sl, ok := s.c.tab.get(key)
	s.c.mu.RUnlock()
	return sl.obj, ok
}

// Len returns the number of stored objects.
func (s *Store[T]) Len() int {
	s.c.mu.RLock()
	defer s.c.mu.RUnlock()
	return s.c.tab.n
}

// List returns every stored object in a new slice, in no particular order.
func (s *Store[T]) List() []T {
	s.c.mu.RLock()
	defer s.c.mu.RUnlock()
	return s.c.objectsLocked()
}

// ListKeys returns every key in a new slice, in no particular order.
func (s *Store[T]) ListKeys() []Key {
	s.c.mu.RLock()
	defer s.c.mu.RUnlock()
	out := make([]Key, 0, s.c.tab.n)
	s.c.tab.each(func(k Key, _ slot[T]) bool {
		out = append(out, k)
		return true
	})
	return out
}

// All yields every key and object from a snapshot taken when iteration
// starts; no lock is held while yielding. After warm-up it allocates
// nothing per object.
func (s *Store[T]) All() iter.Seq2[Key, T] {
	return func(yield func(Key, T) bool) {
		b := s.c.getBuf()
		defer s.c.putBuf(b)
		s.c.mu.RLock()
		s.c.tab.each(func(k Key, sl slot[T]) bool {
			b.keys = append(b.keys, k)
			b.objs = append(b.objs, sl.obj)
			return true
		})
		s.c.mu.RUnlock()
		for i, k := range b.keys {
			if !yield(k, b.objs[i]) {
				return
			}
		}
	}
}

// Snapshot returns every stored object and the store's revision, read
// together: the objects are exactly the content at that revision. The
// revision counts the writes applied so far (each Apply or Replace call
// adds one), so two snapshots with the same revision hold the same objects.
func (s *Store[T]) Snapshot() ([]T, uint64) {
	s.c.mu.RLock()
	defer s.c.mu.RUnlock()
	return s.c.objectsLocked(), s.c.rev
}

// ByIndex returns the objects indexed under value in the index called name
// (a custom index, or [NamespaceIndex]), or [ErrNoIndex].
func (s *Store[T]) ByIndex(name, value string) ([]T, error) {
	s.c.mu.RLock()
	defer s.c.mu.RUnlock()
	if name == NamespaceIndex {
		m := s.c.tab.ns[value]
		out := make([]T, 0, len(m))
		for _, sl := range m {
			out = append(out, sl.obj)
		}
		return out, nil
	}
	ix, err := s.c.indexLocked(name)
	if err != nil {
		return nil, err
	}
	set := ix[value]
	out := make([]T, 0, len(set))
	for k := range set {
		sl, _ := s.c.tab.get(k)
		out = append(out, sl.obj)
	}
	return out, nil
}

// ByIndexSeq yields the objects indexed under value in the index called
// name, from a snapshot; no lock is held while yielding. An unknown index
// yields nothing: [Store.ByIndex] tells that case apart with [ErrNoIndex].
func (s *Store[T]) ByIndexSeq(name, value string) iter.Seq[T] {
	return func(yield func(T) bool) {
		b := s.c.getBuf()
		defer s.c.putBuf(b)
		s.c.mu.RLock()
		if name == NamespaceIndex {
			for _, sl := range s.c.tab.ns[value] {
				b.objs = append(b.objs, sl.obj)
			}
		} else if ix, err := s.c.indexLocked(name); err == nil {
			for k := range ix[value] {
				sl, _ := s.c.tab.get(k)
				b.objs = append(b.objs, sl.obj)
			}
		}
		s.c.mu.RUnlock()
		for _, obj := range b.objs {
			if !yield(obj) {
				return
			}
		}
	}
}

// IndexValues returns every value present in the index called name,
// sorted, or [ErrNoIndex].
func (s *Store[T]) IndexValues(name string) ([]string, error) {
	s.c.mu.RLock()
	var out []string
	if name == NamespaceIndex {
		out = make([]string, 0, len(s.c.tab.ns))
		for v := range s.c.tab.ns {
			out = append(out, v)
		}
	} else {
		ix, err := s.c.indexLocked(name)
		if err != nil {
			s.c.mu.RUnlock()
			return nil, err
		}
		out = make([]string, 0, len(ix))
		for v := range ix {
			out = append(out, v)
		}
	}
	s.c.mu.RUnlock()
	slices.Sort(out)
	return out, nil
}

// Lister returns the typed lister over the store.
func (s *Store[T]) Lister() *Lister[T] { return &Lister[T]{c: s.c} }

// objectsLocked returns every stored object in a new slice; the caller
// holds the lock.
func (c *core[T]) objectsLocked() []T {
	out := make([]T, 0, c.tab.n)
	for _, m := range c.tab.ns {
		for _, sl := range m {
			out = append(out, sl.obj)
		}
	}
	return out
}

// indexLocked returns the custom index called name; the caller holds the
// lock. The namespace index is the table itself.
func (c *core[T]) indexLocked(name string) (index, error) {
	if i := slices.Index(c.cur.names, name); i >= 0 {
		return c.custom[i], nil
	}
	return nil, fmt.Errorf("%w: %q", ErrNoIndex, name)
}

// buffer is a reusable snapshot for iterators.
type buffer[T Object] struct {
	keys []Key
	objs []T
}

func (c *core[T]) getBuf() *buffer[T] {
	select {
	case b := <-c.bufs:
		return b
	default:
		return &buffer[T]{}
	}
}

func (c *core[T]) putBuf(b *buffer[T]) {
	clear(b.keys)
	clear(b.objs)
	b.keys, b.objs = b.keys[:0], b.objs[:0]
	select {
	case c.bufs <- b:
	default:
	}
}
