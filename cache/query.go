package cache

import (
	"fmt"
	"slices"
)

// Get returns the stored object with the same key as obj.
func (x *Indexer[T]) Get(obj T) (T, bool, error) {
	k, err := x.keyFunc(obj)
	if err != nil {
		var zero T
		return zero, false, fmt.Errorf("cache: get: %w", err)
	}
	x.mu.RLock()
	item, ok := x.items[k]
	x.mu.RUnlock()
	return item, ok, nil
}

// GetByKey returns the object stored under k. The error is always nil; it
// is there for parity with client-go's Store.GetByKey.
func (x *Indexer[T]) GetByKey(k Key) (T, bool, error) {
	x.mu.RLock()
	obj, ok := x.items[k]
	x.mu.RUnlock()
	return obj, ok, nil
}

// Len returns the number of stored objects.
func (x *Indexer[T]) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.items)
}

// List returns every stored object in a new slice, in no particular order.
func (x *Indexer[T]) List() []T {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]T, 0, len(x.items))
	for _, obj := range x.items {
		out = append(out, obj)
	}
	return out
}

// ListKeys returns every key in a new slice, in no particular order.
func (x *Indexer[T]) ListKeys() []Key {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]Key, 0, len(x.items))
	for k := range x.items {
		out = append(out, k)
	}
	return out
}

// indexLocked returns the index called name; the caller holds the lock.
func (x *Indexer[T]) indexLocked(name string) (index, error) {
	if name == NamespaceIndex && x.byNS != nil {
		return x.byNS, nil
	}
	ix, ok := x.indices[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoIndex, name)
	}
	return ix, nil
}

// HasIndex reports whether an index called name exists.
func (x *Indexer[T]) HasIndex(name string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	_, err := x.indexLocked(name)
	return err == nil
}

// Index returns the objects that share at least one value of the index with
// obj, computed with the index's own function.
func (x *Indexer[T]) Index(name string, obj T) ([]T, error) {
	var zero T
	if obj == zero {
		return nil, fmt.Errorf("cache: index %q: %w", name, ErrNilObject)
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	ix, err := x.indexLocked(name)
	if err != nil {
		return nil, err
	}
	var vals []string
	if name == NamespaceIndex && x.byNS != nil {
		vals = []string{obj.GetNamespace()}
	} else if vals, err = x.funcs[name](obj); err != nil {
		return nil, fmt.Errorf("cache: index %q: %w", name, err)
	}
	if len(vals) == 1 {
		return x.objectsLocked(ix[vals[0]], nil), nil
	}
	seen := map[Key]struct{}{}
	var out []T
	for _, v := range vals {
		for k := range ix[v] {
			if _, dup := seen[k]; dup {
				continue
			}
			seen[k] = struct{}{}
			out = append(out, x.items[k])
		}
	}
	return out, nil
}

func (x *Indexer[T]) objectsLocked(set keySet, out []T) []T {
	if out == nil {
		out = make([]T, 0, len(set))
	}
	for k := range set {
		out = append(out, x.items[k])
	}
	return out
}

// ByIndex returns the objects indexed under value in the index called name.
func (x *Indexer[T]) ByIndex(name, value string) ([]T, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	ix, err := x.indexLocked(name)
	if err != nil {
		return nil, err
	}
	return x.objectsLocked(ix[value], nil), nil
}

// IndexKeys returns the keys indexed under value in the index called name.
func (x *Indexer[T]) IndexKeys(name, value string) ([]Key, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	ix, err := x.indexLocked(name)
	if err != nil {
		return nil, err
	}
	set := ix[value]
	out := make([]Key, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	return out, nil
}

// ListIndexFuncValues returns every value present in the index called name,
// sorted; nil if there is no such index.
func (x *Indexer[T]) ListIndexFuncValues(name string) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	ix, err := x.indexLocked(name)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(ix))
	for v := range ix {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}
