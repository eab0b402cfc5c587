package cache

import (
	"errors"
	"fmt"
	"iter"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// store's label indexes are answered from the index; other requirements
// are matched on the candidates, most of which the summary of their labels
// rules out unread (see the package documentation, "Scans").
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
	s, ok := c.tab.get(k)
	scope := c.scopeLocked()
	c.mu.RUnlock()
	obj := s.obj
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
	if c.scope != ScopeUnknown || len(c.tab.ns) == 0 {
		return c.scope
	}
	_, cluster := c.tab.ns[""]
	switch {
	case cluster && len(c.tab.ns) == 1:
		return ScopeCluster
	case !cluster:
		return ScopeNamespaced
	}
	return ScopeUnknown
}

// query is a planned list: where the candidates come from and what is
// left to match on them.
type query[T Object] struct {
	ns       string
	scoped   bool
	all      bool                 // every object matches: no label matching
	exact    bool                 // the candidates are the answer, after the namespace check
	residual []labels.Requirement // requirements the candidates do not prove
	masks    [][]uint64           // per residual Equals or In requirement, the pairMask of each value
	whole    labels.Selector      // a selector without requirements to plan with: match it whole
	reqs     []labels.Requirement // the selector's requirements
	sets     []*posting[T]        // candidates from a label index; nil: the table or its namespace
	n        int                  // candidates, when known; -1 otherwise
}

func newQuery[T Object](ns string, scoped bool, selector labels.Selector) *query[T] {
	q := &query[T]{ns: ns, scoped: scoped, all: selector.Empty(), n: -1}
	reqs, selectable := selector.Requirements()
	if !q.all && !selectable {
		// labels.Nothing(), or a custom selector that does not list its
		// requirements: match it whole, as user code, without the lock.
		q.whole = selector
	}
	if !q.all && selectable {
		q.reqs = reqs
	}
	return q
}

func (c *core[T]) list(ns string, scoped bool, selector labels.Selector) ([]T, error) {
	if selector == nil {
		return nil, ErrNilSelector
	}
	q := newQuery[T](ns, scoped, selector)
	if q.whole == nil {
		c.rlockPlanned(q)
		if q.n >= 0 {
			defer c.mu.RUnlock()
			out := make([]T, 0, q.n)
			if q.exact && !q.scoped {
				for _, p := range q.sets { // the answer, as the index holds it
					out = append(out, p.objs...)
				}
				return out, nil
			}
			c.scanLocked(q, func(obj T) { out = append(out, obj) })
			return out, nil
		}
		// The number of matches is unknown: collect them in a reused
		// buffer and return a copy of exactly their size.
		b := c.getBuf()
		defer c.putBuf(b)
		c.scanLocked(q, func(obj T) { b.objs = append(b.objs, obj) })
		c.mu.RUnlock()
		return append(make([]T, 0, len(b.objs)), b.objs...), nil
	}
	b := c.getBuf()
	defer c.putBuf(b)
	c.rlockPlanned(q)
	c.scanLocked(q, func(obj T) { b.objs = append(b.objs, obj) })
	c.mu.RUnlock()
	out := []T{}
	for _, obj := range b.objs {
		if q.whole.Matches(labels.Set(obj.GetLabels())) {
			out = append(out, obj)
		}
	}
	return out, nil
}

func (c *core[T]) listSeq(ns string, scoped bool, selector labels.Selector) iter.Seq[T] {
	return func(yield func(T) bool) {
		if selector == nil {
			return
		}
		q := newQuery[T](ns, scoped, selector)
		b := c.getBuf()
		defer c.putBuf(b)
		c.rlockPlanned(q)
		c.scanLocked(q, func(obj T) { b.objs = append(b.objs, obj) })
		c.mu.RUnlock()
		for _, obj := range b.objs {
			if q.whole != nil && !q.whole.Matches(labels.Set(obj.GetLabels())) {
				continue
			}
			if !yield(obj) {
				return
			}
		}
	}
}

