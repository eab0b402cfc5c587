package informertest

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

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

// Counts says how many calls of each kind a recorder got.
type Counts struct {
	// Adds counts OnAdd calls, InitialAdds those with isInInitialList.
	Adds, InitialAdds int
	// Updates counts OnUpdate calls, Resyncs those with old == new.
	Updates, Resyncs int
	// Deletes counts OnDelete calls, FinalStateUnknown those inferred
	// from a relist, MovedOut those of objects that left a shard.
	Deletes, FinalStateUnknown, MovedOut int
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
	c.MovedOut += o.MovedOut
}

// Event is one call a recorder got for a key.
type Event struct {
	// Kind is "add", "update" or "delete".
	Kind string
	// RV and UID are the object's.
	RV  string
	UID types.UID
	// Initial is an Add's isInInitialList.
	Initial bool
	// FSU and Moved are a Delete's FinalStateUnknown and MovedOut.
	FSU, Moved bool
}

// maxViolations bounds what a recorder keeps: the first ones say what
// broke.
const maxViolations = 100

// RecorderOptions configure NewRecorder. The zero value records every call
// and checks I2 to I4.
type RecorderOptions struct {
	// Name starts each of the recorder's violations. Default: none.
	Name string
	// CheckMutations keeps a deep copy of every object the recorder is
	// given, and checks, at the next call for its key and in Check, that
	// the object did not change since (I7: nobody mutated a cached
	// object). Default: false; a copy per object costs.
	CheckMutations bool
}

// Recorder is a handler.Handler that records every call it gets, by key,
// and checks each against the ones before, as docs/reliability.md states
// the invariants: I3 (per key, resourceVersions never decrease, across a
// key's lives too), I4 (no Add for a key it has, no Update or Delete for
// one it does not), an Update's old object being the one last delivered,
// with its UID, a Delete carrying an object of its key, and, with
// RecorderOptions.CheckMutations, I7. Replay is its view (I2: it must equal
// the server's final list). All methods are safe for concurrent use.
type Recorder[T cache.Object] struct {
	opts   RecorderOptions
	onCall func() // a Checker's check of its informers, before each call

	mu         sync.Mutex
	have       map[cache.Key]T
	copies     map[cache.Key]T     // with CheckMutations
	lastRV     map[cache.Key]int64 // survives deletes: RVs only grow across a key's lives
	events     map[cache.Key][]Event
	counts     Counts
	violations []string
	dropped    int
}

// NewRecorder returns an empty recorder. Its checks of versions (a key's
// resourceVersion never goes back, no stale state) need a source that
// sets them, as sourcetest.Fake and an API server do; client-go's fake
// clientset sets neither resourceVersions nor UIDs, so over it the
// recorder compares keys and events only.
func NewRecorder[T cache.Object](opts RecorderOptions) *Recorder[T] {
	return &Recorder[T]{opts: opts, have: map[cache.Key]T{}, copies: map[cache.Key]T{},
		lastRV: map[cache.Key]int64{}, events: map[cache.Key][]Event{}}
}

func (r *Recorder[T]) violateLocked(format string, args ...any) {
	if len(r.violations) >= maxViolations {
		r.dropped++
		return
	}
	v := fmt.Sprintf(format, args...)
	if r.opts.Name != "" {
		v = r.opts.Name + ": " + v
	}
	r.violations = append(r.violations, v)
}

