package informertest

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
)

// Event is what a recorder saw for one key.
type Event struct {
	Kind    string // add, update, delete
	RV      string
	UID     types.UID
	FSU     bool
	Moved   bool // a deletion that says the object moved out of the shard
	Initial bool
}

// Recorder is the ObjectRecorder of pods, what the module's unit tests use.
type Recorder = ObjectRecorder[*corev1.Pod]

// NewRecorder returns an empty recorder of pods.
func NewRecorder() *Recorder { return NewObjectRecorder[*corev1.Pod]() }

// ObjectRecorder is a handler that records every call per key and checks
// the invariants of RELIABILITY.md as it goes: I3 (per-key
// resourceVersions never decrease) and I4 (no Add for a key it has, no
// Delete or Update for a key it does not have); and that every call is
// consistent with the ones before: an Update's old object is the object
// last delivered for its key and has its UID, a Delete carries an object
// of its key.
type ObjectRecorder[T cache.Object] struct {
	mu         sync.Mutex
	events     map[cache.Key][]Event
	have       map[cache.Key]T
	calls      int
	violations []string
}

// NewObjectRecorder returns an empty recorder of objects of type T.
func NewObjectRecorder[T cache.Object]() *ObjectRecorder[T] {
	return &ObjectRecorder[T]{events: map[cache.Key][]Event{}, have: map[cache.Key]T{}}
}

func rvOf(rv string) int64 {
	n, _ := strconv.ParseInt(rv, 10, 64)
	return n
}

func (r *ObjectRecorder[T]) violate(format string, args ...any) {
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
}

func (r *ObjectRecorder[T]) record(k cache.Key, e Event) {
	evs := r.events[k]
	// A new UID under the same key is a new object: RVs still only grow,
	// since a server's resourceVersions are global.
	if n := len(evs); n > 0 && e.RV != "" && evs[n-1].RV != "" {
		if cur, prev := rvOf(e.RV), rvOf(evs[n-1].RV); cur < prev {
			r.violate("I3 %v: %s RV %d after RV %d", k, e.Kind, cur, prev)
		}
	}
	r.events[k] = append(evs, e)
}

// Handler returns the handler that records into r.
func (r *ObjectRecorder[T]) Handler() handler.Funcs[T] {
	var zero T
	return handler.Funcs[T]{
		AddFunc: func(obj T, initial bool) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.calls++
			k := cache.KeyOf(obj)
			if _, ok := r.have[k]; ok {
				r.violate("I4 %v: Add while present", k)
			}
			r.have[k] = obj
			r.record(k, Event{Kind: "add", RV: obj.GetResourceVersion(), UID: obj.GetUID(), Initial: initial})
		},
		UpdateFunc: func(old, cur T) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.calls++
			k := cache.KeyOf(cur)
			prev, ok := r.have[k]
			switch {
			case !ok:
				r.violate("I4 %v: Update while absent", k)
			case prev != old:
				r.violate("%v: Update's old object (RV %s) is not the last one delivered (RV %s)",
					k, old.GetResourceVersion(), prev.GetResourceVersion())
			}
			if old.GetUID() != "" && cur.GetUID() != "" && old.GetUID() != cur.GetUID() {
				r.violate("%v: Update between two UIDs", k)
			}
			r.have[k] = cur
			r.record(k, Event{Kind: "update", RV: cur.GetResourceVersion(), UID: cur.GetUID()})
		},
		DeleteFunc: func(d handler.Deleted[T]) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.calls++
			if _, ok := r.have[d.Key]; !ok {
				r.violate("I4 %v: Delete while absent", d.Key)
			}
			if d.Object == zero {
				r.violate("%v: Delete without object", d.Key)
				return
			}
			if k := cache.KeyOf(d.Object); k != d.Key {
				r.violate("%v: Delete of an object with key %v", d.Key, k)
			}
			delete(r.have, d.Key)
			r.record(d.Key, Event{Kind: "delete", RV: d.Object.GetResourceVersion(), UID: d.Object.GetUID(), FSU: d.FinalStateUnknown, Moved: d.MovedOut})
		},
	}
}

// Replay is the recorder's view: its events replayed into an empty map
// (RELIABILITY.md I2: this must equal the server's final list).
func (r *ObjectRecorder[T]) Replay() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := State{}
	for k, obj := range r.have {
		s[k] = obj.GetResourceVersion() + "/" + string(obj.GetUID())
	}
	return s
}

// Events returns a copy of the events recorded for k.
func (r *ObjectRecorder[T]) Events(k cache.Key) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events[k])
}

// All returns a copy of every recorded event, by key.
func (r *ObjectRecorder[T]) All() map[cache.Key][]Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[cache.Key][]Event, len(r.events))
	for k, evs := range r.events {
		out[k] = slices.Clone(evs)
	}
	return out
}

// Count returns how many events of kind were recorded.
func (r *ObjectRecorder[T]) Count(kind string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, evs := range r.events {
		for _, e := range evs {
			if e.Kind == kind {
				n++
			}
		}
	}
	return n
}

// Calls returns how many times the handler was called.
func (r *ObjectRecorder[T]) Calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// Kinds counts the recorded events by kind, with final-state-unknown
// deletes as "delete(fsu)" and initial adds as "add(initial)": a summary
// for test logs.
func (r *ObjectRecorder[T]) Kinds() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for _, evs := range r.events {
		for _, e := range evs {
			k := e.Kind
			if e.FSU {
				k += "(fsu)"
			}
			if e.Initial {
				k += "(initial)"
			}
			out[k]++
		}
	}
	return out
}

// Violations returns the invariant violations seen so far.
func (r *ObjectRecorder[T]) Violations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.violations)
}

// Check fails t unless the recorder's last events match want (I2) and no
// invariant was violated (I3, I4). The diff is printed only when the
// states differ: diffing large equal maps is slow under -race.
func (r *ObjectRecorder[T]) Check(t testing.TB, want State) {
	t.Helper()
	if got := r.Replay(); !maps.Equal(want, got) {
		t.Errorf("I2: handler's last events differ from the server (-want +got):\n%s", truncate(cmp.Diff(want, got)))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, evs := range r.events {
		last := evs[len(evs)-1]
		if _, exists := want[k]; !exists && last.Kind != "delete" {
			t.Errorf("I2 %v: last event %+v but the object is gone", k, last)
		}
	}
	if len(r.violations) > 0 {
		t.Errorf("%d invariant violations, first: %v", len(r.violations), r.violations[:min(10, len(r.violations))])
	}
}
