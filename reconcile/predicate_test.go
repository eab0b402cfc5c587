package reconcile_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/reconcile"
	"github.com/typedinformer/informer/typed"
)

func pod(rv string, gen int64, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: rv, Generation: gen, Labels: labels}}
}

func update(old, cur *corev1.Pod) reconcile.Event[*corev1.Pod] {
	return reconcile.Event[*corev1.Pod]{Type: reconcile.Updated, Key: cache.KeyOf(cur), Old: old, Object: cur}
}

func TestPredicates(t *testing.T) {
	a := map[string]string{"app": "a"}
	b := map[string]string{"app": "b"}
	same := pod("", 1, a)
	added := reconcile.Event[*corev1.Pod]{Type: reconcile.Added, Key: key("p"), Object: pod("1", 1, a), Initial: true}
	deleted := reconcile.Event[*corev1.Pod]{Type: reconcile.Deleted, Key: key("p"), FinalStateUnknown: true}
	events := []struct {
		name string
		e    reconcile.Event[*corev1.Pod]
	}{
		{"add", added},
		{"delete of an unknown object", deleted},
		{"resync", update(pod("5", 2, a), pod("5", 2, a))},
		{"spec change", update(pod("5", 2, a), pod("6", 3, a))},
		{"status change", update(pod("5", 2, a), pod("6", 2, a))},
		{"label change", update(pod("5", 2, a), pod("6", 2, b))},
		{"label added", update(pod("5", 2, nil), pod("6", 2, a))},
		{"change without generations", update(pod("5", 0, a), pod("6", 0, a))},
		{"change without resourceVersions", update(pod("", 1, a), pod("", 2, b))},
		{"resync without resourceVersions", update(same, same)},
	}
	preds := []struct {
		name string
		p    reconcile.Predicate[*corev1.Pod]
		want []bool // per event, in order
	}{
		{"GenerationChanged", reconcile.GenerationChanged[*corev1.Pod](),
			[]bool{true, true, false, true, false, false, false, true, true, false}},
		{"LabelsChanged", reconcile.LabelsChanged[*corev1.Pod](),
			[]bool{true, true, false, false, false, true, true, false, true, false}},
		{"IgnoreResync", reconcile.IgnoreResync[*corev1.Pod](),
			[]bool{true, true, false, true, true, true, true, true, true, false}},
		{"Any(GenerationChanged, LabelsChanged)", reconcile.Any(reconcile.GenerationChanged[*corev1.Pod](), reconcile.LabelsChanged[*corev1.Pod]()),
			[]bool{true, true, false, true, false, true, true, true, true, false}},
		{"Any()", reconcile.Any[*corev1.Pod](),
			[]bool{false, false, false, false, false, false, false, false, false, false}},
	}
	for _, p := range preds {
		t.Run(p.name, func(t *testing.T) {
			got := make([]bool, len(events))
			want := map[string]bool{}
			gotByName := map[string]bool{}
			for i, ev := range events {
				got[i] = p.p(ev.e)
				want[ev.name] = p.want[i]
				gotByName[ev.name] = got[i]
			}
			if diff := cmp.Diff(want, gotByName); diff != "" {
				t.Errorf("passes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPredicatesFilterTheQueue runs a controller with IgnoreResync, a
// custom predicate and GenerationChanged over an informer that resyncs:
// resyncs, the excluded object and status-only updates reconcile nothing;
// a generation change does.
func TestPredicatesFilterTheQueue(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder(nil)
		notSkipped := func(e reconcile.Event[*corev1.Pod]) bool { return e.Key.Name != "p-00002" }
		e := newEnv(t, pods(3), typed.Options[*corev1.Pod]{ResyncPeriod: time.Minute}, rec, reconcile.Options[*corev1.Pod]{
			Predicates: []reconcile.Predicate[*corev1.Pod]{reconcile.IgnoreResync[*corev1.Pod](), notSkipped, reconcile.GenerationChanged[*corev1.Pod]()},
		})
		e.start(t)
		time.Sleep(5 * time.Minute) // five resyncs
		synctest.Wait()
		counts := func() map[string]int {
			out := map[string]int{}
			for _, k := range rec.snapshot() {
				out[k.Name]++
			}
			return out
		}
		if diff := cmp.Diff(map[string]int{"p-00000": 1, "p-00001": 1}, counts()); diff != "" {
			t.Fatalf("reconciles after the initial list and resyncs (-want +got):\n%s", diff)
		}
		for gen := range int64(3) {
			p, err := e.fake.Get(key("p-00000"))
			if err != nil {
				t.Fatal(err)
			}
			p.Generation = gen + 1 // spec changes
			p.Status.Message = fmt.Sprint(gen)
			if _, err := e.fake.Update(p); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			p, _ = e.fake.Get(key("p-00000"))
			p.Status.Message = "status only"
			if _, err := e.fake.Update(p); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
		}
		if diff := cmp.Diff(map[string]int{"p-00000": 4, "p-00001": 1}, counts()); diff != "" {
			t.Errorf("reconciles after 3 spec and 3 status changes (-want +got):\n%s", diff)
		}
	})
}
