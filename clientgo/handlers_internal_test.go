package clientgo

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
)

// Every shape of handler.Deleted reaches a client-go handler as client-go
// delivers deletions: the object, or a tombstone with the key and the last
// known state; never a nil *Pod.
func TestOnDeleteMapping(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: "7"}}
	key := cache.Key{Namespace: "ns", Name: "p"}
	for _, tc := range []struct {
		name string
		d    handler.Deleted[*corev1.Pod]
		want any
	}{
		{"from a watch event", handler.Deleted[*corev1.Pod]{Object: pod, Key: key}, pod},
		{"inferred from a relist", handler.Deleted[*corev1.Pod]{Object: pod, Key: key, FinalStateUnknown: true},
			clientcache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}},
		{"inferred, nothing known", handler.Deleted[*corev1.Pod]{Key: key, FinalStateUnknown: true},
			clientcache.DeletedFinalStateUnknown{Key: "ns/p"}},
		{"nothing known", handler.Deleted[*corev1.Pod]{Key: cache.Key{Name: "node-1"}},
			clientcache.DeletedFinalStateUnknown{Key: "node-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []any
			h := eventHandler[*corev1.Pod]{h: clientcache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) { got = append(got, obj) }}}
			h.OnDelete(tc.d)
			if len(got) != 1 {
				t.Fatalf("%d OnDelete calls, want 1", len(got))
			}
			if tomb, ok := got[0].(clientcache.DeletedFinalStateUnknown); ok && tomb.Obj != nil {
				if p, isPod := tomb.Obj.(*corev1.Pod); !isPod || p == nil {
					t.Fatalf("tombstone holds %T %v", tomb.Obj, tomb.Obj)
				}
			}
			if diff := cmp.Diff(tc.want, got[0]); diff != "" {
				t.Errorf("OnDelete got (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAddAndUpdatePassObjectsOn(t *testing.T) {
	a := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "1"}}
	b := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "2"}}
	var calls []string
	h := eventHandler[*corev1.Pod]{h: clientcache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if obj == any(a) {
				calls = append(calls, "add a", map[bool]string{true: "initial", false: "live"}[initial])
			}
		},
		UpdateFunc: func(o, n any) {
			if o == any(a) && n == any(b) {
				calls = append(calls, "update a->b")
			}
		},
	}}
	h.OnAdd(a, true)
	h.OnAdd(a, false)
	h.OnUpdate(a, b)
	if diff := cmp.Diff([]string{"add a", "initial", "add a", "live", "update a->b"}, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
