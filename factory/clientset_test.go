package factory_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/typedinformer/informer/factory"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source"
)

// TestFakeClientset: informers on client-go's fake clientset, through
// Register: they sync, see pods created later in their namespace only, and
// two callers of one namespace share one list and one watch (counted by
// the clientset's reactors).
func TestFakeClientset(t *testing.T) {
	cs := fake.NewClientset(it.Pod("shop", "web-0", nil), it.Pod("shop", "db-0", nil), it.Pod("lab", "x-0", nil))
	var lists, watches atomic.Int64
	cs.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		return false, nil, nil // counted, then served as usual
	})
	cs.PrependWatchReactor("pods", func(clienttesting.Action) (bool, watch.Interface, error) {
		watches.Add(1)
		return false, nil, nil
	})
	f, err := factory.New(nil, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := factory.Register(f, func(s factory.Scope) (source.Source[*corev1.Pod], error) {
		return source.FromClient[*corev1.Pod](cs.CoreV1().Pods(s.Namespace))
	}); err != nil {
		t.Fatal(err)
	}
	shop, _ := informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: "shop"})
	start(t, f)
	again, _ := informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: "shop"}) // while running
	lab, _ := informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: "lab"})
	if again != shop {
		t.Fatal("two callers of namespace shop got two informers")
	}
	waitSynced(t, f)
	// The fake clientset sends a watch only what happens after it opened.
	it.Eventually(t, "both watches are open", func() bool { return watches.Load() == 2 })
	for _, p := range []*corev1.Pod{it.Pod("shop", "web-1", nil), it.Pod("lab", "x-1", nil)} {
		if _, err := cs.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cs.CoreV1().Pods("shop").Delete(context.Background(), "db-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	it.Eventually(t, "the changes are cached", func() bool { return shop.Store().Len() == 2 && lab.Store().Len() == 2 })
	got := map[string][]string{"shop": podNames(shop.Store().List()), "lab": podNames(lab.Store().List()),
		"requests": {"lists " + itoa(lists.Load()), "watches " + itoa(watches.Load())}}
	want := map[string][]string{"shop": {"shop/web-0", "shop/web-1"}, "lab": {"lab/x-0", "lab/x-1"},
		"requests": {"lists 2", "watches 2"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("caches and requests (-want +got):\n%s", diff)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
