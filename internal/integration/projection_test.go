//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/bench"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// gadgetSize is a projection of the gadget CRD: its size alone.
type gadgetSize struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Size int64 `json:"size"`
	} `json:"spec"`
}

func (*gadgetSize) ProjectionOf() runtime.Object     { return &gadget{} }
func (g *gadgetSize) DeepCopyObject() runtime.Object { return source.DeepCopy(g) }

// TestProjectionRealServer: informers of a Pod projection over JSON and
// protobuf, and of a CRD projection, against kube-apiserver: each cached
// summary is what encoding/json makes of the full pod a full informer
// caches (managedFields and the last-applied annotation dropped on both),
// and a status update reaches them.
func TestProjectionRealServer(t *testing.T) {
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	admin := protobufClientset(t, c.AdminConfig())
	ns := uniqueName("proj")
	createNamespaces(ctx, t, admin, ns)
	const n = 40
	for i := range n {
		p := newPod(ns, fmt.Sprintf("p-%02d", i), map[string]string{"app": fmt.Sprintf("app-%d", i%4)})
		p.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: `{"kind":"Pod"}`, "team": "shop"}
		p.Spec.NodeName = fmt.Sprintf("node-%d", i%3)
		created, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.Phase = corev1.PodRunning
		created.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Unix(1700000000+int64(i), 0))}}
		if _, err := admin.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	drop := []string{corev1.LastAppliedConfigAnnotation}
	fullSrc, err := source.FromConfig[*corev1.Pod](c.AdminConfig(), source.RESTOptions{Namespace: ns, Protobuf: true, DropAnnotations: drop})
	if err != nil {
		t.Fatal(err)
	}
	full := newInformer(t, fullSrc, typed.Options[*corev1.Pod]{})
	it.Run(t, full)
	views := map[string]*typed.Informer[*bench.PodSummary]{}
	for _, proto := range []bool{false, true} {
		src, err := source.FromConfig[*bench.PodSummary](c.AdminConfig(), source.RESTOptions{Namespace: ns, Protobuf: proto, DropAnnotations: drop})
		if err != nil {
			t.Fatal(err)
		}
		inf := newInformer(t, src, typed.Options[*bench.PodSummary]{})
		it.Run(t, inf)
		views[fmt.Sprintf("protobuf=%v", proto)] = inf
	}
	wait := waitCtxFor(t, time.Minute)
	if err := typed.WaitForCacheSync(wait, full, views["protobuf=false"], views["protobuf=true"]); err != nil {
		t.Fatal(err)
	}
	summaryOf := func(p *corev1.Pod) *bench.PodSummary {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var s bench.PodSummary
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		s.TypeMeta = metav1.TypeMeta{}
		return &s
	}
	agree := func(what string) {
		t.Helper()
		for name, inf := range views {
			it.Eventually(t, what+": "+name+" agrees with the full informer", func() bool {
				pods := full.Store().List()
				if len(pods) != n || inf.Store().Len() != n {
					return false
				}
				for _, p := range pods {
					s, ok := inf.Store().GetByKey(cache.KeyOf(p))
					if !ok || !cmp.Equal(summaryOf(p), s) {
						return false
					}
				}
				return true
			})
		}
	}
	agree("after sync")
	for _, p := range full.Store().List() {
		if _, ok := p.Annotations[corev1.LastAppliedConfigAnnotation]; ok || p.Annotations["team"] != "shop" {
			t.Fatalf("%s: annotations %v, want team=shop without the last-applied one", p.Name, p.Annotations)
		}
	}
	p, err := admin.CoreV1().Pods(ns).Get(ctx, "p-07", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodSucceeded
	if _, err := admin.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	it.Eventually(t, "the update in the full informer", func() bool {
		q, ok := full.Store().GetByKey(cache.KeyOf(p))
		return ok && q.Status.Phase == corev1.PodSucceeded
	})
	agree("after a status update")

	// A CRD's projection, over JSON.
	group := uniqueName("pj") + ".example.test"
	gv := schema.GroupVersion{Group: group, Version: "v1"}
	waitDiscovered(t, c.AdminConfig(), createEstablishedCRD(ctx, t, dynamicClient(t, c.AdminConfig()), group))
	dyn := dynamicClient(t, c.AdminConfig()).Resource(gv.WithResource("widgets")).Namespace(ns)
	for i := range 3 {
		w := widget(gv, ns, fmt.Sprintf("w-%d", i), int64(10+i), nil)
		if err := unstructured.SetNestedField(w.Object, "red", "spec", "color"); err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(gv.WithKind("Widget"), &gadget{})
	gsrc, err := source.FromConfig[*gadgetSize](c.AdminConfig(), source.RESTOptions{Scheme: scheme, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	ginf := newInformer(t, gsrc, typed.Options[*gadgetSize]{})
	it.Run(t, ginf)
	if err := ginf.WaitForSync(waitCtxFor(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	g, err := ginf.Lister().Namespace(ns).Get("w-2")
	if err != nil || g.Spec.Size != 12 {
		t.Fatalf("w-2: %+v, %v; want size 12", g, err)
	}
}