// matches checks what the candidates did not prove against the labels of
// a candidate in the table, whose slot is s. A custom selector (q.whole)
// is matched by the caller, without the lock. The slot's bloom rules out
// most objects an Equals or In requirement does not select without reading
// their labels.
func (q *query[T]) matches(s slot[T]) bool {
	if q.all || q.exact || q.whole != nil {
		return true
	}
	for _, ms := range q.masks {
		found := false
		for _, m := range ms {
			if s.bloom&m == m {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return q.matchLabels(s.obj.GetLabels())
}

func (q *query[T]) matchLabels(set labels.Set) bool {
	for i := range q.residual {
		if !q.residual[i].Matches(set) {
			return false
		}
	}
	return true
}

// planMasks computes the masks of q's residual requirements.
func (q *query[T]) planMasks() {
	q.masks = q.masks[:0]
	for _, r := range q.residual {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
		default:
			continue
		}
		ms := make([]uint64, 0, r.Values().Len())
		for v := range r.Values() {
			ms = append(ms, pairMask(r.Key(), v))
		}
		q.masks = append(q.masks, ms)
	}
}

// rlockPlanned takes the read lock and plans q. A query with labels to
// match on its candidates labels the table first, once for the store's
// life (with the write lock, for a moment as long as a relist's write).
func (c *core[T]) rlockPlanned(q *query[T]) {
	c.mu.RLock()
	c.planLocked(q)
	if c.tab.labeled || len(q.residual) == 0 {
		return
	}
	c.mu.RUnlock()
	c.mu.Lock()
	c.tab.label()
	c.mu.Unlock()
	c.mu.RLock()
	c.planLocked(q) // the content may have changed meanwhile
}

// planLocked picks the smallest candidate set an index offers for the
// selector: the namespace, or a label index for one equality or set
// requirement, else every object.
func (c *core[T]) planLocked(q *query[T]) {
	q.sets, q.residual, q.exact, q.n = nil, nil, false, -1
	if q.scoped {
		q.n = len(c.tab.ns[q.ns])
	} else if q.all {
		q.n = c.tab.n
	}
	pick := -1
	for i, r := range q.reqs {
		rs, rn, ok := c.postingsLocked(r)
		if ok && (q.n < 0 || rn < q.n) {
			q.sets, q.n, pick = rs, rn, i
		}
	}
	if pick >= 0 {
		q.residual = append(q.reqs[:pick:pick], q.reqs[pick+1:]...)
		q.exact = len(q.residual) == 0
	} else {
		q.residual = q.reqs
	}
	if !q.all && !q.exact {
		q.n = -1 // only an upper bound
	}
	q.planMasks()
}

// scanLocked calls f with every candidate that matches q, holding the
// read lock. Slots are read in place: the objects of a scan are only read
// when their slot's bloom does not rule them out, and the objects of a
// label index are held in the index.
func (c *core[T]) scanLocked(q *query[T], f func(T)) {
	switch {
	case q.sets != nil:
		for _, p := range q.sets {
			for i, obj := range p.objs {
				if q.scoped && p.keys[i].Namespace != q.ns {
					continue
				}
				if q.exact || q.matchLabels(obj.GetLabels()) {
					f(obj)
				}
			}
		}
	case q.scoped:
		for _, s := range c.tab.ns[q.ns] {
			if q.matches(s) {
				f(s.obj)
			}
		}
	default:
		for _, m := range c.tab.ns {
			for _, s := range m {
				if q.matches(s) {
					f(s.obj)
				}
			}
		}
	}
}

// postingsLocked returns the postings of a label index that answer r
// exactly: an Equals or In requirement on an indexed label.
func (c *core[T]) postingsLocked(r labels.Requirement) ([]*posting[T], int, bool) {
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
	sets := make([]*posting[T], 0, len(vals))
	n := 0
	for v := range vals {
		if p := c.labels[i][v]; p != nil {
			sets = append(sets, p)
			n += len(p.objs)
		}
	}
	return sets, n, true
}
