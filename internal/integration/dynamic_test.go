//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/cache"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/internal/testcluster"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

var dynPodsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// dynWidget is the widgets CRD (widgetCRD) as a plain Go struct that no
// scheme knows, read through source.Convert.
type dynWidget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              dynWidgetSpec `json:"spec"`
}

type dynWidgetSpec struct {
	Size int64 `json:"size"`
}

func (w *dynWidget) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func metadataClient(t *testing.T, cfg *rest.Config) metadata.Interface {
	t.Helper()
	m, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// toUnstructured and fromUnstructured convert between a Go object and its
// unstructured form, failing the step with an error.
func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

func fromUnstructured[T any](u *unstructured.Unstructured, out T) (T, error) {
	return out, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out)
}

// createEstablishedCRD creates the widgets CRD of group and waits until its
// resource is served; it returns the resource.
func createEstablishedCRD(ctx context.Context, t *testing.T, dyn dynamic.Interface, group string) schema.GroupVersionResource {
	t.Helper()
	if _, err := dyn.Resource(crdResource).Create(ctx, widgetCRD(group), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(crdResource).Delete(context.Background(), "widgets."+group, metav1.DeleteOptions{})
	})
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	it.Eventually(t, "the widgets resource is served", func() bool {
		_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil
	})
	return gvr
}

// waitDiscovered waits until discovery lists gvr: a CRD's resource can be
// served (createEstablishedCRD) a moment before discovery says so, and
// FromConfig maps kinds through discovery.
func waitDiscovered(t *testing.T, cfg *rest.Config, gvr schema.GroupVersionResource) {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	it.Eventually(t, "discovery lists "+gvr.String(), func() bool {
		rl, err := dc.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		if err != nil {
			return false
		}
		for _, r := range rl.APIResources {
			if r.Name == gvr.Resource {
				return true
			}
		}
		return false
	})
}

// confNamespace creates a fresh namespace for one conformance check.
func confNamespace(t *testing.T, cs kubernetes.Interface) string {
	ns := uniqueName("dyn-conf")
	createNamespaces(t.Context(), t, cs, ns)
	return ns
}

// dynConfigMapsGVR is the conformance suite's built-in resource: a pod's
// deletion is a MODIFIED (its deletionTimestamp) before the DELETED, which
// the suite does not expect; a ConfigMap's is one DELETED.
var dynConfigMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// configMapMeta is the metadata of a ConfigMap as the metadata client
// returns it.
func configMapMeta(c *corev1.ConfigMap) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: c.ObjectMeta}
}

func newConfigMap(ns, name string, lbls map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}}
}

