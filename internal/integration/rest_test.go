//go:build integration

package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/informertest"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/internal/testcluster"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// configMapCase is a conformance case over the real API server: a fresh
// namespace per check, the clientset's verbs, etcd compaction. ConfigMaps,
// not pods: a pod's deletion is a MODIFIED (its deletionTimestamp) before
// the DELETED, which the suite does not expect.
func configMapCase(c *testcluster.Cluster, cs kubernetes.Interface, adapt func(t *testing.T, ns string) source.Source[*corev1.ConfigMap]) func(*testing.T) sourcetest.Case[*corev1.ConfigMap] {
	return func(t *testing.T) sourcetest.Case[*corev1.ConfigMap] {
		ns := uniqueName("conf")
		createNamespaces(t.Context(), t, cs, ns)
		cms := cs.CoreV1().ConfigMaps(ns)
		return sourcetest.Case[*corev1.ConfigMap]{
			Source:    adapt(t, ns),
			Namespace: ns,
			New: func(name string, lbls map[string]string) *corev1.ConfigMap {
				return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}}
			},
			Create: func(ctx context.Context, o *corev1.ConfigMap) (*corev1.ConfigMap, error) {
				return cms.Create(ctx, o, metav1.CreateOptions{})
			},
			Update: func(ctx context.Context, o *corev1.ConfigMap) (*corev1.ConfigMap, error) {
				return cms.Update(ctx, o, metav1.UpdateOptions{})
			},
			Delete: func(ctx context.Context, k cache.Key) error {
				return cms.Delete(ctx, k.Name, metav1.DeleteOptions{})
			},
			Compact: func(context.Context) error {
				c.CompactEtcd(t)
				return nil
			},
		}
	}
}

// TestConformanceRealServer runs the source conformance suite against
// kube-apiserver for the client adapters: FromConfig (JSON and protobuf),
// FromListerWatcher over client-go's ListWatch, and FromClient over a real
// clientset. The cluster has no watch cache, so
// that a watch from a compacted resourceVersion gets its 410 from etcd at
// once (with the cache, it may still be served from the cache's window).
func TestConformanceRealServer(t *testing.T) {
	leakcheck.Check(t)
	c := testcluster.Start(t, testcluster.Options{APIServerFlags: []string{"--watch-cache=false"}})
	cs := protobufClientset(t, c.AdminConfig())
	fromConfig := func(protobuf bool, workers ...int) func(t *testing.T, ns string) source.Source[*corev1.ConfigMap] {
		return func(t *testing.T, ns string) source.Source[*corev1.ConfigMap] {
			opts := source.RESTOptions{Namespace: ns, Protobuf: protobuf}
			if len(workers) > 0 {
				opts.DecodeWorkers = workers[0]
			}
			src, err := source.FromConfig[*corev1.ConfigMap](c.AdminConfig(), opts)
			if err != nil {
				t.Fatal(err)
			}
			return src
		}
	}
	t.Run("FromConfig", func(t *testing.T) { sourcetest.Run(t, configMapCase(c, cs, fromConfig(false))) })
	t.Run("FromConfigProtobuf", func(t *testing.T) { sourcetest.Run(t, configMapCase(c, cs, fromConfig(true))) })
	t.Run("FromConfigDecodeWorkers", func(t *testing.T) { sourcetest.Run(t, configMapCase(c, cs, fromConfig(false, 3))) })
	t.Run("FromListerWatcher", func(t *testing.T) {
		real := clientset(t, c.AdminConfig())
		sourcetest.Run(t, configMapCase(c, cs, func(t *testing.T, ns string) source.Source[*corev1.ConfigMap] {
			lw := clientcache.NewListWatchFromClient(real.CoreV1().RESTClient(), "configmaps", ns, fields.Everything())
			src, err := source.FromListerWatcher[*corev1.ConfigMap](lw)
			if err != nil {
				t.Fatal(err)
			}
			return src
		}))
	})
	t.Run("FromClient", func(t *testing.T) {
		real := clientset(t, c.AdminConfig())
		sourcetest.Run(t, configMapCase(c, cs, func(t *testing.T, ns string) source.Source[*corev1.ConfigMap] {
			src, err := source.FromClient[*corev1.ConfigMap](real.CoreV1().ConfigMaps(ns))
			if err != nil {
				t.Fatal(err)
			}
			return src
		}))
	})
}

