package httpinfo_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/httpinfo"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

type factoryRunner struct{ f *factory.Factory }

func (r factoryRunner) Run(ctx context.Context) error { return r.f.Start(ctx) }

// names lists the registry's informers.
func names(r *httpinfo.Registry) []string {
	var out []string
	for _, is := range r.Snapshot().Informers {
		out = append(out, is.Name)
	}
	return out
}

// TestAddFactory: one call registers a factory's informers, those it had
// and those asked for later by any part of the program; the readiness
// check waits for them; one released by its last user leaves the page; a
// name taken by an informer added by hand gets a suffix; after stop,
// nothing more is registered.
func TestAddFactory(t *testing.T) {
	leakcheck.Check(t)
	cs := fake.NewClientset(it.Pod("shop", "web-0", nil), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	f, err := factory.NewForClientsets([]any{cs}, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := httpinfo.NewRegistry(httpinfo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ready, err := httpinfo.NewReadiness(reg, httpinfo.ReadinessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := httpinfo.AddFactory(nil, f); !errors.Is(err, httpinfo.ErrNilRegistry) {
		t.Errorf("AddFactory(nil registry): %v", err)
	}
	if _, err := httpinfo.AddFactory(reg, nil); err == nil {
		t.Error("AddFactory(nil factory): no error")
	}

	// An informer of the same name as the factory's pods, added by hand.
	byHand, err := typed.NewInformer(sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{}), typed.Options[*corev1.Pod]{Name: "pods (namespace shop)"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := httpinfo.Add(reg, byHand); err != nil {
		t.Fatal(err)
	}
	_, releaseNodes, err := factory.InformerFor[*corev1.Node](f, factory.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	stop, err := httpinfo.AddFactory(reg, f)
	if err != nil {
		t.Fatal(err)
	}
	pods, releasePods, err := factory.InformerFor[*corev1.Pod](f, factory.Scope{Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"pods (namespace shop)", "nodes", "pods (namespace shop) #2"}
	if got := names(reg); !slices.Equal(got, want) {
		t.Fatalf("registered %q, want %q", got, want)
	}
	if err := ready.Check(nil); err == nil {
		t.Error("ready before the factory's informers synced")
	}
	if e, ok := reg.Lookup("pods (namespace shop) #2"); !ok || e.Name() != "pods (namespace shop) #2" {
		t.Errorf("Lookup of the factory's pods: %v, %v", e, ok)
	}

	it.Run(t, factoryRunner{f})
	it.Eventually(t, "the factory's informers synced on the page", func() bool {
		for _, is := range reg.Snapshot().Informers {
			if is.Name != "pods (namespace shop)" && !is.Synced {
				return false
			}
		}
		return true
	})
	for _, is := range reg.Snapshot().Informers {
		if is.Name == "pods (namespace shop) #2" && is.Objects != pods.Store().Len() {
			t.Errorf("page shows %d pods, the cache holds %d", is.Objects, pods.Store().Len())
		}
	}
	releasePods()
	if got := names(reg); !slices.Equal(got, []string{"pods (namespace shop)", "nodes"}) {
		t.Errorf("after the pods' last release: %q", got)
	}
	stop()
	_, releaseSecrets, err := factory.InformerFor[*corev1.Secret](f, factory.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	releaseSecrets()
	releaseNodes()
	if got := names(reg); !slices.Equal(got, []string{"pods (namespace shop)", "nodes"}) {
		t.Errorf("after stop, the page changed: %q", got)
	}
}
