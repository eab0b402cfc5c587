//go:build integration

package integration

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/factory"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/testcluster"
	"github.com/typedinformer/informer/typed"
)

// TestServedFollowsCRDs: factory.Served runs a metadata informer for each
// resource it follows as the resource appears on kube-apiserver (a CRD
// installed: its objects reach the informer), stops and removes it when
// the CRD is deleted, starts one again when the CRD is back, and stops
// them all when its context ends.
func TestServedFollowsCRDs(t *testing.T) {
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	group := uniqueName("served") + ".example.test"
	gv := schema.GroupVersion{Group: group, Version: "v1"}
	widgets := gv.WithResource("widgets")
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	ns := uniqueName("served")
	createNamespaces(ctx, t, protobufClientset(t, c.AdminConfig()), ns)
	dyn := dynamicClient(t, c.AdminConfig())
	crdJSON, err := widgetCRD(group).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(crdResource).Delete(context.Background(), "widgets."+group, metav1.DeleteOptions{})
	})

	var mu sync.Mutex
	var events []string
	record := func(e string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}
	count := func(e string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, x := range events {
			if x == e {
				n++
			}
		}
		return n
	}
	f := newTestFactory(t, c.AdminConfig(), factory.Options{})
	served, err := factory.NewServed(f, factory.ServedOptions{
		Interval: 200 * time.Millisecond,
		Include:  func(gvr schema.GroupVersionResource) bool { return gvr.Group == group || gvr == configMaps },
		Added: func(gvr schema.GroupVersionResource, inf *typed.Informer[*metav1.PartialObjectMetadata]) {
			record("added " + gvr.Resource)
		},
		Removed: func(gvr schema.GroupVersionResource) { record("removed " + gvr.Resource) },
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- served.Run(runCtx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run = %v", err)
			}
		}
	}
	defer stop()
	synced := func(gvr schema.GroupVersionResource) *typed.Informer[*metav1.PartialObjectMetadata] {
		t.Helper()
		var inf *typed.Informer[*metav1.PartialObjectMetadata]
		it.Eventually(t, "an informer of "+gvr.String(), func() bool {
			inf = served.Informers()[gvr]
			return inf != nil
		})
		wctx, wcancel := context.WithTimeout(ctx, time.Minute)
		defer wcancel()
		if err := inf.WaitForSync(wctx); err != nil {
			t.Fatalf("%v: %v", gvr, err)
		}
		return inf
	}
	synced(configMaps)
	if _, ok := served.Informers()[widgets]; ok {
		t.Fatal("an informer of widgets before the CRD exists")
	}

	for i := range 3 {
		if err := testcluster.InstallCRDs(ctx, c.AdminConfig(), crdJSON); err != nil {
			t.Fatal(err)
		}
		inf := synced(widgets)
		name := uniqueName("w")
		if _, err := dyn.Resource(widgets).Namespace(ns).Create(ctx, widget(gv, ns, name, int64(i), map[string]string{"round": "x"}), metav1.CreateOptions{}); err != nil {
			t.Fatalf("round %d: create widget: %v", i, err)
		}
		it.Eventually(t, "the widget's metadata cached", func() bool {
			m, err := inf.Lister().Namespace(ns).Get(name)
			return err == nil && m.Labels["round"] == "x"
		})
		if err := dyn.Resource(crdResource).Delete(ctx, "widgets."+group, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("round %d: delete CRD: %v", i, err)
		}
		it.Eventually(t, "the CRD gone", func() bool {
			_, err := dyn.Resource(crdResource).Get(ctx, "widgets."+group, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		it.Eventually(t, "the widgets informer removed", func() bool { return count("removed widgets") == i+1 })
		if _, ok := served.Informers()[widgets]; ok {
			t.Fatalf("round %d: Informers() still has widgets after Removed", i)
		}
		select {
		case <-inf.Stopped():
		default:
			t.Fatalf("round %d: Removed called before the informer stopped", i)
		}
	}
	if n := count("added widgets"); n != 3 {
		t.Errorf("widgets added %d times for 3 installs", n)
	}
	if n := count("removed configmaps") + count("added configmaps"); n != 1 {
		t.Errorf("configmaps added or removed %d times while served, want added once", n)
	}
	stop()
	if got := served.Informers(); len(got) != 0 {
		t.Errorf("informers after Run returned: %v", slices.Collect(maps.Keys(got)))
	}
	if n := count("removed configmaps"); n != 1 {
		t.Errorf("configmaps removed %d times at stop, want 1", n)
	}
}
