//go:build integration

package integration

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
)

// event is what a recorder saw for one key.
type event struct {
	Kind    string // add, update, delete
	RV      string
	UID     types.UID
	FSU     bool
	Initial bool
}

// recorder is a handler that records every call per key and checks, as it
// goes, the invariants of RELIABILITY.md a single handler can see: I3 (per
// key, resourceVersions never decrease) and I4 (no Add for a key it has, no
// Update or Delete for a key it does not have). It is the recorder of
// typed/recorder_test.go, for any object type.
type recorder[T cache.Object] struct {
	mu         sync.Mutex
	events     map[cache.Key][]event
	have       map[cache.Key]T
	calls      int
	violations []string
}

func newRecorder[T cache.Object]() *recorder[T] {
	return &recorder[T]{events: map[cache.Key][]event{}, have: map[cache.Key]T{}}
}

func rvNum(rv string) int64 {
	n, _ := strconv.ParseInt(rv, 10, 64)
	return n
}

func (r *recorder[T]) record(k cache.Key, e event) {
	r.calls++
	evs := r.events[k]
	if n := len(evs); n > 0 && e.RV != "" {
		// A new UID under the same key is a new object: RVs still only
		// grow, since etcd revisions are global.
		if cur, prev := rvNum(e.RV), rvNum(evs[n-1].RV); cur < prev {
			r.violations = append(r.violations, fmt.Sprintf("I3 %v: %s RV %d after RV %d", k, e.Kind, cur, prev))
		}
	}
	r.events[k] = append(evs, e)
}

func (r *recorder[T]) handler() handler.Funcs[T] {
	var zero T
	return handler.Funcs[T]{
		AddFunc: func(obj T, initial bool) {
			r.mu.Lock()
			defer r.mu.Unlock()
			k := cache.KeyOf(obj)
			if _, ok := r.have[k]; ok {
				r.violations = append(r.violations, fmt.Sprintf("I4 %v: Add while present", k))
			}
			r.have[k] = obj
			r.record(k, event{Kind: "add", RV: obj.GetResourceVersion(), UID: obj.GetUID(), Initial: initial})
		},
		UpdateFunc: func(old, cur T) {
			r.mu.Lock()
			defer r.mu.Unlock()
			k := cache.KeyOf(cur)
			if _, ok := r.have[k]; !ok {
				r.violations = append(r.violations, fmt.Sprintf("I4 %v: Update while absent", k))
			}
			if prev, ok := r.have[k]; ok && prev != old {
				r.violations = append(r.violations, fmt.Sprintf("%v: Update's old object (RV %s) is not the last one delivered (RV %s)",
					k, old.GetResourceVersion(), prev.GetResourceVersion()))
			}
			r.have[k] = cur
			r.record(k, event{Kind: "update", RV: cur.GetResourceVersion(), UID: cur.GetUID()})
		},
		DeleteFunc: func(d handler.Deleted[T]) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if _, ok := r.have[d.Key]; !ok {
				r.violations = append(r.violations, fmt.Sprintf("I4 %v: Delete while absent", d.Key))
			}
			if d.Obj == zero {
				r.violations = append(r.violations, fmt.Sprintf("%v: Delete without an object", d.Key))
				delete(r.have, d.Key)
				r.record(d.Key, event{Kind: "delete", FSU: d.FinalStateUnknown})
				return
			}
			if cache.KeyOf(d.Obj) != d.Key {
				r.violations = append(r.violations, fmt.Sprintf("%v: Delete of an object with key %v", d.Key, cache.KeyOf(d.Obj)))
			}
			delete(r.have, d.Key)
			r.record(d.Key, event{Kind: "delete", RV: d.Obj.GetResourceVersion(), UID: d.Obj.GetUID(), FSU: d.FinalStateUnknown})
		},
	}
}

// replay is the recorder's view of the world: its events replayed into an
// empty map (I2: this must equal the server's final list).
func (r *recorder[T]) replay() state {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := state{}
	for k, obj := range r.have {
		s[k] = obj.GetResourceVersion() + "/" + string(obj.GetUID())
	}
	return s
}

// waitFor waits until the replayed events equal want.
func (r *recorder[T]) waitFor(t *testing.T, name string, want state, bound time.Duration) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		got := r.replay()
		if cmp.Equal(want, got) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("I2: handler %s did not converge within %v (-server +handler):\n%s", name, bound, truncate(cmp.Diff(want, got), 4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// check verifies I2 against the server's final state want, and reports the
// I3/I4 violations seen along the way.
func (r *recorder[T]) check(t *testing.T, name string, want state) {
	t.Helper()
	if diff := cmp.Diff(want, r.replay()); diff != "" {
		t.Errorf("I2: handler %s's last events differ from the server (-server +handler):\n%s", name, truncate(diff, 4000))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, evs := range r.events {
		last := evs[len(evs)-1]
		wantRV, exists := want[k]
		switch {
		case !exists && last.Kind != "delete":
			t.Errorf("I2: handler %s, %v: last event %+v but the object is gone", name, k, last)
		case exists && (last.Kind == "delete" || last.RV+"/"+string(last.UID) != wantRV):
			t.Errorf("I2: handler %s, %v: last event %+v, server has %s", name, k, last, wantRV)
		}
	}
	if len(r.violations) > 0 {
		t.Errorf("handler %s: %d invariant violations, first: %q", name, len(r.violations), r.violations[:min(10, len(r.violations))])
	}
}

// eventsOf returns the events seen for k.
func (r *recorder[T]) eventsOf(k cache.Key) []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event(nil), r.events[k]...)
}

// callCount is the number of handler calls so far.
func (r *recorder[T]) callCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// kinds counts the events by kind (and final-state-unknown deletes).
func (r *recorder[T]) kinds() map[string]int {
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