// checkUnchangedLocked reports (I7) a mutation of the object last
// delivered for k, which must still equal the copy taken then.
func (r *Recorder[T]) checkUnchangedLocked(k cache.Key) {
	obj, ok := r.have[k]
	if !ok || !r.opts.CheckMutations {
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

// keepLocked makes obj the object of k, and records e.
func (r *Recorder[T]) keepLocked(k cache.Key, obj T, e Event) {
	r.have[k] = obj
	if r.opts.CheckMutations {
		if cp, ok := obj.DeepCopyObject().(T); ok {
			r.copies[k] = cp
		}
	}
	r.recordLocked(k, e)
}

func (r *Recorder[T]) recordLocked(k cache.Key, e Event) {
	r.events[k] = append(r.events[k], e)
	rv, err := strconv.ParseInt(e.RV, 10, 64)
	if err != nil {
		return // not a server's version: nothing to order
	}
	if prev, ok := r.lastRV[k]; ok && rv < prev {
		r.violateLocked("I3 %v: %s at RV %d after RV %d", k, e.Kind, rv, prev)
	}
	r.lastRV[k] = rv
}

// OnAdd records an Add: the key must be absent (I4).
func (r *Recorder[T]) OnAdd(obj T, initial bool) {
	if r.onCall != nil {
		r.onCall()
	}
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
	if prev, ok := r.have[k]; ok {
		r.checkUnchangedLocked(k)
		r.violateLocked("I4 %v: Add (RV %s) while the handler has it (RV %s)", k, obj.GetResourceVersion(), prev.GetResourceVersion())
	}
	r.keepLocked(k, obj, Event{Kind: "add", RV: obj.GetResourceVersion(), UID: obj.GetUID(), Initial: initial})
}

// OnUpdate records an Update: the key must be present, old must be the
// object last delivered, and both must have one UID.
func (r *Recorder[T]) OnUpdate(old, cur T) {
	if r.onCall != nil {
		r.onCall()
	}
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
	if o, c := old.GetUID(), cur.GetUID(); o != "" && c != "" && o != c {
		r.violateLocked("%v: Update between two UIDs (%s, %s)", k, o, c)
	}
	r.checkUnchangedLocked(k)
	r.keepLocked(k, cur, Event{Kind: "update", RV: cur.GetResourceVersion(), UID: cur.GetUID()})
}

// OnDelete records a Delete: the key must be present (I4), but for a
// deletion that says the object moved out of a shard, which may overtake
// the object's Add (handler.Deleted.MovedOut).
func (r *Recorder[T]) OnDelete(d handler.Deleted[T]) {
	if r.onCall != nil {
		r.onCall()
	}
	var zero T
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts.Deletes++
	if d.FinalStateUnknown {
		r.counts.FinalStateUnknown++
	}
	if d.MovedOut {
		r.counts.MovedOut++
	}
	if _, ok := r.have[d.Key]; !ok && !d.MovedOut {
		r.violateLocked("I4 %v: Delete while the handler does not have it", d.Key)
	}
	r.checkUnchangedLocked(d.Key)
	switch {
	case d.Object == zero:
		r.violateLocked("%v: Delete without the object", d.Key)
		return
	case cache.KeyOf(d.Object) != d.Key:
		r.violateLocked("%v: Delete of an object with key %v", d.Key, cache.KeyOf(d.Object))
	}
	delete(r.have, d.Key)
	delete(r.copies, d.Key)
	r.recordLocked(d.Key, Event{Kind: "delete", RV: d.Object.GetResourceVersion(), UID: d.Object.GetUID(), FSU: d.FinalStateUnknown, Moved: d.MovedOut})
}

// Events returns the calls recorded for k, in order.
func (r *Recorder[T]) Events(k cache.Key) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events[k])
}

// All returns every recorded call, by key.
func (r *Recorder[T]) All() map[cache.Key][]Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[cache.Key][]Event, len(r.events))
	for k, evs := range r.events {
		out[k] = slices.Clone(evs)
	}
	return out
}

// Replay is the recorder's view: its calls replayed into an empty map.
func (r *Recorder[T]) Replay() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := make(State, len(r.have))
	for k, obj := range r.have {
		s[k] = stateOf(obj)
	}
	return s
}

// Counts returns how many calls of each kind the recorder got.
func (r *Recorder[T]) Counts() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts
}

// Violations returns the invariant violations seen so far (the first
// 100, and a line saying how many more).
func (r *Recorder[T]) Violations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.violationsLocked()
}

func (r *Recorder[T]) violationsLocked() []string {
	out := slices.Clone(r.violations)
	if r.dropped > 0 {
		out = append(out, fmt.Sprintf("... and %d more", r.dropped))
	}
	return out
}

// Check fails t unless the recorder's view equals want (I2), the last call
// of every key the recorder heard of that want lacks is a Delete, and no
// invariant was violated; with CheckMutations, it checks every object it
// holds for a mutation first (I7). The diff is printed only when the
// states differ: diffing large equal maps is slow under -race.
func (r *Recorder[T]) Check(t testing.TB, want State) {
	t.Helper()
	if got := r.Replay(); !maps.Equal(want, got) {
		t.Errorf("I2: the handler's view differs from the truth (-want +got):\n%s", truncate(cmp.Diff(want, got)))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range sortedKeys(r.have) {
		r.checkUnchangedLocked(k)
	}
	for k, evs := range r.events {
		if last := evs[len(evs)-1]; last.Kind != "delete" {
			if _, ok := want[k]; !ok {
				t.Errorf("I2 %v: last call %+v, but the object is gone", k, last)
			}
		}
	}
	if v := r.violationsLocked(); len(v) > 0 {
		t.Errorf("%d invariant violations, first: %v", len(v), v[:min(10, len(v))])
	}
}

// final checks the objects the recorder holds for mutations (I7) and
// returns its violations.
func (r *Recorder[T]) final() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range sortedKeys(r.have) {
		r.checkUnchangedLocked(k)
	}
	return r.violationsLocked()
}

func sortedKeys[V any](m map[cache.Key]V) []cache.Key {
	keys := make([]cache.Key, 0, len(m))
	for k := range maps.Keys(m) {
		keys = append(keys, k)
	}
	sortKeys(keys)
	return keys
}
