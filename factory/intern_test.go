package factory_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/factory"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// distinct counts the distinct bytes behind the namespace, label and
// image strings of pods: 1 each when the informer shares them, one per pod
// when it does not.
func distinct(pods []*corev1.Pod) (ns, label, image int) {
	seen := [3]map[*byte]bool{{}, {}, {}}
	for _, p := range pods {
		seen[0][unsafe.StringData(p.Namespace)] = true
		seen[1][unsafe.StringData(p.Labels["app"])] = true
		seen[2][unsafe.StringData(p.Spec.Containers[0].Image)] = true
	}
	return len(seen[0]), len(seen[1]), len(seen[2])
}

// TestFactoryInformerSharesStrings: an informer the factory makes over the
// REST source (with its list permits in front) shares the equal strings of
// the pods it caches as an informer made directly over FromConfig does, so
// it holds the same bytes per pod.
func TestFactoryInformerSharesStrings(t *testing.T) {
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
	for i := range 20 {
		p := it.Pod("shop", fmt.Sprintf("p%02d", i), map[string]string{"app": "cart"})
		p.Spec.Containers = []corev1.Container{{Name: "app", Image: "registry.example.com/cart:" + strings.Repeat("1", 3)}}
		if _, err := fake.Create(p); err != nil {
			t.Fatal(err)
		}
	}
	srv := podserver.New(t, fake)
	direct := func() *typed.Informer[*corev1.Pod] {
		src, err := source.FromConfig[*corev1.Pod](srv.Config(), source.RESTOptions{Mapper: podserver.Mapper()})
		if err != nil {
			t.Fatal(err)
		}
		inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{})
		if err != nil {
			t.Fatal(err)
		}
		return inf
	}()
	f, err := factory.New(srv.Config(), factory.Options{Mapper: podserver.Mapper()})
	if err != nil {
		t.Fatal(err)
	}
	shared, _, err := factory.InformerFor[*corev1.Pod](f, factory.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return direct.Run(gctx) })
	g.Go(func() error { return f.Start(gctx) })
	defer func() {
		cancel()
		if err := g.Wait(); err != nil {
			t.Error(err)
		}
	}()
	if err := typed.WaitForCacheSync(ctx, direct, shared); err != nil {
		t.Fatal(err)
	}
	for name, inf := range map[string]*typed.Informer[*corev1.Pod]{"direct": direct, "factory": shared} {
		pods := inf.Store().List()
		if len(pods) != 20 {
			t.Fatalf("%s informer: %d pods cached, want 20", name, len(pods))
		}
		if ns, label, image := distinct(pods); ns != 1 || label != 1 || image != 1 {
			t.Errorf("%s informer: %d namespaces, %d labels, %d images held for 20 pods, want 1 of each", name, ns, label, image)
		}
	}
}
