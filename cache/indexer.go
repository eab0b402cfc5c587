package cache

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IndexerOptions configures [NewIndexer]. The zero value is ready to use.
type IndexerOptions[T Object] struct {
	// KeyFunc computes object keys. Default: [MetaKey].
	KeyFunc KeyFunc[T]
	// Indexers are the initial index functions. Default: none besides the
	// namespace index.
	Indexers Indexers[T]
	// NoNamespaceIndex turns off the built-in [NamespaceIndex]. Default:
	// false, the namespace index is maintained.
	NoNamespaceIndex bool
}

// Indexer is a thread-safe [Store] with typed indexes. All methods may be
// called concurrently. Objects handed in become owned by the Indexer and
// must not be mutated afterwards; objects handed out are shared and must not
// be mutated either.
type Indexer[T Object] struct {
	keyFunc KeyFunc[T]

	mu    sync.RWMutex
	items map[Key]T
	// vals holds, per key, the values computed for each custom index,
	// aligned with names; keeping them makes removal exact even if an index
	// function is not deterministic. Empty when there are no custom indexes,
	// so a plain cache pays nothing for it.
	vals    map[Key][][]string
	byNS    index // nil when the namespace index is off
	names   []string
	funcs   Indexers[T]
	indices map[string]index

	snaps snapshots[T]
	// custom mirrors len(names) for a lock-free fast path.
	custom atomic.Int32
}

// NewIndexer returns an empty Indexer.
func NewIndexer[T Object](opts IndexerOptions[T]) (*Indexer[T], error) {
	x := &Indexer[T]{
		keyFunc: opts.KeyFunc,
		items:   map[Key]T{},
		vals:    map[Key][][]string{},
		funcs:   Indexers[T]{},
		indices: map[string]index{},
	}
	if x.keyFunc == nil {
		x.keyFunc = MetaKey[T]
	}
	if !opts.NoNamespaceIndex {
		x.byNS = index{}
	}
	if err := x.AddIndexers(opts.Indexers); err != nil {
		return nil, err
	}
	return x, nil
}

var _ Store[*metav1.PartialObjectMetadata] = (*Indexer[*metav1.PartialObjectMetadata])(nil)

// KeyOf returns the key the Indexer uses for obj.
func (x *Indexer[T]) KeyOf(obj T) (Key, error) { return x.keyFunc(obj) }

// Add inserts obj or replaces the object with the same key.
func (x *Indexer[T]) Add(obj T) error {
	k, err := x.keyFunc(obj)
	if err != nil {
		return fmt.Errorf("cache: add: %w", err)
	}
	return x.Set(k, obj)
}

// Update is the same as Add.
func (x *Indexer[T]) Update(obj T) error {
	k, err := x.keyFunc(obj)
	if err != nil {
		return fmt.Errorf("cache: update: %w", err)
	}
	return x.Set(k, obj)
}

// Set stores obj under a key the caller has already computed with the
// Indexer's key function. The informer uses it so that a key is computed
// once per event.
func (x *Indexer[T]) Set(k Key, obj T) error {
	_, _, err := x.Swap(k, obj)
	return err
}

