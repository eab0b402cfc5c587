package clientgo

import (
	"fmt"
	"maps"
	"reflect"
	"sync"

	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
)

// indexer is the view's client-go Indexer: reads are answered from the
// informer's cache, writes are refused. It knows the index functions it
// can apply to an object for Index and list in GetIndexers: the namespace
// index's, those of Options.Indexers and those added through it.
type indexer[T cache.Object] struct {
	v     *view[T]
	store *cache.Store[T]

	mu    sync.Mutex
	funcs clientcache.Indexers // replaced, never changed, by AddIndexers
}

func newIndexer[T cache.Object](v *view[T], declared cache.Indexers[T]) (*indexer[T], error) {
	funcs := clientcache.Indexers{cache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc}
	for name, f := range declared {
		switch {
		case name == cache.NamespaceIndex:
			return nil, fmt.Errorf("Options.Indexers: %q is the built-in namespace index", name)
		case f == nil:
			return nil, fmt.Errorf("Options.Indexers: index %q: nil index function", name)
		}
		if _, err := v.store.IndexValues(name); err != nil {
			return nil, fmt.Errorf("Options.Indexers: the informer has no index %q: %w", name, err)
		}
		funcs[name] = typedIndexFunc(f)
	}
	return &indexer[T]{v: v, store: v.store, funcs: funcs}, nil
}

// typedIndexFunc applies a typed index function to an object of any type:
// one that is not a T is an error wrapping ErrWrongType.
func typedIndexFunc[T cache.Object](f cache.IndexFunc[T]) clientcache.IndexFunc {
	return func(obj any) ([]string, error) {
		t, ok := obj.(T)
		if !ok {
			var zero T
			return nil, fmt.Errorf("%w: %T, the index takes %T", ErrWrongType, obj, zero)
		}
		return f(t)
	}
}

// refuse is the error of a write method.
func (x *indexer[T]) refuse(op string, obj any) error {
	return fmt.Errorf("%w: informer %s: %s of %T", ErrReadOnly, x.v.inf.Name(), op, obj)
}

// Add returns an error wrapping ErrReadOnly.
func (x *indexer[T]) Add(obj any) error { return x.refuse("Add", obj) }

// Update returns an error wrapping ErrReadOnly.
func (x *indexer[T]) Update(obj any) error { return x.refuse("Update", obj) }

// Delete returns an error wrapping ErrReadOnly.
func (x *indexer[T]) Delete(obj any) error { return x.refuse("Delete", obj) }

// Replace returns an error wrapping ErrReadOnly.
func (x *indexer[T]) Replace(list []any, _ string) error { return x.refuse("Replace", list) }

// Resync does nothing and returns nil, as a client-go cache's does.
func (x *indexer[T]) Resync() error { return nil }

// Bookmark does nothing: the informer keeps its own resourceVersion.
func (x *indexer[T]) Bookmark(string) {}

// LastStoreSyncResourceVersion is the informer's LastSyncResourceVersion.
func (x *indexer[T]) LastStoreSyncResourceVersion() string { return x.v.inf.LastSyncResourceVersion() }

// List returns every cached object.
func (x *indexer[T]) List() []any { return boxed(x.store.List()) }

// ListKeys returns the "namespace/name" key of every cached object.
func (x *indexer[T]) ListKeys() []string {
	keys := x.store.ListKeys()
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.String()
	}
	return out
}

// Get returns the cached object with obj's key. obj may be any object with
// metadata, a DeletedFinalStateUnknown or an ExplicitKey, as client-go's
// key function takes; anything else is a KeyError.
func (x *indexer[T]) Get(obj any) (any, bool, error) {
	key, err := clientcache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return nil, false, clientcache.KeyError{Obj: obj, Err: err}
	}
	return x.GetByKey(key)
}

// GetByKey returns the object cached under a "namespace/name" (or "name")
// key. A malformed key finds nothing, as in client-go.
func (x *indexer[T]) GetByKey(key string) (any, bool, error) {
	k, err := cache.ParseKey(key)
	if err != nil || k.String() != key {
		return nil, false, nil
	}
	obj, ok := x.store.GetByKey(k)
	if !ok {
		return nil, false, nil
	}
	return obj, true, nil
}

