//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/informertest"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// widgetCRD is a namespaced CRD "widgets" of group, with an open schema.
func widgetCRD(group string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "widgets." + group},
		"spec": map[string]any{
			"group": group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
					},
				}},
			}},
		},
	}}
}

func widget(gv schema.GroupVersion, ns, name string, size int64, lbls map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gv.String(),
		"kind":       "Widget",
		"metadata":   map[string]any{"namespace": ns, "name": name},
		"spec":       map[string]any{"size": size},
	}}
	u.SetLabels(lbls)
	return u
}

// TestCustomResources: an informer on the custom resources of a CRD,
// through the dynamic client and source.FromListerWatcher. Started before
// the CRD exists, WaitForSync reports NotFound at once; once the CRD is
// created and Established, the same informer syncs, follows creates,
// updates and deletes (I1, I2-I4), and its lister answers Get and List.
func TestCustomResources(t *testing.T) {
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	admin := protobufClientset(t, c.AdminConfig())
	group := uniqueName("it") + ".example.test"
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	nss := []string{uniqueName("crd-a"), uniqueName("crd-b")}
	createNamespaces(ctx, t, admin, nss...)

	counter := newCounter(regexp.MustCompile(`^/apis/` + regexp.QuoteMeta(group) + `/v1/(namespaces/[^/]+/)?widgets$`))
	dynAdmin := dynamicClient(t, c.AdminConfig())
	dyn := dynamicClient(t, counter.wrap(c.AdminConfig()))
	widgets := dyn.Resource(gvr).Namespace(metav1.NamespaceAll)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return widgets.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return widgets.Watch(ctx, opts)
		},
	}
	src, err := source.FromListerWatcher[*unstructured.Unstructured](lw)
	if err != nil {
		t.Fatal(err)
	}
	var errs it.ErrSink
	inf := newInformer(t, src, typed.Options[*unstructured.Unstructured]{
		Resource:     gvr.GroupResource(),
		ErrorHandler: errs.Handle,
	})
	a, b := informertest.NewRecorder[*unstructured.Unstructured](informertest.RecorderOptions{}), informertest.NewRecorder[*unstructured.Unstructured](informertest.RecorderOptions{})
	if _, err := inf.AddHandler(a); err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)

	// No CRD yet: NotFound, at once.
	start := time.Now()
	err = inf.WaitForSync(waitCtxFor(t, time.Minute))
	notFoundAfter := time.Since(start)
	if !apierrors.IsNotFound(err) {
		t.Fatalf("WaitForSync before the CRD exists = %v, want NotFound", err)
	}
	t.Logf("WaitForSync before the CRD exists: %v", err)

	// Create the CRD and wait until it is Established.
	if _, err := dynAdmin.Resource(crdResource).Create(ctx, widgetCRD(group), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	t.Cleanup(func() {
		_ = dynAdmin.Resource(crdResource).Delete(context.Background(), "widgets."+group, metav1.DeleteOptions{})
	})
	crdCreated := time.Now()
	it.Eventually(t, "the CRD is Established", func() bool {
		crd, err := dynAdmin.Resource(crdResource).Get(ctx, "widgets."+group, metav1.GetOptions{})
		if err != nil {
			return false
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
				return true
			}
		}
		return false
	})
	established := time.Since(crdCreated)

	// Seed a few widgets; the same informer syncs on its next attempt.
	gv := gvr.GroupVersion()
	var created []*unstructured.Unstructured
	for i := range 10 {
		ns := nss[i%2]
		// Right after Established the resource may still be settling:
		// retry a NotFound briefly.
		var w *unstructured.Unstructured
		it.Eventually(t, "create a widget", func() bool {
			var err error
			w, err = dynAdmin.Resource(gvr).Namespace(ns).Create(ctx,
				widget(gv, ns, fmt.Sprintf("w-%d", i), int64(i), map[string]string{"color": []string{"red", "blue"}[i%2]}), metav1.CreateOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatalf("create widget: %v", err)
			}
			return err == nil
		})
		created = append(created, w)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := inf.WaitForSync(waitCtxFor(t, 2*time.Second))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not synced 2 minutes after the CRD was established: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	syncedAfter := time.Since(crdCreated)
	if _, err := inf.AddHandler(b); err != nil {
		t.Fatal(err)
	}

	// Updates and deletes.
	for _, w := range created[:3] {
		w = w.DeepCopy()
		if err := unstructured.SetNestedField(w.Object, int64(100), "spec", "size"); err != nil {
			t.Fatal(err)
		}
		if _, err := dynAdmin.Resource(gvr).Namespace(w.GetNamespace()).Update(ctx, w, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update widget: %v", err)
		}
	}
	for _, w := range created[8:] {
		if err := dynAdmin.Resource(gvr).Namespace(w.GetNamespace()).Delete(ctx, w.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete widget: %v", err)
		}
	}

	list, err := dynAdmin.Resource(gvr).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	server := ptrs(list.Items)
	want := informertest.StateOf(server)
	if len(want) != 8 {
		t.Fatalf("server has %d widgets, want 8", len(want))
	}
	it.ConvergeTo(t, want, inf.Store(), a, b)

	// Lister: Get and List agree with the server.
	for _, w := range server {
		got, err := inf.Lister().Namespace(w.GetNamespace()).Get(w.GetName())
		if err != nil {
			t.Errorf("Get(%s/%s): %v", w.GetNamespace(), w.GetName(), err)
			continue
		}
		if !cmp.Equal(got.Object["spec"], w.Object["spec"]) || got.GetResourceVersion() != w.GetResourceVersion() {
			t.Errorf("Get(%s/%s) = spec %v RV %s, server spec %v RV %s", w.GetNamespace(), w.GetName(),
				got.Object["spec"], got.GetResourceVersion(), w.Object["spec"], w.GetResourceVersion())
		}
		if got.GetManagedFields() != nil {
			t.Errorf("Get(%s/%s): managedFields kept", w.GetNamespace(), w.GetName())
		}
	}
	_, err = inf.Lister().Namespace(nss[0]).Get(created[8].GetName())
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) {
		t.Errorf("Get of a deleted widget = %v, want NotFound", err)
	} else if ok := errors.As(err, &status); !ok || status.Status().Details == nil || status.Status().Details.Group != group || status.Status().Details.Kind != "widgets" {
		t.Errorf("NotFound error %v does not name %s", err, gvr.GroupResource())
	}
	for _, sel := range []string{"color=red", "color in (blue)", ""} {
		s, _ := labels.Parse(sel)
		got, _ := inf.Lister().List(s)
		srv, err := dynAdmin.Resource(gvr).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(informertest.StateOf(ptrs(srv.Items)), informertest.StateOf(got)); diff != "" {
			t.Errorf("List(%q) differs from the server (-server +lister):\n%s", sel, diff)
		}
		gotNS, _ := inf.Lister().Namespace(nss[1]).List(s)
		srvNS, err := dynAdmin.Resource(gvr).Namespace(nss[1]).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(informertest.StateOf(ptrs(srvNS.Items)), informertest.StateOf(gotNS)); diff != "" {
			t.Errorf("Namespace(%s).List(%q) differs from the server (-server +lister):\n%s", nss[1], sel, diff)
		}
	}

	// Each attempt while the CRD was missing is one error for the caller:
	// the LIST's NotFound. The streaming list's NotFound before it is the
	// same condition, not a second error.
	reqs := counter.snapshot()
	if n := len(errs.All()); n != reqs.ListCodes[404] {
		t.Errorf("%d errors reported (%s) for %d LIST requests answered NotFound (%s); want one per failed attempt",
			n, errSummary(&errs), reqs.ListCodes[404], reqs)
	}

	st := inf.Status().Stats
	t.Logf("figures: custom resources: NotFound after %v; CRD Established %v after create; informer synced %v after the CRD was created; "+
		"stats %s; widgets %s; handler a %v, b %v; %s",
		notFoundAfter.Round(time.Millisecond), established.Round(time.Millisecond), syncedAfter.Round(time.Millisecond),
		statsString(st), counter.snapshot(), it.Kinds(a), it.Kinds(b), errSummary(&errs))
	if st.Relists != 0 {
		t.Errorf("I8: %s: want no relist once synced", statsString(st))
	}
}

func dynamicClient(t *testing.T, cfg *rest.Config) *dynamic.DynamicClient {
	t.Helper()
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func ptrs(items []unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
