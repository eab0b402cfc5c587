package cache

import (
	"errors"
	"fmt"
	"iter"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// Scope says whether a resource's objects live in namespaces.
type Scope uint8

// The scopes.
const (
	// ScopeUnknown: not declared; a [Lister] infers it from the objects.
	ScopeUnknown Scope = iota
	// ScopeNamespaced: every object has a namespace (pods, services).
	ScopeNamespaced
	// ScopeCluster: no object has a namespace (nodes, namespaces).
	ScopeCluster
)

// String returns "unknown", "namespaced" or "cluster".
func (s Scope) String() string {
	switch s {
	case ScopeNamespaced:
		return "namespaced"
	case ScopeCluster:
		return "cluster"
	}
	return "unknown"
}

// ErrWrongScope is wrapped by the error of a lookup in the wrong scope: a
// Get without a namespace for a namespaced resource, or one in a namespace
// for a cluster-scoped resource. Such a lookup can never find anything.
var ErrWrongScope = errors.New("cache: lookup in the wrong scope")

// ErrNilSelector is returned by List for a nil selector; use
// labels.Everything() to list everything.
var ErrNilSelector = errors.New("cache: nil selector (use labels.Everything())")

// Lister answers the queries controllers make of a cache: list by label
// selector, get by name, in every namespace or in one. It is the typed twin
// of a generated client-go lister, for any type. Label selectors on the
// store's label indexes are answered from the index; everything else is
// matched outside the lock, on a snapshot.
type Lister[T Object] struct{ c *core[T] }

// List returns the objects, in every namespace, whose labels match
// selector, or [ErrNilSelector].
func (l *Lister[T]) List(selector labels.Selector) ([]T, error) {
	return l.c.list("", false, selector)
}

// ListSeq yields the objects, in every namespace, whose labels match
// selector, from a snapshot; no lock is held while yielding. A nil selector
// yields nothing.
func (l *Lister[T]) ListSeq(selector labels.Selector) iter.Seq[T] {
	return l.c.listSeq("", false, selector)
}

// Get returns the cluster-scoped object called name, a NotFound error
// (apierrors.IsNotFound) naming the resource, or [ErrWrongScope] if the
// resource is namespaced.
func (l *Lister[T]) Get(name string) (T, error) {
	return l.c.get(Key{Name: name}, false)
}

// Namespace returns a lister restricted to one namespace.
func (l *Lister[T]) Namespace(namespace string) NamespaceLister[T] {
	return NamespaceLister[T]{c: l.c, namespace: namespace}
}

// NamespaceLister is a [Lister] restricted to one namespace.
type NamespaceLister[T Object] struct {
	c         *core[T]
	namespace string
}

// List returns the objects of the namespace whose labels match selector,
// or [ErrNilSelector].
func (n NamespaceLister[T]) List(selector labels.Selector) ([]T, error) {
	return n.c.list(n.namespace, true, selector)
}

// ListSeq yields the objects of the namespace whose labels match selector,
// from a snapshot with no lock held while yielding.
func (n NamespaceLister[T]) ListSeq(selector labels.Selector) iter.Seq[T] {
	return n.c.listSeq(n.namespace, true, selector)
}

// Get returns the object called name in the namespace, a NotFound error
// naming the resource, or [ErrWrongScope] if the resource is
// cluster-scoped.
func (n NamespaceLister[T]) Get(name string) (T, error) {
	return n.c.get(Key{Namespace: n.namespace, Name: name}, true)
}

func (c *core[T]) get(k Key, namespaced bool) (T, error) {
	c.mu.RLock()
	obj, ok := c.items[k]
	scope := c.scopeLocked()
	c.mu.RUnlock()
	if ok {
		return obj, nil
	}
	switch {
	case namespaced && scope == ScopeCluster:
		return obj, fmt.Errorf("%w: %s is cluster-scoped: Namespace(%q).Get(%q) cannot find anything; use Get(%q)",
			ErrWrongScope, c.resource, k.Namespace, k.Name, k.Name)
	case !namespaced && scope == ScopeNamespaced:
		return obj, fmt.Errorf("%w: %s is namespaced: Get(%q) without a namespace cannot find anything; use Namespace(ns).Get(%q)",
			ErrWrongScope, c.resource, k.Name, k.Name)
	}
	return obj, apierrors.NewNotFound(c.resource, k.Name)
}

// scopeLocked is the declared scope, else the one the stored objects show.
func (c *core[T]) scopeLocked() Scope {
	if c.scope != ScopeUnknown || len(c.byNS) == 0 {
		return c.scope
	}
	_, cluster := c.byNS[""]
	switch {
	case cluster && len(c.byNS) == 1:
		return ScopeCluster
	case !cluster:
		return ScopeNamespaced
	}
	return ScopeUnknown
}

// query is a planned list: where the candidates come from and what is
// left to match on them.
type query struct {
	ns       string
	scoped   bool
	all      bool                 // every object matches: no label matching
	exact    bool                 // the candidates are the answer, after the namespace check
	residual []labels.Requirement // requirements the candidates do not prove
	whole    labels.Selector      // a selector without requirements to plan with: match it whole
}

func (c *core[T]) list(ns string, scoped bool, selector labels.Selector) ([]T, error) {
	if selector == nil {
		return nil, ErrNilSelector
	}
	b := c.getBuf()
	defer c.putBuf(b)
	q := c.candidates(b, ns, scoped, selector)
	var out []T
	if q.all || q.exact {
		out = make([]T, 0, len(b.objs)) // every candidate, or nearly, is in the answer
	}
	for _, obj := range b.objs {
		if q.matches(obj) {
			out = append(out, obj)
		}
	}
	if out == nil {
		out = []T{}
	}
	return out, nil
}

func (c *core[T]) listSeq(ns string, scoped bool, selector labels.Selector) iter.Seq[T] {
	return func(yield func(T) bool) {
		if selector == nil {
			return
		}
		b := c.getBuf()
		defer c.putBuf(b)
		q := c.candidates(b, ns, scoped, selector)
		for _, obj := range b.objs {
			if q.matches(obj) && !yield(obj) {
				return
			}
		}
	}
}

// matches checks what the candidate sets did not prove. It runs without
// the lock: a custom selector is user code.
func (q *query) matches(obj metav1.Object) bool {
	if q.scoped && obj.GetNamespace() != q.ns {
		return false
	}
	if q.all || q.exact {
		return true
	}
	ls := labels.Set(obj.GetLabels())
	if q.whole != nil {
		return q.whole.Matches(ls)
	}
	for i := range q.residual {
		if !q.residual[i].Matches(ls) {
			return false
		}
	}
	return true
}

// candidates copies into b, under the read lock, the objects that may
// match: those of the smallest key set an index offers for the selector
// (the namespace index, or a label index for one equality or set
// requirement), else every object.
func (c *core[T]) candidates(b *buffer[T], ns string, scoped bool, selector labels.Selector) *query {
	q := &query{ns: ns, scoped: scoped, all: selector.Empty()}
	reqs, selectable := selector.Requirements()
	if !q.all && !selectable {
		// labels.Nothing(), or a custom selector that does not list its
		// requirements: match it whole.
		q.whole = selector
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	var sets []keySet
	n, pick := -1, -1
	if scoped {
		sets, n = []keySet{c.byNS[ns]}, len(c.byNS[ns])
	}
	if !q.all && selectable {
		for i, r := range reqs {
			rs, rn, ok := c.labelSetsLocked(r)
			if ok && (n < 0 || rn < n) {
				sets, n, pick = rs, rn, i
			}
		}
	}
	if pick >= 0 {
		q.residual = append(reqs[:pick:pick], reqs[pick+1:]...)
		q.exact = len(q.residual) == 0
	} else if !q.all {
		q.residual = reqs
	}
	if scoped && pick < 0 {
		// The candidates are the namespace's: checking each one's
		// namespace again would only cost a read of every object.
		q.scoped = false
	}
	if n < 0 {
		for _, obj := range c.items {
			b.objs = append(b.objs, obj)
		}
	} else {
		for _, set := range sets {
			for k := range set {
				b.objs = append(b.objs, c.items[k])
			}
		}
	}
	return q
}

// labelSetsLocked returns the key sets of a label index that answer r
// exactly: an Equals or In requirement on an indexed label.
func (c *core[T]) labelSetsLocked(r labels.Requirement) ([]keySet, int, bool) {
	switch r.Operator() {
	case selection.Equals, selection.DoubleEquals, selection.In:
	default:
		return nil, 0, false
	}
	i := -1
	for j, lk := range c.labelKeys {
		if lk == r.Key() {
			i = j
			break
		}
	}
	if i < 0 {
		return nil, 0, false
	}
	vals := r.Values() // a set: a repeated value does not count twice
	sets := make([]keySet, 0, len(vals))
	n := 0
	for v := range vals {
		sets = append(sets, c.labels[i][v])
		n += len(c.labels[i][v])
	}
	return sets, n, true
}
