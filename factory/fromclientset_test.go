package factory_test

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedinformer/informer/factory"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
)

// TestNewForClientsets: a factory over client-go's fake clientset serves
// any of its types with no Register: namespaced (pods in one namespace),
// cluster-scoped (nodes) and of another group (deployments); they sync and
// follow changes; a type no clientset serves, a namespace for a
// cluster-scoped type and a value that is not a clientset are refused.
func TestNewForClientsets(t *testing.T) {
	leakcheck.Check(t)
	cs := fake.NewClientset(
		it.Pod("shop", "web-0", nil), it.Pod("lab", "x-0", nil),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}},
	)
	f, err := factory.NewForClientsets([]any{cs}, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pods, _ := informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: "shop"})
	nodes, _ := informerFor[*corev1.Node](t, f, factory.Scope{})
	deps, _ := informerFor[*appsv1.Deployment](t, f, factory.Scope{})
	start(t, f)
	waitSynced(t, f)
	if pods.Store().Len() != 1 || nodes.Store().Len() != 1 || deps.Store().Len() != 1 {
		t.Fatalf("synced %d pods, %d nodes, %d deployments; want 1 each", pods.Store().Len(), nodes.Store().Len(), deps.Store().Len())
	}
	it.Eventually(t, "a new pod in shop is cached", func() bool {
		_, _ = cs.CoreV1().Pods("shop").Create(context.Background(), it.Pod("shop", "web-1", nil), metav1.CreateOptions{})
		return pods.Store().Len() == 2
	})

	if _, _, err := factory.InformerFor[*corev1.Node](f, factory.Scope{Namespace: "shop"}); !errors.Is(err, factory.ErrBadScope) {
		t.Errorf("nodes in a namespace: %v, want ErrBadScope", err)
	}
	type notServed struct{ corev1.Pod }
	if _, _, err := factory.InformerFor[*notServed](f, factory.Scope{}); err == nil {
		t.Error("a type no clientset serves was accepted")
	}
	for name, v := range map[string]any{"nil": nil, "a string": "clientset", "a nil clientset": (*fake.Clientset)(nil)} {
		if _, err := factory.NewForClientsets([]any{v}, factory.Options{}); !errors.Is(err, factory.ErrNotAClientset) {
			t.Errorf("%s: %v, want ErrNotAClientset", name, err)
		}
	}
	if _, err := factory.NewForClientsets(nil, factory.Options{}); !errors.Is(err, factory.ErrNotAClientset) {
		t.Errorf("no clientsets: %v, want ErrNotAClientset", err)
	}
}