// Index returns the cached objects that share an indexed value with obj in
// the index called name, computing obj's values with the index's function:
// obj need not be cached, nor be a T for the namespace index or an index
// added through the view (client-go's listers pass a *metav1.ObjectMeta).
// It fails for an unknown index, for an index whose function the view does
// not know (ErrUnknownIndexFunc), and when the function fails or panics on
// obj.
func (x *indexer[T]) Index(name string, obj any) ([]any, error) {
	x.mu.Lock()
	f, ok := x.funcs[name]
	x.mu.Unlock()
	if !ok {
		if _, err := x.store.IndexValues(name); err != nil {
			return nil, x.noIndex(name, err)
		}
		return nil, fmt.Errorf("%w: informer %s: index %q (declare it in Options.Indexers)", ErrUnknownIndexFunc, x.v.inf.Name(), name)
	}
	vals, err := callIndexFunc(name, f, obj)
	if err != nil {
		return nil, fmt.Errorf("clientgo: informer %s: %w", x.v.inf.Name(), err)
	}
	if len(vals) == 1 {
		return x.ByIndex(name, vals[0])
	}
	seen := map[cache.Key]bool{}
	out := []any{}
	for _, val := range vals {
		objs, err := x.store.ByIndex(name, val)
		if err != nil {
			return nil, x.noIndex(name, err)
		}
		for _, o := range objs {
			if k := cache.KeyOf(o); !seen[k] {
				seen[k] = true
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// callIndexFunc runs a client-go index function; a panic becomes an error
// wrapping cache.ErrIndexPanic.
func callIndexFunc(name string, f clientcache.IndexFunc, obj any) (vals []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			vals, err = nil, fmt.Errorf("index %q: %w: %v", name, cache.ErrIndexPanic, r)
		}
	}()
	vals, err = f(obj)
	if err != nil {
		return nil, fmt.Errorf("index %q: %w", name, err)
	}
	return vals, nil
}

func (x *indexer[T]) noIndex(name string, err error) error {
	return fmt.Errorf("clientgo: informer %s: index %q: %w", x.v.inf.Name(), name, err)
}

// IndexKeys returns the keys of the cached objects indexed under value in
// the index called name, or an error for an unknown index.
func (x *indexer[T]) IndexKeys(name, value string) ([]string, error) {
	objs, err := x.store.ByIndex(name, value)
	if err != nil {
		return nil, x.noIndex(name, err)
	}
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = cache.KeyOf(o).String()
	}
	return out, nil
}

// ListIndexFuncValues returns the values present in the index called name;
// none for an unknown index, as in client-go.
func (x *indexer[T]) ListIndexFuncValues(name string) []string {
	vals, err := x.store.IndexValues(name)
	if err != nil {
		return []string{}
	}
	return vals
}

// ByIndex returns the cached objects indexed under value in the index
// called name, or an error for an unknown index.
func (x *indexer[T]) ByIndex(name, value string) ([]any, error) {
	objs, err := x.store.ByIndex(name, value)
	if err != nil {
		return nil, x.noIndex(name, err)
	}
	return boxed(objs), nil
}

// GetIndexers returns the indexes whose functions the view knows: the
// namespace index (as cache.MetaNamespaceIndexFunc), those of
// Options.Indexers and those added through the view. The map is a copy.
func (x *indexer[T]) GetIndexers() clientcache.Indexers {
	x.mu.Lock()
	defer x.mu.Unlock()
	return maps.Clone(x.funcs)
}

// AddIndexers adds the indexes to the informer's cache, built over the
// objects already cached (typed.Informer.AddIndexers). Each client-go
// function gets the informer's objects; if one fails or panics on an
// object, nothing is added and the error says which. An index named
// "namespace" with cache.MetaNamespaceIndexFunc is accepted and changes
// nothing: the cache always has it. Later, an object a function fails on
// is refused by the informer, which reports it and relists (client-go
// panics there).
func (x *indexer[T]) AddIndexers(add clientcache.Indexers) error {
	typed := make(cache.Indexers[T], len(add))
	for name, f := range add {
		if name == cache.NamespaceIndex && isNamespaceIndexFunc(f) {
			continue
		}
		if f == nil {
			return fmt.Errorf("clientgo: informer %s: index %q: nil index function", x.v.inf.Name(), name)
		}
		typed[name] = func(obj T) ([]string, error) { return f(obj) }
	}
	if err := x.v.inf.AddIndexers(typed); err != nil {
		return fmt.Errorf("clientgo: %w", err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	funcs := maps.Clone(x.funcs)
	for name := range typed {
		funcs[name] = add[name]
	}
	x.funcs = funcs
	return nil
}

// isNamespaceIndexFunc reports whether f is client-go's namespace index
// function, the one the cache's namespace index computes.
func isNamespaceIndexFunc(f clientcache.IndexFunc) bool {
	return f != nil && reflect.ValueOf(f).Pointer() == reflect.ValueOf(clientcache.IndexFunc(clientcache.MetaNamespaceIndexFunc)).Pointer()
}

// boxed returns objs as client-go's []interface{}.
func boxed[T cache.Object](objs []T) []any {
	out := make([]any, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}
