package sharding

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedinformer/informer/source/sourcetest"
)

// calls records handler calls as text.
type calls []string

func (c *calls) handler() Funcs[*corev1.Pod] {
	return Funcs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, initial bool) {
			*c = append(*c, "add "+p.Name+"/"+string(p.UID)+map[bool]string{true: " initial", false: ""}[initial])
		},
		UpdateFunc: func(o, p *corev1.Pod) { *c = append(*c, "update "+p.Name+" "+o.ResourceVersion+"->"+p.ResourceVersion) },
		DeleteFunc: func(d Deleted[*corev1.Pod]) {
			why := "deleted"
			switch {
			case d.MovedOut:
				why = "moved out"
			case d.FinalStateUnknown:
				why = "deleted meanwhile"
			}
			*c = append(*c, "delete "+d.Key.Name+"/"+string(d.Object.UID)+" "+why)
		},
	}
}

func pod(name, uid, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), ResourceVersion: rv}}
}

// TestRelayReshard drives the relay through a first range, a reshard to
// another range and its relist: objects kept are updates, a new UID under
// a known name is a deletion and an add, a known object the relist lacks
// is a deletion that happened meanwhile, and the objects outside the next
// range move out.
func TestRelayReshard(t *testing.T) {
	m, err := NewMembership(fake.NewClientset().CoordinationV1(), Options{Namespace: "ns", Group: "g", Identity: "a"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewInformer(sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{}), m, InformerOptions[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	var got calls
	if err := s.AddHandler(got.handler()); err != nil {
		t.Fatal(err)
	}
	r := relay[*corev1.Pod]{s: s}
	keep, gone := pod("keep", "u-keep", "1"), pod("gone", "u-gone", "3")
	// The next range spans keep's and gone's hashes; other's UID is the
	// first candidate outside it.
	lo, hi := ByUID.Hash(keep), ByUID.Hash(gone)
	if lo > hi {
		lo, hi = hi, lo
	}
	next := Range{Start: lo, End: hi + 1}
	var other *corev1.Pod
	for i := 0; other == nil; i++ {
		p := pod("other", fmt.Sprintf("u-other-%d", i), "2")
		if !next.Contains(ByUID.Hash(p)) {
			other = p
		}
	}
	for _, p := range []*corev1.Pod{keep, other, gone} {
		r.OnAdd(p, true)
	}
	s.relisted()
	run := &running[*corev1.Pod]{r: Full, cancel: func() {}, done: make(chan struct{})}
	close(run.done)
	s.stop(run, &next, true)
	// The new range's relist brings keep at a newer version and not gone;
	// then keep is replaced by another pod of the same name.
	s.mu.Lock()
	for k := range s.known {
		s.pending[k] = struct{}{}
	}
	s.mu.Unlock()
	r.OnAdd(pod("keep", "u-keep", "4"), true)
	s.relisted()
	r.OnAdd(pod("keep", "u-keep-2", "5"), false)
	want := calls{
		"add keep/u-keep initial", "add other/" + string(other.UID) + " initial", "add gone/u-gone initial",
		"delete other/" + string(other.UID) + " moved out",
		"update keep 1->4",
		"delete gone/u-gone deleted meanwhile",
		"delete keep/u-keep deleted meanwhile", "add keep/u-keep-2",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("handler calls (-want +got):\n%s", diff)
	}
	if st := s.Status(); st.Objects != 1 {
		t.Errorf("Status().Objects = %d, want 1", st.Objects)
	}
}
