package cache

import (
	"errors"
	"fmt"
	"maps"
)

// NamespaceIndex is the name of the namespace index an [Indexer] maintains by
// default. Its values are object namespaces ("" for cluster-scoped objects).
const NamespaceIndex = "namespace"

// IndexFunc computes the values under which an object is indexed. It returns
// an error, never panics, when it cannot index an object; the write that
// called it then fails and changes nothing.
type IndexFunc[T Object] func(obj T) ([]string, error)

// Indexers maps index names to their functions.
type Indexers[T Object] map[string]IndexFunc[T]

// ErrNoIndex is returned for a query on an index that does not exist.
var ErrNoIndex = errors.New("cache: no such index")

// ErrIndexExists is returned by [Indexer.AddIndexers] for a name already in
// use.
var ErrIndexExists = errors.New("cache: index already exists")

// IndexByNamespace indexes objects by namespace. An [Indexer] maintains this
// index natively under [NamespaceIndex]; the function is exported for use
// with other stores.
func IndexByNamespace[T Object](obj T) ([]string, error) {
	var zero T
	if obj == zero {
		return nil, ErrNilObject
	}
	return []string{obj.GetNamespace()}, nil
}

// LabelIndexName is the index name under which [IndexByLabel] for the label
// key should be registered. A [Lister] uses such an index for equality
// selectors on that label instead of scanning.
func LabelIndexName(labelKey string) string { return "label:" + labelKey }

// IndexByLabel returns an index function that indexes objects by the value of
// one label. Objects without the label are not indexed. Register it as
// Indexers{LabelIndexName(key): IndexByLabel[T](key)}.
func IndexByLabel[T Object](labelKey string) IndexFunc[T] {
	return func(obj T) ([]string, error) {
		var zero T
		if obj == zero {
			return nil, ErrNilObject
		}
		v, ok := obj.GetLabels()[labelKey]
		if !ok {
			return nil, nil
		}
		return []string{v}, nil
	}
}

// keySet is the set of keys indexed under one value.
type keySet = map[Key]struct{}

// index maps an indexed value to the keys of the objects with that value.
type index map[string]keySet

func (ix index) add(vals []string, k Key) {
	for _, v := range vals {
		set := ix[v]
		if set == nil {
			set = make(keySet, 1)
			ix[v] = set
		}
		set[k] = struct{}{}
	}
}

func (ix index) remove(vals []string, k Key) {
	for _, v := range vals {
		set := ix[v]
		delete(set, k)
		if len(set) == 0 {
			delete(ix, v)
		}
	}
}

// computeValues runs every index function in order on obj.
func computeValues[T Object](names []string, funcs Indexers[T], obj T) ([][]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	vals := make([][]string, len(names))
	for i, name := range names {
		v, err := callIndexFunc(name, funcs[name], obj)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

// ErrIndexPanic is wrapped by the error of an index function that panicked.
var ErrIndexPanic = errors.New("cache: index function panicked")

// callIndexFunc runs one index function; an error or a panic becomes an
// error naming the index.
func callIndexFunc[T Object](name string, f IndexFunc[T], obj T) (vals []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			vals, err = nil, fmt.Errorf("index %q: %w: %v", name, ErrIndexPanic, r)
		}
	}()
	vals, err = f(obj)
	if err != nil {
		return nil, fmt.Errorf("index %q: %w", name, err)
	}
	return vals, nil
}

func sameValues(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func cloneIndexers[T Object](in Indexers[T]) Indexers[T] {
	if in == nil {
		return Indexers[T]{}
	}
	return maps.Clone(in)
}