// gadget is a custom resource defined only as a Go struct: no generated
// client, no deep-copy generator.
type gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              gadgetSpec `json:"spec"`
}

type gadgetSpec struct {
	Size  int64  `json:"size"`
	Color string `json:"color,omitempty"`
}

func (g *gadget) DeepCopyObject() runtime.Object {
	c := *g
	g.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// TestGoStructCRD: a CRD whose only Go definition is a plain struct in
// this test, registered in a scheme of its own, is watched typed through
// FromConfig (kind from the scheme, resource and scope from discovery):
// the lister returns *gadget with its spec decoded, and changes arrive as
// typed events.
func TestGoStructCRD(t *testing.T) {
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	group := uniqueName("gs") + ".example.test"
	gv := schema.GroupVersion{Group: group, Version: "v1"}
	ns := uniqueName("gadgets")
	createNamespaces(ctx, t, protobufClientset(t, c.AdminConfig()), ns)
	waitDiscovered(t, c.AdminConfig(), createEstablishedCRD(ctx, t, dynamicClient(t, c.AdminConfig()), group))

	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(gv.WithKind("Widget"), &gadget{})
	src, err := source.FromConfig[*gadget](c.AdminConfig(), source.RESTOptions{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := source.ResourceOf(src), (source.Resource{GroupResource: schema.GroupResource{Group: group, Resource: "widgets"}, Scope: cache.ScopeNamespaced}); got != want {
		t.Errorf("ResourceOf = %+v, want %+v", got, want)
	}
	dyn := dynamicClient(t, c.AdminConfig()).Resource(gv.WithResource("widgets")).Namespace(ns)
	for i := range 5 {
		w := widget(gv, ns, fmt.Sprintf("w-%d", i), int64(i), map[string]string{"color": []string{"red", "blue"}[i%2]})
		if err := unstructured.SetNestedField(w.Object, []string{"red", "blue"}[i%2], "spec", "color"); err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create widget: %v", err)
		}
	}
	rec := informertest.NewRecorder[*gadget](informertest.RecorderOptions{})
	inf := newInformer(t, src, typed.Options[*gadget]{})
	if _, err := inf.AddHandler(rec); err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)
	if err := inf.WaitForSync(waitCtxFor(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	if name := inf.Name(); name != "widgets."+group {
		t.Errorf("informer name %q, want widgets.%s", name, group)
	}
	red, err := inf.Lister().Namespace(ns).List(labels.SelectorFromSet(labels.Set{"color": "red"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(red) != 3 {
		t.Fatalf("%d red gadgets, want 3", len(red))
	}
	g, err := inf.Lister().Namespace(ns).Get("w-4")
	if err != nil {
		t.Fatal(err)
	}
	if g.Spec.Size != 4 || g.Spec.Color != "red" {
		t.Errorf("w-4 spec %+v, want size 4, color red", g.Spec)
	}

	// An update is a typed event with the new spec.
	u, err := dyn.Get(ctx, "w-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(u.Object, int64(100), "spec", "size"); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	it.Eventually(t, "the update of w-1 is cached", func() bool {
		g, err := inf.Lister().Namespace(ns).Get("w-1")
		return err == nil && g.Spec.Size == 100
	})
	if err := dyn.Delete(ctx, "w-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	it.Eventually(t, "the delete of w-0 is cached", func() bool {
		_, err := inf.Lister().Namespace(ns).Get("w-0")
		return apierrors.IsNotFound(err)
	})
	if got := len(inf.Store().List()); got != 4 {
		t.Errorf("%d gadgets cached, want 4", got)
	}
	it.Eventually(t, "the handler saw 5 adds, the update and the delete", func() bool {
		return it.Count(rec, "add") == 5 && it.Count(rec, "update") == 1 && it.Count(rec, "delete") == 1
	})
}
