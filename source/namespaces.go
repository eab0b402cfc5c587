package source

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ErrNamespaceSet is wrapped by every error about a [Namespaces] set: an
// empty set, a name given twice, a name that is not a namespace's, a
// namespace added that is there or removed that is not.
var ErrNamespaceSet = errors.New("source: invalid namespace set")

// Namespaces is a set of namespaces that may change while the informers
// over it run (see [InNamespaces]): a multi-tenant operator that may not
// list cluster-wide adds a tenant's namespace when it is onboarded and
// removes it when it leaves. It is never empty. It is safe for concurrent
// use.
type Namespaces struct {
	mu      sync.Mutex
	names   []string // sorted, no duplicates, never empty
	gen     uint64   // bumped by every change
	changed chan struct{}
}

// NewNamespaces returns the set of names. It fails, with an error wrapping
// ErrNamespaceSet, for no names, a name given twice, and a name that is
// not a valid namespace name ("" is not one: for every namespace, use an
// informer without a set).
func NewNamespaces(names ...string) (*Namespaces, error) {
	set, err := checkNames("NewNamespaces", names)
	if err != nil {
		return nil, err
	}
	return &Namespaces{names: set, gen: 1, changed: make(chan struct{})}, nil
}

// checkNames validates names and returns them sorted.
func checkNames(op string, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: %s: no namespace: a set holds at least one", ErrNamespaceSet, op)
	}
	set := slices.Clone(names)
	slices.Sort(set)
	for i, n := range set {
		if msgs := validation.IsDNS1123Label(n); len(msgs) > 0 {
			return nil, fmt.Errorf("%w: %s: %q is not a namespace name: %s", ErrNamespaceSet, op, n, strings.Join(msgs, "; "))
		}
		if i > 0 && set[i-1] == n {
			return nil, fmt.Errorf("%w: %s: namespace %q given twice", ErrNamespaceSet, op, n)
		}
	}
	return set, nil
}

// Names returns the namespaces of the set, sorted.
func (n *Namespaces) Names() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.names)
}

// Has reports whether ns is in the set.
func (n *Namespaces) Has(ns string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := slices.BinarySearch(n.names, ns)
	return ok
}

// String is the set as "a,b,c".
func (n *Namespaces) String() string { return strings.Join(n.Names(), ",") }

// Add adds namespaces to the set. It fails, and changes nothing, for a
// name that is in the set already, given twice, or invalid.
func (n *Namespaces) Add(names ...string) error {
	add, err := checkNames("Add", names)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, a := range add {
		if _, ok := slices.BinarySearch(n.names, a); ok {
			return fmt.Errorf("%w: Add: namespace %q is in the set already", ErrNamespaceSet, a)
		}
	}
	n.setLocked(append(slices.Clone(n.names), add...))
	return nil
}

// Remove removes namespaces from the set. It fails, and changes nothing,
// for a name that is not in the set, and when it would leave the set
// empty: stop the informer instead.
func (n *Namespaces) Remove(names ...string) error {
	rm, err := checkNames("Remove", names)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, r := range rm {
		if _, ok := slices.BinarySearch(n.names, r); !ok {
			return fmt.Errorf("%w: Remove: namespace %q is not in the set", ErrNamespaceSet, r)
		}
	}
	if len(rm) == len(n.names) {
		return fmt.Errorf("%w: Remove: removing %s would leave the set empty", ErrNamespaceSet, strings.Join(rm, ","))
	}
	n.setLocked(slices.DeleteFunc(slices.Clone(n.names), func(s string) bool {
		_, ok := slices.BinarySearch(rm, s)
		return ok
	}))
	return nil
}

// Set makes the set exactly names, as a controller that follows a list of
// tenants does; it does nothing if the set is names already. It fails,
// and changes nothing, for no names, a name given twice, or an invalid
// one.
func (n *Namespaces) Set(names ...string) error {
	set, err := checkNames("Set", names)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !slices.Equal(set, n.names) {
		n.setLocked(set)
	}
	return nil
}

// setLocked installs names (valid, unsorted) and tells the watchers.
func (n *Namespaces) setLocked(names []string) {
	slices.Sort(names)
	n.names = names
	n.gen++
	close(n.changed)
	n.changed = make(chan struct{})
}

// snapshot is the set now, its generation, and a channel closed at its
// next change.
func (n *Namespaces) snapshot() ([]string, uint64, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.names), n.gen, n.changed
}

// generation is the set's generation now.
func (n *Namespaces) generation() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.gen
}