// Swap is Set that also returns the object it replaced, if any, under the
// same lock.
func (x *Indexer[T]) Swap(k Key, obj T) (old T, existed bool, err error) {
	var zero T
	if obj == zero {
		return zero, false, fmt.Errorf("cache: set %v: %w", k, ErrNilObject)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	vals, err := computeValues(x.names, x.funcs, obj)
	if err != nil {
		return zero, false, fmt.Errorf("cache: set %v: %w", k, err)
	}
	prev, existed := x.items[k]
	x.setLocked(k, obj, vals, prev, x.vals[k], existed)
	return prev, existed, nil
}

// setLocked stores obj and updates every index; old and oldVals are the
// object it replaces and its index values, when existed.
func (x *Indexer[T]) setLocked(k Key, obj T, vals [][]string, old T, oldVals [][]string, existed bool) {
	x.items[k] = obj
	if len(x.names) > 0 {
		x.vals[k] = vals
	}
	if x.byNS != nil {
		if existed {
			if ons := old.GetNamespace(); ons != obj.GetNamespace() {
				x.byNS.remove([]string{ons}, k)
				x.byNS.add([]string{obj.GetNamespace()}, k)
			}
		} else {
			x.byNS.add([]string{obj.GetNamespace()}, k)
		}
	}
	for i, name := range x.names {
		if existed {
			if sameValues(oldVals[i], vals[i]) {
				continue
			}
			x.indices[name].remove(oldVals[i], k)
		}
		x.indices[name].add(vals[i], k)
	}
}

// Delete removes the object with obj's key, if present.
func (x *Indexer[T]) Delete(obj T) error {
	k, err := x.keyFunc(obj)
	if err != nil {
		return fmt.Errorf("cache: delete: %w", err)
	}
	x.DeleteKey(k)
	return nil
}

// DeleteKey removes the object stored under k, if present, and returns it.
func (x *Indexer[T]) DeleteKey(k Key) (T, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	old, ok := x.items[k]
	if !ok {
		return old, false
	}
	oldVals := x.vals[k]
	delete(x.items, k)
	delete(x.vals, k)
	if x.byNS != nil {
		x.byNS.remove([]string{old.GetNamespace()}, k)
	}
	for i, name := range x.names {
		x.indices[name].remove(oldVals[i], k)
	}
	return old, true
}

// Replace swaps the whole content for list. Every key and index value is
// computed first; if any fails, Replace returns the error and the Indexer is
// unchanged. When list holds two objects with the same key, the later wins.
func (x *Indexer[T]) Replace(list []T, _ string) error {
	var zero T
	items := make(map[Key]T, len(list))
	for i, obj := range list {
		if obj == zero {
			return fmt.Errorf("cache: replace: item %d: %w", i, ErrNilObject)
		}
		k, err := x.keyFunc(obj)
		if err != nil {
			return fmt.Errorf("cache: replace: item %d: %w", i, err)
		}
		items[k] = obj
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.rebuildLocked(items, x.names, x.funcs)
}

// rebuildLocked computes every index over items and installs the result. It
// changes nothing if an index function fails.
func (x *Indexer[T]) rebuildLocked(items map[Key]T, names []string, funcs Indexers[T]) error {
	indices := make(map[string]index, len(names))
	for _, name := range names {
		indices[name] = index{}
	}
	var byNS index
	if x.byNS != nil {
		byNS = index{}
	}
	allVals := map[Key][][]string{}
	for k, obj := range items {
		if len(names) > 0 {
			vals, err := computeValues(names, funcs, obj)
			if err != nil {
				return fmt.Errorf("cache: %v: %w", k, err)
			}
			allVals[k] = vals
			for i, name := range names {
				indices[name].add(vals[i], k)
			}
		}
		if byNS != nil {
			byNS.add([]string{obj.GetNamespace()}, k)
		}
	}
	x.items, x.vals, x.names, x.funcs, x.indices, x.byNS = items, allVals, names, funcs, indices, byNS
	x.custom.Store(int32(len(names)))
	return nil
}

// Resync does nothing and returns nil.
func (x *Indexer[T]) Resync() error { return nil }

// AddIndexers adds index functions, also when objects are already stored:
// the new indexes are built over them. If a name is taken or an index
// function fails on any stored object, nothing changes.
func (x *Indexer[T]) AddIndexers(add Indexers[T]) error {
	if len(add) == 0 {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	funcs := cloneIndexers(x.funcs)
	names := slices.Clone(x.names)
	newNames := make([]string, 0, len(add))
	for name, f := range add {
		if _, taken := funcs[name]; taken || (name == NamespaceIndex && x.byNS != nil) {
			return fmt.Errorf("%w: %q", ErrIndexExists, name)
		}
		if f == nil {
			return fmt.Errorf("cache: index %q: nil index function", name)
		}
		funcs[name] = f
		newNames = append(newNames, name)
	}
	slices.Sort(newNames)
	names = append(names, newNames...)
	return x.rebuildLocked(maps.Clone(x.items), names, funcs)
}

// CheckIndexes runs every index function on obj without storing anything,
// and returns the error a write of obj would fail with, if any. Informers
// call it before an object enters their queue, so that an object the cache
// cannot index is refused there (and the watch resumes from before it)
// rather than dropped after its resourceVersion was taken.
func (x *Indexer[T]) CheckIndexes(obj T) error {
	if x.custom.Load() == 0 {
		return nil // no custom index: nothing can fail, and no lock taken
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(x.names) == 0 {
		return nil
	}
	_, err := computeValues(x.names, x.funcs, obj)
	return err
}

// GetIndexers returns a copy of the index functions, including the namespace
// index when it is maintained.
func (x *Indexer[T]) GetIndexers() Indexers[T] {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := cloneIndexers(x.funcs)
	if x.byNS != nil {
		out[NamespaceIndex] = IndexByNamespace[T]
	}
	return out
}
