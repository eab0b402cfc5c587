package factory_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/factory"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/source"
)

// TestNamespaceSetScope: a factory over client-go's fake clientset serves
// one informer over a set of namespaces, shared by the callers of the same
// set; it holds the set's pods alone and follows the set as it changes. A
// scope with both a Namespace and a set is refused.
func TestNamespaceSetScope(t *testing.T) {
	leakcheck.Check(t)
	cs := fake.NewClientset(it.Pod("a", "p", nil), it.Pod("b", "p", nil), it.Pod("c", "p", nil))
	f, err := factory.NewForClientsets([]any{cs}, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	set, err := source.NewNamespaces("a", "b")
	if err != nil {
		t.Fatal(err)
	}
	pods, _ := informerFor[*corev1.Pod](t, f, factory.Scope{Namespaces: set})
	again, _ := informerFor[*corev1.Pod](t, f, factory.Scope{Namespaces: set})
	if again != pods {
		t.Fatal("two callers of one namespace set got two informers")
	}
	if want := "pods (namespaces a,b)"; pods.Name() != want {
		t.Errorf("informer named %q, want %q", pods.Name(), want)
	}
	start(t, f)
	waitSynced(t, f)
	if pods.Store().Len() != 2 {
		t.Fatalf("synced %d pods, want a's and b's 2", pods.Store().Len())
	}
	if err := set.Add("c"); err != nil {
		t.Fatal(err)
	}
	it.Eventually(t, "c's pod cached once c joins the set", func() bool { return pods.Store().Len() == 3 })
	if err := set.Remove("a"); err != nil {
		t.Fatal(err)
	}
	it.Eventually(t, "a's pod dropped once a leaves the set", func() bool {
		_, inA := pods.Store().GetByKey(cache.Key{Namespace: "a", Name: "p"})
		return pods.Store().Len() == 2 && !inA
	})
	it.Eventually(t, "a pod created in c is cached", func() bool {
		_, _ = cs.CoreV1().Pods("c").Create(context.Background(), it.Pod("c", "q", nil), metav1.CreateOptions{})
		return pods.Store().Len() == 3
	})
	if _, _, err := factory.InformerFor[*corev1.Pod](f, factory.Scope{Namespace: "a", Namespaces: set}); !errors.Is(err, factory.ErrBadScope) {
		t.Errorf("Namespace and Namespaces: %v, want ErrBadScope", err)
	}
	if _, _, err := factory.InformerFor[*corev1.Node](f, factory.Scope{Namespaces: set}); !errors.Is(err, factory.ErrBadScope) {
		t.Errorf("nodes in a namespace set: %v, want ErrBadScope", err)
	}
}
