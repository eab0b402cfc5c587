package cache

import (
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"
)

// NamespaceIndex is the name of the namespace index every store maintains.
// Its values are object namespaces ("" for cluster-scoped objects).
const NamespaceIndex = "namespace"

// IndexFunc computes the values under which an object is indexed. It returns
// an error, never panics, when it cannot index an object; the object is then
// refused (see [Writer.Prepare]).
type IndexFunc[T Object] func(obj T) ([]string, error)

// Indexers maps index names to their functions.
type Indexers[T Object] map[string]IndexFunc[T]

// Errors about indexes.
var (
	// ErrNoIndex is returned for a query on an index that does not exist.
	ErrNoIndex = errors.New("cache: no such index")
	// ErrIndexExists is returned for an index name already in use.
	ErrIndexExists = errors.New("cache: index already exists")
	// ErrIndexPanic is wrapped by the error of an index function that
	// panicked; the panic does not escape.
	ErrIndexPanic = errors.New("cache: index function panicked")
)

// keySet is the set of keys indexed under one value.
type keySet = map[Key]struct{}

// index maps an indexed value to the keys of the objects with that value.
type index map[string]keySet

func (ix index) add(v string, k Key) {
	set := ix[v]
	if set == nil {
		set = make(keySet, 1)
		ix[v] = set
	}
	set[k] = struct{}{}
}

func (ix index) remove(v string, k Key) {
	set := ix[v]
	delete(set, k)
	if len(set) == 0 {
		delete(ix, v)
	}
}

func (ix index) addAll(vals []string, k Key) {
	for _, v := range vals {
		ix.add(v, k)
	}
}

func (ix index) removeAll(vals []string, k Key) {
	for _, v := range vals {
		ix.remove(v, k)
	}
}

// labelIndex maps the values of one label to the objects that have them.
// The objects are held in the index itself, side by side, so that a List
// answered from it reads them in order, without a lookup in the table.
type labelIndex[T Object] map[string]*posting[T]

// posting is the objects with one value of a label: objs[i] is stored
// under keys[i], and pos[keys[i]] is i. Its order is arbitrary: a removal
// moves the last object into the hole.
type posting[T Object] struct {
	objs []T
	keys []Key
	pos  map[Key]int32
}

// put records that k, holding obj, has value v.
func (ix labelIndex[T]) put(v string, k Key, obj T) {
	p := ix[v]
	if p == nil {
		p = &posting[T]{pos: make(map[Key]int32, 1)}
		ix[v] = p
	}
	if i, ok := p.pos[k]; ok {
		p.objs[i] = obj
		return
	}
	p.pos[k] = int32(len(p.objs))
	p.objs = append(p.objs, obj)
	p.keys = append(p.keys, k)
}

// remove records that k no longer has value v.
func (ix labelIndex[T]) remove(v string, k Key) {
	p := ix[v]
	if p == nil {
		return
	}
	i, ok := p.pos[k]
	if !ok {
		return
	}
	delete(p.pos, k)
	last := len(p.objs) - 1
	if int(i) != last {
		p.objs[i], p.keys[i] = p.objs[last], p.keys[last]
		p.pos[p.keys[i]] = i
	}
	var zero T
	p.objs[last], p.keys[last] = zero, Key{} // no stale reference to a removed object
	p.objs, p.keys = p.objs[:last], p.keys[:last]
	if last == 0 {
		delete(ix, v)
	}
}

// indexSet is an immutable description of a writer's custom indexes.
// AddIndexers only ever appends, so the names of an older set are a prefix
// of the names of every newer set of the same writer, and index values
// computed with an older set stay valid for its names.
type indexSet[T Object] struct {
	owner *core[T]
	names []string
	funcs []IndexFunc[T]
	none  *prepared[T] // the values of an entry when there are no names
}

// newIndexSet returns a set with the given indexes.
func newIndexSet[T Object](owner *core[T], names []string, funcs []IndexFunc[T]) *indexSet[T] {
	s := &indexSet[T]{owner: owner, names: names, funcs: funcs}
	s.none = &prepared[T]{set: s}
	return s
}

// with returns a new set with add's indexes appended in name order.
func (s *indexSet[T]) with(add Indexers[T]) (*indexSet[T], error) {
	names := make([]string, 0, len(add))
	for name, f := range add {
		switch {
		case name == NamespaceIndex || slices.Contains(s.names, name):
			return nil, fmt.Errorf("%w: %q", ErrIndexExists, name)
		case name == "":
			return nil, errors.New("cache: index with an empty name")
		case f == nil:
			return nil, fmt.Errorf("cache: index %q: nil index function", name)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	funcs := slices.Clip(s.funcs)
	for _, name := range names {
		funcs = append(funcs, add[name])
	}
	return newIndexSet(s.owner, append(slices.Clip(s.names), names...), funcs), nil
}

// values computes the values of the indexes from the from-th on, appended
// to vals.
func (s *indexSet[T]) values(obj T, vals [][]string, from int) ([][]string, error) {
	for i := from; i < len(s.names); i++ {
		v, err := callIndexFunc(s.names[i], s.funcs[i], obj)
		if err != nil {
			return vals, err
		}
		vals = append(vals, v)
	}
	return vals, nil
}

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

// checkLabelKeys validates label index keys as label keys.
func checkLabelKeys(keys []string) error {
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("cache: label index %q: %s", k, errs[0])
		}
		if seen[k] {
			return fmt.Errorf("%w: label index %q", ErrIndexExists, k)
		}
		seen[k] = true
	}
	return nil
}
