package cache

import (
	"iter"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
)

// Lister answers the queries controllers make of a cache: list by label
// selector, get by name, per namespace or by index. It is the typed twin of
// a generated client-go lister, for any type.
type Lister[T Object] struct {
	x        *Indexer[T]
	resource schema.GroupResource
}

// NewLister returns a Lister over x. resource names the objects in NotFound
// errors, e.g. schema.GroupResource{Resource: "pods"}.
func NewLister[T Object](x *Indexer[T], resource schema.GroupResource) *Lister[T] {
	return &Lister[T]{x: x, resource: resource}
}

// List returns the objects, in every namespace, whose labels match selector.
// A nil selector matches nothing, like labels.Nothing(); use
// labels.Everything() for all objects.
func (l *Lister[T]) List(selector labels.Selector) ([]T, error) {
	return l.list("", false, selector), nil
}

// Seq yields the objects whose labels match selector from a snapshot; no
// lock is held while yielding, and after warm-up nothing is allocated per
// item.
func (l *Lister[T]) Seq(selector labels.Selector) iter.Seq[T] {
	return l.x.values(l.matchLocked("", false, selector))
}

// Get returns the cluster-scoped object called name, or a NotFound error
// (apierrors.IsNotFound) naming the resource.
func (l *Lister[T]) Get(name string) (T, error) {
	return l.get(Key{Name: name})
}

// ByIndex returns the objects indexed under value in the index called name.
func (l *Lister[T]) ByIndex(name, value string) ([]T, error) {
	return l.x.ByIndex(name, value)
}

// Namespace returns a lister restricted to one namespace.
func (l *Lister[T]) Namespace(namespace string) NamespaceLister[T] {
	return NamespaceLister[T]{l: l, namespace: namespace}
}

// NamespaceLister is a [Lister] restricted to one namespace. Its List uses
// the namespace index when the Indexer maintains one.
type NamespaceLister[T Object] struct {
	l         *Lister[T]
	namespace string
}

// List returns the objects of the namespace whose labels match selector.
func (n NamespaceLister[T]) List(selector labels.Selector) ([]T, error) {
	return n.l.list(n.namespace, true, selector), nil
}

// Seq yields the objects of the namespace whose labels match selector, from
// a snapshot with no lock held while yielding.
func (n NamespaceLister[T]) Seq(selector labels.Selector) iter.Seq[T] {
	return n.l.x.values(n.l.matchLocked(n.namespace, true, selector))
}

// Get returns the object called name in the namespace, or a NotFound error
// (apierrors.IsNotFound) naming the resource.
func (n NamespaceLister[T]) Get(name string) (T, error) {
	return n.l.get(Key{Namespace: n.namespace, Name: name})
}

func (l *Lister[T]) get(k Key) (T, error) {
	obj, ok, _ := l.x.GetByKey(k)
	if !ok {
		return obj, apierrors.NewNotFound(l.resource, k.Name)
	}
	return obj, nil
}

func (l *Lister[T]) list(ns string, scoped bool, selector labels.Selector) []T {
	out := []T{}
	l.x.mu.RLock()
	defer l.x.mu.RUnlock()
	l.matchLocked(ns, scoped, selector)(func(_ Key, obj T) bool {
		out = append(out, obj)
		return true
	})
	return out
}

// matchLocked returns a range function over the objects that match; it must
// run with the read lock held. It picks the smallest candidate set among
// the namespace index and any label index usable for the selector.
func (l *Lister[T]) matchLocked(ns string, scoped bool, selector labels.Selector) func(yield func(Key, T) bool) {
	x := l.x
	return func(yield func(Key, T) bool) {
		if selector == nil {
			return
		}
		everything := selector.Empty()
		match := func(k Key, obj T) bool {
			if scoped && obj.GetNamespace() != ns {
				return true
			}
			if !everything && !selector.Matches(labels.Set(obj.GetLabels())) {
				return true
			}
			return yield(k, obj)
		}
		// Candidate sources: the namespace index, or the sets a label index
		// gives for one requirement. Each object still goes through match,
		// so a source only has to be a superset; take the smallest.
		var best []keySet
		bestN := -1
		if scoped && x.byNS != nil {
			best, bestN = []keySet{x.byNS[ns]}, len(x.byNS[ns])
		}
		if !everything {
			if sets, n, ok := x.labelCandidatesLocked(selector); ok && (bestN < 0 || n < bestN) {
				best, bestN = sets, n
			}
		}
		if bestN < 0 {
			for k, obj := range x.items {
				if !match(k, obj) {
					return
				}
			}
			return
		}
		for _, set := range best {
			for k := range set {
				if !match(k, x.items[k]) {
					return
				}
			}
		}
	}
}

// labelCandidatesLocked looks at every equality or set-membership
// requirement on a label that has a label index, and returns the key sets
// selected by the one that selects the fewest keys, with that number.
func (x *Indexer[T]) labelCandidatesLocked(selector labels.Selector) ([]keySet, int, bool) {
	reqs, selectable := selector.Requirements()
	if !selectable {
		return nil, 0, false
	}
	var best []keySet
	bestN := -1
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
		default:
			continue
		}
		ix, ok := x.indices[LabelIndexName(r.Key())]
		if !ok {
			continue
		}
		// Values is a set: a value repeated in the requirement must not
		// yield its objects twice.
		vals := r.Values()
		sets := make([]keySet, 0, len(vals))
		n := 0
		for v := range vals {
			sets = append(sets, ix[v])
			n += len(ix[v])
		}
		if bestN < 0 || n < bestN {
			best, bestN = sets, n
		}
	}
	return best, bestN, bestN >= 0
}