// TestConformanceDynamicRealServer runs the source conformance suite
// against kube-apiserver for ConfigMaps through the dynamic client and
// through the metadata client, and a CRD through the metadata client and
// through Convert into a Go struct, every check; streaming lists included
// (the converted end bookmark ends them). The cluster has no watch cache,
// so that a watch from a compacted resourceVersion gets its 410 at once.
func TestConformanceDynamicRealServer(t *testing.T) {
	leakcheck.Check(t)
	c := testcluster.Start(t, testcluster.Options{APIServerFlags: []string{"--watch-cache=false"}})
	cs := protobufClientset(t, c.AdminConfig())
	dyn := dynamicClient(t, c.AdminConfig())
	md := metadataClient(t, c.AdminConfig())

	t.Run("FromDynamic", func(t *testing.T) {
		sourcetest.Run(t, func(t *testing.T) sourcetest.Case[*unstructured.Unstructured] {
			ns := confNamespace(t, cs)
			cms := dyn.Resource(dynConfigMapsGVR).Namespace(ns)
			src, err := source.FromDynamic(dyn, dynConfigMapsGVR, source.DynamicOptions{Namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			return sourcetest.Case[*unstructured.Unstructured]{
				Source:    src,
				Namespace: ns,
				New: func(name string, lbls map[string]string) *unstructured.Unstructured {
					c := newConfigMap(ns, name, lbls)
					c.APIVersion, c.Kind = "v1", "ConfigMap"
					u, err := toUnstructured(c)
					if err != nil {
						t.Fatal(err)
					}
					return u
				},
				Create: func(ctx context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
					return cms.Create(ctx, u, metav1.CreateOptions{})
				},
				Update: func(ctx context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
					return cms.Update(ctx, u, metav1.UpdateOptions{})
				},
				Delete:  func(ctx context.Context, k cache.Key) error { return cms.Delete(ctx, k.Name, metav1.DeleteOptions{}) },
				Compact: func(context.Context) error { c.CompactEtcd(t); return nil },
			}
		})
	})

	t.Run("FromMetadata", func(t *testing.T) {
		sourcetest.Run(t, func(t *testing.T) sourcetest.Case[*metav1.PartialObjectMetadata] {
			ns := confNamespace(t, cs)
			cms := cs.CoreV1().ConfigMaps(ns)
			src, err := source.FromMetadata(md, dynConfigMapsGVR, source.DynamicOptions{Namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			// The metadata client cannot create or update: the clientset
			// writes, and the case hands back the metadata.
			return sourcetest.Case[*metav1.PartialObjectMetadata]{
				Source:    src,
				Namespace: ns,
				New: func(name string, lbls map[string]string) *metav1.PartialObjectMetadata {
					return configMapMeta(newConfigMap(ns, name, lbls))
				},
				Create: func(ctx context.Context, m *metav1.PartialObjectMetadata) (*metav1.PartialObjectMetadata, error) {
					p, err := cms.Create(ctx, newConfigMap(m.Namespace, m.Name, m.Labels), metav1.CreateOptions{})
					if err != nil {
						return nil, err
					}
					return configMapMeta(p), nil
				},
				Update: func(ctx context.Context, m *metav1.PartialObjectMetadata) (*metav1.PartialObjectMetadata, error) {
					p, err := cms.Get(ctx, m.Name, metav1.GetOptions{})
					if err != nil {
						return nil, err
					}
					p.Labels, p.ResourceVersion = m.Labels, m.ResourceVersion
					if p, err = cms.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
						return nil, err
					}
					return configMapMeta(p), nil
				},
				Delete:  func(ctx context.Context, k cache.Key) error { return cms.Delete(ctx, k.Name, metav1.DeleteOptions{}) },
				Compact: func(context.Context) error { c.CompactEtcd(t); return nil },
			}
		})
	})

	gvr := createEstablishedCRD(t.Context(), t, dyn, uniqueName("dyn")+".example.test")
	t.Run("FromMetadataCRD", func(t *testing.T) {
		sourcetest.Run(t, func(t *testing.T) sourcetest.Case[*metav1.PartialObjectMetadata] {
			ns := confNamespace(t, cs)
			widgets := dyn.Resource(gvr).Namespace(ns)
			src, err := source.FromMetadata(md, gvr, source.DynamicOptions{Namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			// The dynamic client writes; the case hands back the metadata.
			write := func(m *metav1.PartialObjectMetadata, verb func(*unstructured.Unstructured) (*unstructured.Unstructured, error)) (*metav1.PartialObjectMetadata, error) {
				u := widget(gvr.GroupVersion(), m.Namespace, m.Name, 1, m.Labels)
				u.SetResourceVersion(m.ResourceVersion)
				u, err := verb(u)
				if err != nil {
					return nil, err
				}
				return fromUnstructured(u, &metav1.PartialObjectMetadata{})
			}
			return sourcetest.Case[*metav1.PartialObjectMetadata]{
				Source:    src,
				Namespace: ns,
				New: func(name string, lbls map[string]string) *metav1.PartialObjectMetadata {
					return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}}
				},
				Create: func(ctx context.Context, m *metav1.PartialObjectMetadata) (*metav1.PartialObjectMetadata, error) {
					return write(m, func(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
						return widgets.Create(ctx, u, metav1.CreateOptions{})
					})
				},
				Update: func(ctx context.Context, m *metav1.PartialObjectMetadata) (*metav1.PartialObjectMetadata, error) {
					return write(m, func(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
						return widgets.Update(ctx, u, metav1.UpdateOptions{})
					})
				},
				Delete: func(ctx context.Context, k cache.Key) error {
					return widgets.Delete(ctx, k.Name, metav1.DeleteOptions{})
				},
				Compact: func(context.Context) error { c.CompactEtcd(t); return nil },
			}
		})
	})

	t.Run("Convert", func(t *testing.T) {
		sourcetest.Run(t, func(t *testing.T) sourcetest.Case[*dynWidget] {
			ns := confNamespace(t, cs)
			widgets := dyn.Resource(gvr).Namespace(ns)
			u, err := source.FromDynamic(dyn, gvr, source.DynamicOptions{Namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			src, err := source.Convert[*dynWidget](u)
			if err != nil {
				t.Fatal(err)
			}
			write := func(w *dynWidget, verb func(*unstructured.Unstructured) (*unstructured.Unstructured, error)) (*dynWidget, error) {
				u, err := toUnstructured(w)
				if err != nil {
					return nil, err
				}
				if u, err = verb(u); err != nil {
					return nil, err
				}
				return fromUnstructured(u, &dynWidget{})
			}
			return sourcetest.Case[*dynWidget]{
				Source:    src,
				Namespace: ns,
				New: func(name string, lbls map[string]string) *dynWidget {
					return &dynWidget{
						TypeMeta:   metav1.TypeMeta{APIVersion: gvr.GroupVersion().String(), Kind: "Widget"},
						ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
						Spec:       dynWidgetSpec{Size: int64(len(name))},
					}
				},
				Create: func(ctx context.Context, w *dynWidget) (*dynWidget, error) {
					return write(w, func(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
						return widgets.Create(ctx, u, metav1.CreateOptions{})
					})
				},
				Update: func(ctx context.Context, w *dynWidget) (*dynWidget, error) {
					return write(w, func(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
						return widgets.Update(ctx, u, metav1.UpdateOptions{})
					})
				},
				Delete: func(ctx context.Context, k cache.Key) error {
					return widgets.Delete(ctx, k.Name, metav1.DeleteOptions{})
				},
				Compact: func(context.Context) error { c.CompactEtcd(t); return nil },
			}
		})
	})
}

// TestDynamicInformers: an informer over each source (pods through the
// dynamic and the metadata client, widgets through Convert) syncs by a
// streaming list against the real server, answers Get and List(selector)
// as the server does, names its resource in NotFound errors (pods,
// widgets.<group>: not unstructureds), and follows a create and a delete.
func TestDynamicInformers(t *testing.T) {
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	cs := protobufClientset(t, c.AdminConfig())
	dyn := dynamicClient(t, c.AdminConfig())
	md := metadataClient(t, c.AdminConfig())
	ns := uniqueName("dyn-inf")
	createNamespaces(ctx, t, cs, ns)
	gvr := createEstablishedCRD(ctx, t, dyn, uniqueName("dyn")+".example.test")
	apps := []string{"web", "db", "web", "cache", "web", "db"}
	var pods []*corev1.Pod
	for i, app := range apps {
		pods = append(pods, newPod(ns, fmt.Sprintf("p-%d", i), map[string]string{"app": app}))
		w := widget(gvr.GroupVersion(), ns, fmt.Sprintf("w-%d", i), int64(i), map[string]string{"app": app})
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create widget: %v", err)
		}
	}
	seed(ctx, t, cs, pods, 4)

	dynSrc, err := source.FromDynamic(dyn, dynPodsGVR, source.DynamicOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	mdSrc, err := source.FromMetadata(md, dynPodsGVR, source.DynamicOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	wu, err := source.FromDynamic(dyn, gvr, source.DynamicOptions{}) // every namespace
	if err != nil {
		t.Fatal(err)
	}
	wSrc, err := source.Convert[*dynWidget](wu)
	if err != nil {
		t.Fatal(err)
	}
	server := func(gvr schema.GroupVersionResource) func(sel string) []string {
		return func(sel string) []string {
			l, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				t.Fatal(err)
			}
			return dynKeys(ptrs(l.Items))
		}
	}
	dynInf := checkDynInformer(t, dynSrc, ns, dynPodsGVR.GroupResource(), server(dynPodsGVR))
	mdInf := checkDynInformer(t, mdSrc, ns, dynPodsGVR.GroupResource(), server(dynPodsGVR))
	wInf := checkDynInformer(t, wSrc, ns, gvr.GroupResource(), server(gvr))

	// Each source's objects carry what it serves.
	p, _ := dynInf.Lister().Namespace(ns).Get("p-1")
	if img, _, _ := unstructured.NestedSlice(p.Object, "spec", "containers"); len(img) != 1 {
		t.Errorf("dynamic: p-1 has %d containers, want 1", len(img))
	}
	m, _ := mdInf.Lister().Namespace(ns).Get("p-1")
	if m.Labels["app"] != "db" || m.UID == "" {
		t.Errorf("metadata: p-1 = labels %v uid %q, want app=db and a uid", m.Labels, m.UID)
	}
	for i := range apps {
		w, err := wInf.Lister().Namespace(ns).Get(fmt.Sprintf("w-%d", i))
		if err != nil || w.Spec.Size != int64(i) {
			t.Errorf("converted: Get(w-%d) = %+v, %v; want spec.size %d", i, w, err, i)
		}
	}

	// A create and a delete reach every informer.
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, newPod(ns, "late", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, widget(gvr.GroupVersion(), ns, "late", 42, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	has := func(name string) bool {
		_, e1 := dynInf.Lister().Namespace(ns).Get(name)
		_, e2 := mdInf.Lister().Namespace(ns).Get(name)
		_, e3 := wInf.Lister().Namespace(ns).Get(name)
		return e1 == nil && e2 == nil && e3 == nil
	}
	it.Eventually(t, "every informer has the late objects", func() bool { return has("late") })
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "p-0", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	if err := dyn.Resource(gvr).Namespace(ns).Delete(ctx, "w-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	it.Eventually(t, "no informer has the deleted objects", func() bool {
		_, e1 := dynInf.Lister().Namespace(ns).Get("p-0")
		_, e2 := mdInf.Lister().Namespace(ns).Get("p-0")
		_, e3 := wInf.Lister().Namespace(ns).Get("w-0")
		return apierrors.IsNotFound(e1) && apierrors.IsNotFound(e2) && apierrors.IsNotFound(e3)
	})
	t.Logf("figures: dynamic %s; metadata %s; converted %s",
		statsString(dynInf.Status().Stats), statsString(mdInf.Status().Stats), statsString(wInf.Status().Stats))
}

// checkDynInformer runs an informer over src until the test ends and
// checks that it synced by a streaming list, that its lister agrees with
// the server (server lists ns with a label selector) and that a NotFound
// names gr.
func checkDynInformer[T cache.Object](t *testing.T, src source.Source[T], ns string, gr schema.GroupResource, server func(sel string) []string) *typed.Informer[T] {
	t.Helper()
	inf := newInformer(t, src, typed.Options[T]{})
	it.Run(t, inf)
	if err := inf.WaitForSync(waitCtxFor(t, time.Minute)); err != nil {
		t.Fatalf("%s: WaitForSync: %v", inf.Name(), err)
	}
	if st := inf.Status().Stats; st.WatchLists < 1 || st.Lists != 0 {
		t.Errorf("%s: %s; want a streaming list and no LIST", inf.Name(), statsString(st))
	}
	if !strings.Contains(inf.Name(), gr.String()) {
		t.Errorf("informer name %q does not name %s", inf.Name(), gr)
	}
	for _, sel := range []string{"app=web", "app in (db,cache)", "app!=web", ""} {
		s, err := labels.Parse(sel)
		if err != nil {
			t.Fatal(err)
		}
		got, err := inf.Lister().Namespace(ns).List(s)
		if err != nil {
			t.Fatalf("%s: List(%q): %v", inf.Name(), sel, err)
		}
		if diff := cmp.Diff(server(sel), dynKeys(got)); diff != "" {
			t.Errorf("%s: List(%q) differs from the server (-server +lister):\n%s", inf.Name(), sel, diff)
		}
	}
	_, err := inf.Lister().Namespace(ns).Get("missing")
	var status apierrors.APIStatus
	switch {
	case !apierrors.IsNotFound(err):
		t.Errorf("%s: Get(missing) = %v, want NotFound", inf.Name(), err)
	case !errors.As(err, &status) || status.Status().Details == nil ||
		status.Status().Details.Group != gr.Group || status.Status().Details.Kind != gr.Resource:
		t.Errorf("%s: NotFound %v does not name %s", inf.Name(), err, gr)
	case !strings.Contains(err.Error(), gr.String()+` "missing" not found`):
		t.Errorf("%s: NotFound %q does not say %s", inf.Name(), err, gr)
	default:
		t.Logf("%s: Get(missing): %v", inf.Name(), err)
	}
	return inf
}

func dynKeys[T cache.Object](objs []T) []string {
	out := []string{}
	for _, o := range objs {
		out = append(out, o.GetNamespace()+"/"+o.GetName())
	}
	slices.Sort(out)
	return out
}
