package informertest

import (
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"sync"

	"github.com/google/go-cmp/cmp"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
)

// State is what the invariants compare of a set of objects: each key's
// "resourceVersion/uid".
type State map[cache.Key]string

// StateOf returns the state of objs.
func StateOf[T cache.Object](objs []T) State {
	s := make(State, len(objs))
	for _, o := range objs {
		s[cache.KeyOf(o)] = stateOf(o)
	}
	return s
}

func stateOf[T cache.Object](o T) string {
	return o.GetResourceVersion() + "/" + string(o.GetUID())
}

// Counts says how many calls of each kind a checker's handlers got.
type Counts struct {
	// Adds counts OnAdd calls, InitialAdds those with isInInitialList.
	Adds, InitialAdds int
	// Updates counts OnUpdate calls, Resyncs those with old == new.
	Updates, Resyncs int
	// Deletes counts OnDelete calls, FinalStateUnknown those inferred
	// from a relist.
	Deletes, FinalStateUnknown int
}

// Total is the number of calls.
func (c Counts) Total() int { return c.Adds + c.Updates + c.Deletes }

func (c *Counts) add(o Counts) {
	c.Adds += o.Adds
	c.InitialAdds += o.InitialAdds
	c.Updates += o.Updates
	c.Resyncs += o.Resyncs
	c.Deletes += o.Deletes
	c.FinalStateUnknown += o.FinalStateUnknown
}

// maxViolations bounds what a recorder keeps: the first ones say what
// broke.
const maxViolations = 100

// recorder is one handler of a checker: it keeps, per key, the object it
// was last given and a deep copy of it (I7), and checks each call against
// the ones before (I3, I4, and that an Update's old object is the one
// last delivered).
type recorder[T cache.Object] struct {
	c    *Checker[T]
	name string

	mu         sync.Mutex
	have       map[cache.Key]T
	copies     map[cache.Key]T
	lastRV     map[cache.Key]int64 // survives deletes: RVs only grow across a key's lives
	counts     Counts
	violations []string
	dropped    int
}

func newRecorder[T cache.Object](c *Checker[T], name string) *recorder[T] {
	return &recorder[T]{c: c, name: name, have: map[cache.Key]T{}, copies: map[cache.Key]T{}, lastRV: map[cache.Key]int64{}}
}

func (r *recorder[T]) violateLocked(format string, args ...any) {
	if len(r.violations) >= maxViolations {
		r.dropped++
		return
	}
	r.violations = append(r.violations, r.name+": "+fmt.Sprintf(format, args...))
}

// checkUnchangedLocked reports (I7) a mutation of the object last
// delivered for k, which must still equal the copy taken then.
func (r *recorder[T]) checkUnchangedLocked(k cache.Key) {
	obj, ok := r.have[k]
	if !ok {
		return
	}
	if cp := r.copies[k]; !apiequality.Semantic.DeepEqual(cp, obj) {
		r.violateLocked("I7 %v: the object delivered at RV %s was mutated since (-delivered +now):\n%s",
			k, cp.GetResourceVersion(), truncate(cmp.Diff(cp, obj, allFields)))
	}
}

// allFields lets cmp look into the unexported fields of API types
// (resource.Quantity).
var allFields = cmp.Exporter(func(reflect.Type) bool { return true })

// keepLocked makes obj the object of k, with a copy to check it against.
func (r *recorder[T]) keepLocked(k cache.Key, obj T) {
	r.have[k] = obj
	if cp, ok := obj.DeepCopyObject().(T); ok {
		r.copies[k] = cp
	}
	rv, err := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
	if err != nil {
		return // not a server's version: nothing to order
	}
	if prev, ok := r.lastRV[k]; ok && rv < prev {
		r.violateLocked("I3 %v: RV %d after RV %d", k, rv, prev)
	}
	r.lastRV[k] = rv
}

// OnAdd records an Add: the key must be absent (I4).
func (r *recorder[T]) OnAdd(obj T, initial bool) {
	r.c.sample()
	var zero T
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts.Adds++
	if initial {
		r.counts.InitialAdds++
	}
	if obj == zero {
		r.violateLocked("Add of a nil object")
		return
	}
	k := cache.KeyOf(obj)
	if _, ok := r.have[k]; ok {
		r.checkUnchangedLocked(k)
		r.violateLocked("I4 %v: Add (RV %s) while the handler has it (RV %s)", k, obj.GetResourceVersion(), r.have[k].GetResourceVersion())
	}
	r.keepLocked(k, obj)
}

// OnUpdate records an Update: the key must be present, old must be the
// object last delivered, and both must have one UID.
func (r *recorder[T]) OnUpdate(old, cur T) {
	r.c.sample()
	var zero T
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts.Updates++
	if old == cur {
		r.counts.Resyncs++
	}
	if cur == zero || old == zero {
		r.violateLocked("Update with a nil object")
		return
	}
	k := cache.KeyOf(cur)
	prev, ok := r.have[k]
	switch {
	case !ok:
		r.violateLocked("I4 %v: Update (RV %s) while the handler does not have it", k, cur.GetResourceVersion())
	case prev != old:
		r.violateLocked("%v: Update's old object (RV %s) is not the one last delivered (RV %s)", k, old.GetResourceVersion(), prev.GetResourceVersion())
	}
	if cache.KeyOf(old) != k {
		r.violateLocked("%v: Update from an object with key %v", k, cache.KeyOf(old))
	}
	if old.GetUID() != cur.GetUID() {
		r.violateLocked("%v: Update between two UIDs (%s, %s)", k, old.GetUID(), cur.GetUID())
	}
	r.checkUnchangedLocked(k)
	r.keepLocked(k, cur)
}

// OnDelete records a Delete: the key must be present (I4).
func (r *recorder[T]) OnDelete(d handler.Deleted[T]) {
	r.c.sample()
	var zero T
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts.Deletes++
	if d.FinalStateUnknown {
		r.counts.FinalStateUnknown++
	}
	if _, ok := r.have[d.Key]; !ok {
		r.violateLocked("I4 %v: Delete while the handler does not have it", d.Key)
		return
	}
	r.checkUnchangedLocked(d.Key)
	switch {
	case d.Object == zero:
		r.violateLocked("%v: Delete without the object", d.Key)
	case cache.KeyOf(d.Object) != d.Key:
		r.violateLocked("%v: Delete of an object with key %v", d.Key, cache.KeyOf(d.Object))
	}
	delete(r.have, d.Key)
	delete(r.copies, d.Key)
}

// state is the handler's view: its calls replayed into an empty map (I2).
func (r *recorder[T]) state() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := make(State, len(r.have))
	for k, obj := range r.have {
		s[k] = stateOf(obj)
	}
	return s
}

// final checks the objects the handler holds for mutations (I7) and
// returns its violations and counts.
func (r *recorder[T]) final() ([]string, int, Counts) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range sortedKeys(r.have) {
		r.checkUnchangedLocked(k)
	}
	return append([]string(nil), r.violations...), r.dropped, r.counts
}

func sortedKeys[V any](m map[cache.Key]V) []cache.Key {
	keys := make([]cache.Key, 0, len(m))
	for k := range maps.Keys(m) {
		keys = append(keys, k)
	}
	sortKeys(keys)
	return keys
}
