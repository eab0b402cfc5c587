package typed_test

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// recorder is a handler that records every call per key and checks the
// invariants of RELIABILITY.md as it goes: I3 (per-key resourceVersions
// never decrease) and I4 (no Add for a key it has, no Delete for a key it
// does not have, no Update for a key it does not have).
type recorder struct {
	mu         sync.Mutex
	events     map[cache.Key][]event
	have       map[cache.Key]*corev1.Pod
	violations []string
}

func newRecorder() *recorder {
	return &recorder{events: map[cache.Key][]event{}, have: map[cache.Key]*corev1.Pod{}}
}

func rvOf(p *corev1.Pod) int64 {
	n, _ := strconv.ParseInt(p.ResourceVersion, 10, 64)
	return n
}

func (r *recorder) record(k cache.Key, e event, obj *corev1.Pod) {
	evs := r.events[k]
	if n := len(evs); n > 0 && obj != nil && e.RV != "" {
		prev, _ := strconv.ParseInt(evs[n-1].RV, 10, 64)
		if cur := rvOf(obj); cur < prev {
			r.violations = append(r.violations, fmt.Sprintf("I3 %v: %s RV %d after RV %d", k, e.Kind, cur, prev))
		}
	}
	r.events[k] = append(evs, e)
}

func (r *recorder) handler() handler.Funcs[*corev1.Pod] {
	return handler.Funcs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, initial bool) {
			r.mu.Lock()
			defer r.mu.Unlock()
			k := cache.KeyOf(p)
			if _, ok := r.have[k]; ok {
				r.violations = append(r.violations, fmt.Sprintf("I4 %v: Add while present", k))
			}
			r.have[k] = p
			r.record(k, event{Kind: "add", RV: p.ResourceVersion, UID: p.UID, Initial: initial}, p)
		},
		UpdateFunc: func(old, cur *corev1.Pod) {
			r.mu.Lock()
			defer r.mu.Unlock()
			k := cache.KeyOf(cur)
			if _, ok := r.have[k]; !ok {
				r.violations = append(r.violations, fmt.Sprintf("I4 %v: Update while absent", k))
			}
			r.have[k] = cur
			r.record(k, event{Kind: "update", RV: cur.ResourceVersion, UID: cur.UID}, cur)
		},
		DeleteFunc: func(d handler.Deleted[*corev1.Pod]) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if _, ok := r.have[d.Key]; !ok {
				r.violations = append(r.violations, fmt.Sprintf("I4 %v: Delete while absent", d.Key))
			}
			if d.Obj == nil {
				r.violations = append(r.violations, fmt.Sprintf("%v: Delete without object", d.Key))
				return
			}
			delete(r.have, d.Key)
			r.record(d.Key, event{Kind: "delete", RV: d.Obj.ResourceVersion, UID: d.Obj.UID, FSU: d.FinalStateUnknown}, d.Obj)
		},
	}
}

// state is key -> "rv/uid", the part of an object the invariants compare.
type state map[cache.Key]string

func stateOf(pods []*corev1.Pod) state {
	s := state{}
	for _, p := range pods {
		s[cache.KeyOf(p)] = p.ResourceVersion + "/" + string(p.UID)
	}
	return s
}

// replay is the recorder's view: its events replayed into an empty map
// (RELIABILITY.md I2: this must equal the server's final list).
func (r *recorder) replay() state {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := state{}
	for k, p := range r.have {
		s[k] = p.ResourceVersion + "/" + string(p.UID)
	}
	return s
}

func (r *recorder) check(t *testing.T, want state) {
	t.Helper()
	if diff := cmp.Diff(want, r.replay()); diff != "" {
		t.Errorf("I2: handler's last events differ from the server (-want +got):\n%s", diff)
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

func (r *recorder) deletesOf(k cache.Key) []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event
	for _, e := range r.events[k] {
		if e.Kind == "delete" {
			out = append(out, e)
		}
	}
	return out
}

func pod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
}

func sortedKeys(s state) []cache.Key {
	ks := slices.Collect(maps.Keys(s))
	slices.SortFunc(ks, func(a, b cache.Key) int {
		if a.Namespace != b.Namespace {
			if a.Namespace < b.Namespace {
				return -1
			}
			return 1
		}
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return ks
}

var podsResource = schema.GroupResource{Resource: "pods"}

func toState(keys map[cache.Key]bool) state {
	s := state{}
	for k := range keys {
		s[k] = ""
	}
	return s
}
