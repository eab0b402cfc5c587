package source_test

import (
	"context"
	"errors"
	"fmt"
	"path"
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
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/metadata"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/cache"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

var (
	dynPodsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	gizmosGVR  = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gizmos"}
)

// newFakeDynamic is client-go's fake dynamic client serving pods and gizmos.
func newFakeDynamic(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{dynPodsGVR: "PodList", gizmosGVR: "GizmoList"}, objs...)
}

// newFakeMetadata is client-go's fake metadata client.
func newFakeMetadata(objs ...runtime.Object) *metadatafake.FakeMetadataClient {
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		panic(err)
	}
	return metadatafake.NewSimpleMetadataClient(scheme, objs...)
}

// dynPod is pod as an unstructured object.
func dynPod(ns, name string, lbls map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Pod")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(lbls)
	return u
}

// metaPod is pod as a metadata-only object.
func metaPod(ns, name string, lbls map[string]string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
	}
}

// gizmo is a plain Go struct for a custom resource that no scheme knows.
type gizmo struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              gizmoSpec `json:"spec"`
}

type gizmoSpec struct {
	Size  int64  `json:"size"`
	Color string `json:"color,omitempty"`
}

func (w *gizmo) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func ugizmo(ns, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Gizmo",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     spec,
	}}
}

// dynValueObject is a cache.Object that is not a pointer: Convert refuses it.
type dynValueObject struct {
	*metav1.TypeMeta
	*metav1.ObjectMeta
}

func (v dynValueObject) DeepCopyObject() runtime.Object { return v }

func TestDynamicConstructors(t *testing.T) {
	var nilDynamic *dynamicfake.FakeDynamicClient
	var nilSource *sourcetest.Fake[*unstructured.Unstructured]
	tests := []struct {
		name string
		make func() error
		want error  // wrapped sentinel, nil for success
		msg  string // part of the error message
	}{
		{"dynamic: nil client", func() error { _, err := source.FromDynamic(nil, dynPodsGVR, source.DynamicOptions{}); return err }, source.ErrNilSource, "FromDynamic: nil client"},
		{"dynamic: typed nil client", func() error {
			_, err := source.FromDynamic(nilDynamic, dynPodsGVR, source.DynamicOptions{})
			return err
		}, source.ErrNilSource, "nil client"},
		{"dynamic: no resource", func() error {
			_, err := source.FromDynamic(newFakeDynamic(), schema.GroupVersionResource{Version: "v1"}, source.DynamicOptions{})
			return err
		}, source.ErrNoResource, "a resource and a version are needed"},
		{"dynamic: no version", func() error {
			_, err := source.FromDynamic(newFakeDynamic(), gizmosGVR.GroupResource().WithVersion(""), source.DynamicOptions{})
			return err
		}, source.ErrNoResource, "gizmos.example.com"},
		{"dynamic: namespace of a cluster-scoped resource", func() error {
			_, err := source.FromDynamic(newFakeDynamic(), gizmosGVR, source.DynamicOptions{Namespace: "a", Scope: cache.ScopeCluster})
			return err
		}, nil, `gizmos.example.com is cluster-scoped: Namespace must be empty, not "a"`},
		{"dynamic: ok", func() error {
			_, err := source.FromDynamic(newFakeDynamic(), dynPodsGVR, source.DynamicOptions{})
			return err
		}, nil, ""},
		{"metadata: nil client", func() error { _, err := source.FromMetadata(nil, dynPodsGVR, source.DynamicOptions{}); return err }, source.ErrNilSource, "FromMetadata: nil client"},
		{"metadata: no resource", func() error {
			_, err := source.FromMetadata(newFakeMetadata(), schema.GroupVersionResource{}, source.DynamicOptions{})
			return err
		}, source.ErrNoResource, "FromMetadata"},
		{"metadata: ok", func() error {
			_, err := source.FromMetadata(newFakeMetadata(), dynPodsGVR, source.DynamicOptions{Namespace: "a"})
			return err
		}, nil, ""},
		{"convert: nil source", func() error { _, err := source.Convert[*gizmo](nil); return err }, source.ErrNilSource, "Convert: nil source"},
		{"convert: typed nil source", func() error { _, err := source.Convert[*gizmo](nilSource); return err }, source.ErrNilSource, "Convert"},
		{"convert: not a pointer", func() error {
			_, err := source.Convert[dynValueObject](sourcetest.NewFake(sourcetest.FakeOptions[*unstructured.Unstructured]{}))
			return err
		}, source.ErrWrongType, "source_test.dynValueObject is not a pointer to a struct"},
		{"convert: ok", func() error {
			_, err := source.Convert[*gizmo](sourcetest.NewFake(sourcetest.FakeOptions[*unstructured.Unstructured]{}))
			return err
		}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.make()
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("err = nil, want one saying %q", tt.msg)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want it to wrap %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err = %v, want it to say %q", err, tt.msg)
			}
		})
	}
}

// TestDynamicDescribe checks what each source tells informers: the exact
// GroupResource, the scope, and whether it streams lists (not on
// client-go's fakes, which declare they cannot; yes on real clients).
func TestDynamicDescribe(t *testing.T) {
	real := &rest.Config{Host: "https://127.0.0.1:1"} // never dialled: construction makes no request
	realDynamic, err := dynamic.NewForConfig(real)
	if err != nil {
		t.Fatal(err)
	}
	realMetadata, err := metadata.NewForConfig(real)
	if err != nil {
		t.Fatal(err)
	}
	type describer interface{ Info() source.Info }
	dyn := func(c dynamic.Interface, opts source.DynamicOptions) describer {
		src, err := source.FromDynamic(c, gizmosGVR, opts)
		if err != nil {
			t.Fatal(err)
		}
		return src.(describer)
	}
	meta := func(c metadata.Interface, opts source.DynamicOptions) describer {
		src, err := source.FromMetadata(c, gizmosGVR, opts)
		if err != nil {
			t.Fatal(err)
		}
		return src.(describer)
	}
	conv := func(inner describer) describer {
		src, err := source.Convert[*gizmo](inner.(source.Source[*unstructured.Unstructured]))
		if err != nil {
			t.Fatal(err)
		}
		return src.(describer)
	}
	gizmos := gizmosGVR.GroupResource()
	tests := []struct {
		name       string
		src        describer
		want       source.Resource
		wantStream bool
	}{
		{"dynamic fake, all namespaces", dyn(newFakeDynamic(), source.DynamicOptions{}), source.Resource{GroupResource: gizmos}, false},
		{"dynamic fake, one namespace", dyn(newFakeDynamic(), source.DynamicOptions{Namespace: "a"}), source.Resource{GroupResource: gizmos, Scope: cache.ScopeNamespaced}, false},
		{"dynamic real, cluster scope", dyn(realDynamic, source.DynamicOptions{Scope: cache.ScopeCluster}), source.Resource{GroupResource: gizmos, Scope: cache.ScopeCluster}, true},
		{"metadata fake", meta(newFakeMetadata(), source.DynamicOptions{Scope: cache.ScopeNamespaced}), source.Resource{GroupResource: gizmos, Scope: cache.ScopeNamespaced}, false},
		{"metadata real", meta(realMetadata, source.DynamicOptions{}), source.Resource{GroupResource: gizmos}, true},
		{"convert of dynamic fake", conv(dyn(newFakeDynamic(), source.DynamicOptions{Namespace: "a"})), source.Resource{GroupResource: gizmos, Scope: cache.ScopeNamespaced}, false},
		{"convert of dynamic real", conv(dyn(realDynamic, source.DynamicOptions{})), source.Resource{GroupResource: gizmos}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.src.Info().Resource); diff != "" {
				t.Errorf("Info().Resource (-want +got):\n%s", diff)
			}
			if got := tt.src.Info().WatchList; got != tt.wantStream {
				t.Errorf("Info().WatchList = %v, want %v", got, tt.wantStream)
			}
		})
	}

	// Over a source that does not describe itself, Convert guesses from T.
	plain := struct {
		source.Source[*unstructured.Unstructured]
	}{sourcetest.NewFake(sourcetest.FakeOptions[*unstructured.Unstructured]{})}
	src, err := source.Convert[*gizmo](plain)
	if err != nil {
		t.Fatal(err)
	}
	if got := source.ResourceOf(src).GroupResource; got != (schema.GroupResource{Resource: "gizmos"}) {
		t.Errorf("Convert over an undescribed source: resource %v, want gizmos", got)
	}
	// For T unstructured, Convert is the identity.
	if same, err := source.Convert[*unstructured.Unstructured](plain); err != nil || same != source.Source[*unstructured.Unstructured](plain) {
		t.Errorf("Convert[*unstructured.Unstructured] = %v, %v; want src itself", same, err)
	}
}

// fakeTrackerUnlike names the checks the sources over client-go's fake
// dynamic and metadata clients fail, and why: they serve from the same
// object tracker as the fake clientset, and fail the same checks for the
// same reasons (their List filters by label, their Watch does not; they
// declare IsWatchListSemanticsUnSupported).
var fakeTrackerUnlike = clientsetUnlike

// skipUnlike skips a conformance check a client-go fake cannot pass.
func skipUnlike(t *testing.T, fake string) {
	if reason, ok := fakeTrackerUnlike[path.Base(t.Name())]; ok {
		t.Skip("client-go's fake " + fake + " client: " + reason)
	}
}

// TestConformanceFromDynamic runs the suite on FromDynamic over client-go's
// fake dynamic client, across all namespaces, without streaming lists
// and without Compact: the tracker has neither.
func TestConformanceFromDynamic(t *testing.T) {
	sourcetest.Run(t, func(t *testing.T) sourcetest.Case[*unstructured.Unstructured] {
		skipUnlike(t, "dynamic")
		client := newFakeDynamic(dynPod("other", "list-a", nil), dynPod("other", "sel-a", map[string]string{"app": "web"}))
		src, err := source.FromDynamic(client, dynPodsGVR, source.DynamicOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods := client.Resource(dynPodsGVR).Namespace(conformanceNS)
		return sourcetest.Case[*unstructured.Unstructured]{
			Source:    src,
			Namespace: conformanceNS,
			New: func(name string, lbls map[string]string) *unstructured.Unstructured {
				return dynPod(conformanceNS, name, lbls)
			},
			Create: func(ctx context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
				return pods.Create(ctx, u, metav1.CreateOptions{})
			},
			Update: func(ctx context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
				return pods.Update(ctx, u, metav1.UpdateOptions{})
			},
			Delete: func(ctx context.Context, k cache.Key) error {
				return pods.Delete(ctx, k.Name, metav1.DeleteOptions{})
			},
			NoWatchList: true,
		}
	})
}

// metadataWriter is what client-go's fake metadata client offers to change
// its objects, as the metadata client itself cannot.
type metadataWriter interface {
	CreateFake(obj *metav1.PartialObjectMetadata, opts metav1.CreateOptions, subresources ...string) (*metav1.PartialObjectMetadata, error)
	UpdateFake(obj *metav1.PartialObjectMetadata, opts metav1.UpdateOptions, subresources ...string) (*metav1.PartialObjectMetadata, error)
}

// TestConformanceFromMetadata runs the suite on FromMetadata over
// client-go's fake metadata client, in one namespace, with the same
// limits as the dynamic one.
func TestConformanceFromMetadata(t *testing.T) {
	sourcetest.Run(t, func(t *testing.T) sourcetest.Case[*metav1.PartialObjectMetadata] {
		skipUnlike(t, "metadata")
		client := newFakeMetadata(metaPod("other", "list-a", nil))
		src, err := source.FromMetadata(client, dynPodsGVR, source.DynamicOptions{Namespace: conformanceNS})
		if err != nil {
			t.Fatal(err)
		}
		pods := client.Resource(dynPodsGVR).Namespace(conformanceNS)
		w, ok := pods.(metadataWriter)
		if !ok {
			t.Fatalf("client-go's fake metadata client %T has no CreateFake", pods)
		}
		return sourcetest.Case[*metav1.PartialObjectMetadata]{
			Source:    src,
			Namespace: conformanceNS,
			New: func(name string, lbls map[string]string) *metav1.PartialObjectMetadata {
				return metaPod(conformanceNS, name, lbls)
			},
			Create: func(_ context.Context, m *metav1.PartialObjectMetadata) (*metav1.PartialObjectMetadata, error) {
				return w.CreateFake(m, metav1.CreateOptions{})
			},
			Update: func(_ context.Context, m *metav1.PartialObjectMetadata) (*metav1.PartialObjectMetadata, error) {
				return w.UpdateFake(m, metav1.UpdateOptions{})
			},
			Delete: func(ctx context.Context, k cache.Key) error {
				return pods.Delete(ctx, k.Name, metav1.DeleteOptions{})
			},
			NoWatchList: true,
		}
	})
}

// TestConformanceConvert runs the whole suite, nothing skipped, on
// Convert into *corev1.Pod over a sourcetest.Fake of unstructured pods,
// which pages, streams lists (the end bookmark is converted too) and
// compacts; with and without streaming lists.
func TestConformanceConvert(t *testing.T) {
	for _, noWatchList := range []bool{false, true} {
		t.Run(map[bool]string{false: "WatchList", true: "NoWatchList"}[noWatchList], func(t *testing.T) {
			sourcetest.Run(t, func(t *testing.T) sourcetest.Case[*corev1.Pod] {
				f := sourcetest.NewFake(sourcetest.FakeOptions[*unstructured.Unstructured]{
					Resource:    schema.GroupResource{Resource: "pods"},
					NoWatchList: noWatchList,
					Objects:     []*unstructured.Unstructured{dynPod("other", "list-a", nil), dynPod("other", "sel-a", map[string]string{"app": "web"})},
				})
				src, err := source.Convert[*corev1.Pod](f)
				if err != nil {
					t.Fatal(err)
				}
				through := func(p *corev1.Pod, verb func(*unstructured.Unstructured) (*unstructured.Unstructured, error)) (*corev1.Pod, error) {
					m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
					if err != nil {
						return nil, err
					}
					u, err := verb(&unstructured.Unstructured{Object: m})
					if err != nil {
						return nil, err
					}
					out := &corev1.Pod{}
					return out, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out)
				}
				return sourcetest.Case[*corev1.Pod]{
					Source:    src,
					Namespace: conformanceNS,
					New: func(name string, lbls map[string]string) *corev1.Pod {
						p := pod(conformanceNS, name, lbls)
						p.APIVersion, p.Kind = "v1", "Pod"
						return p
					},
					Create: func(_ context.Context, p *corev1.Pod) (*corev1.Pod, error) { return through(p, f.Create) },
					Update: func(_ context.Context, p *corev1.Pod) (*corev1.Pod, error) { return through(p, f.Update) },
					Delete: func(_ context.Context, k cache.Key) error {
						_, err := f.Delete(k)
						return err
					},
					Compact: func(context.Context) error {
						f.Compact()
						return nil
					},
					NoWatchList: noWatchList,
				}
			})
		})
	}
}

// TestConvertErrors checks that an object that does not fit T is an error
// naming the object and T, from List and from Next, and never a panic;
// that errors of the adapted source pass through as they are; and that a
// bookmark converts whatever else its object holds.
func TestConvertErrors(t *testing.T) {
	good := ugizmo("ns", "good", map[string]any{"size": int64(1)})
	bad := ugizmo("ns", "bad", map[string]any{"size": "large"})
	tests := []struct {
		name    string
		objects []*unstructured.Unstructured
		event   func(*sourcetest.Fake[*unstructured.Unstructured])
		wantErr string // "" for no error
		want    []string
	}{
		{name: "good objects", objects: []*unstructured.Unstructured{good}, want: []string{"ADDED ns/good size=1"}},
		{
			name:    "a string for a number",
			objects: []*unstructured.Unstructured{good, bad},
			wantErr: "Gizmo ns/bad into *source_test.gizmo",
		},
		{
			name:    "spec that is not an object",
			objects: []*unstructured.Unstructured{ugizmo("ns", "list", nil)},
			event: func(f *sourcetest.Fake[*unstructured.Unstructured]) {
				u := ugizmo("ns", "list", nil)
				u.Object["spec"] = []any{"a"}
				f.InjectEvent(source.Event[*unstructured.Unstructured]{Type: watch.Modified, Object: u})
			},
			wantErr: "Gizmo ns/list into *source_test.gizmo",
		},
		{
			name: "a bookmark whose other fields do not fit",
			event: func(f *sourcetest.Fake[*unstructured.Unstructured]) {
				u := ugizmo("", "", map[string]any{"size": "large"})
				u.SetResourceVersion("7")
				u.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
				f.InjectEvent(source.Event[*unstructured.Unstructured]{Type: watch.Bookmark, Object: u})
			},
			want: []string{"BOOKMARK / size=0 rv=7 annotations=map[k8s.io/initial-events-end:true]"},
		},
	}
	describe := func(ev source.Event[*gizmo]) string {
		g := ev.Object
		s := fmt.Sprintf("%s %s/%s size=%d", ev.Type, g.Namespace, g.Name, g.Spec.Size)
		if ev.Type == watch.Bookmark {
			s += fmt.Sprintf(" rv=%s annotations=%v", g.ResourceVersion, g.Annotations)
		}
		return s
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := sourcetest.NewFake(sourcetest.FakeOptions[*unstructured.Unstructured]{Objects: tt.objects})
			src, err := source.Convert[*gizmo](f)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			var gotErr error
			if tt.event == nil {
				// The objects come as a list, then as a streaming list.
				l, err := src.List(t.Context(), metav1.ListOptions{})
				gotErr = err
				if err != nil {
					wantPhase(t, err, source.PhaseList)
				}
				for _, g := range l.Items {
					got = append(got, describe(source.Event[*gizmo]{Type: watch.Added, Object: g}))
				}
			} else {
				l, err := src.List(t.Context(), metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				w, err := src.Watch(t.Context(), metav1.ListOptions{ResourceVersion: l.ResourceVersion})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
				tt.event(f)
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				defer cancel()
				ev, err := w.Next(ctx)
				gotErr = err
				if err != nil {
					wantPhase(t, err, source.PhaseWatch)
				} else {
					got = append(got, describe(ev))
				}
			}
			if tt.wantErr == "" {
				if gotErr != nil {
					t.Fatalf("error %v, want none", gotErr)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("objects (-want +got):\n%s", diff)
				}
				return
			}
			if gotErr == nil {
				t.Fatalf("no error, got %v; want one saying %q", got, tt.wantErr)
			}
			if !errors.Is(gotErr, source.ErrWrongType) || !strings.Contains(gotErr.Error(), tt.wantErr) {
				t.Errorf("error %v, want one wrapping ErrWrongType that says %q", gotErr, tt.wantErr)
			}
		})
	}

	// Errors of the adapted source pass through unchanged.
	f := sourcetest.NewFake(sourcetest.FakeOptions[*unstructured.Unstructured]{Resource: gizmosGVR.GroupResource()})
	src, err := source.Convert[*gizmo](f)
	if err != nil {
		t.Fatal(err)
	}
	f.FailLists(1, apierrors.NewForbidden(gizmosGVR.GroupResource(), "", errors.New("no")))
	if _, err := src.List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("List = %v, want the fake's Forbidden", err)
	} else {
		wantPhase(t, err, source.PhaseList)
	}
	f.FailWatches(1, apierrors.NewTooManyRequests("slow down", 1))
	if _, err := src.Watch(t.Context(), metav1.ListOptions{}); !apierrors.IsTooManyRequests(err) {
		t.Errorf("Watch = %v, want the fake's TooManyRequests", err)
	} else {
		wantPhase(t, err, source.PhaseWatchStart)
	}
	w, err := src.Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	f.InjectWatchError(apierrors.NewInternalError(errors.New("boom")))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := w.Next(ctx); !apierrors.IsInternalError(err) {
		t.Errorf("Next = %v, want the fake's InternalError", err)
	} else {
		wantPhase(t, err, source.PhaseWatch)
	}
}

// wantPhase checks that err is an *source.Error of phase p, not wrapped
// twice.
func wantPhase(t *testing.T, err error, p source.Phase) {
	t.Helper()
	var serr *source.Error
	if !errors.As(err, &serr) || serr.Phase != p {
		t.Errorf("error %v is not an *source.Error in phase %s", err, p)
	} else if inner := (*source.Error)(nil); errors.As(serr.Err, &inner) {
		t.Errorf("error %v wraps an *source.Error twice", err)
	}
}

// TestDynamicInformers runs an informer over each source on client-go's
// fakes: it syncs, its lister answers Get and List(selector), and a
// missing object's NotFound names the resource (gizmos.example.com, not
// unstructureds or partialobjectmetadata).
func TestDynamicInformers(t *testing.T) {
	gizmos := gizmosGVR.GroupResource()
	objs := []runtime.Object{
		ugizmo("a", "g1", map[string]any{"size": int64(1)}),
		ugizmo("a", "g2", map[string]any{"size": int64(2)}),
		ugizmo("b", "g3", map[string]any{"size": int64(3)}),
	}
	objs[1].(*unstructured.Unstructured).SetLabels(map[string]string{"color": "red"})
	objs[2].(*unstructured.Unstructured).SetLabels(map[string]string{"color": "red"})
	metaObjs := make([]runtime.Object, len(objs))
	for i, o := range objs {
		u := o.(*unstructured.Unstructured)
		metaObjs[i] = &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()},
			ObjectMeta: metav1.ObjectMeta{Namespace: u.GetNamespace(), Name: u.GetName(), Labels: u.GetLabels()},
		}
	}
	dyn, err := source.FromDynamic(newFakeDynamic(objs...), gizmosGVR, source.DynamicOptions{})
	if err != nil {
		t.Fatal(err)
	}
	md, err := source.FromMetadata(newFakeMetadata(metaObjs...), gizmosGVR, source.DynamicOptions{})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := source.Convert[*gizmo](dyn)
	if err != nil {
		t.Fatal(err)
	}
	dynInf := checkInformer(t, dyn, gizmos)
	checkInformer(t, md, gizmos)
	convInf := checkInformer(t, conv, gizmos)

	// The objects are of each source's type, with their content.
	u, _ := dynInf.Lister().Namespace("b").Get("g3")
	if size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size"); size != 3 {
		t.Errorf("dynamic: g3 has size %d, want 3", size)
	}
	g, _ := convInf.Lister().Namespace("b").Get("g3")
	if g.Spec.Size != 3 {
		t.Errorf("converted: g3 has size %d, want 3", g.Spec.Size)
	}
}

// checkInformer runs an informer over src until the test ends and checks
// its sync, lister and NotFound error.
func checkInformer[T cache.Object](t *testing.T, src source.Source[T], gr schema.GroupResource) *typed.Informer[T] {
	t.Helper()
	inf, err := typed.NewInformer(src, typed.Options[T]{})
	if err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatalf("%T: WaitForSync: %v", src, err)
	}
	if name := inf.Name(); !strings.Contains(name, gr.String()) {
		t.Errorf("%T: informer name %q does not name %s", src, name, gr)
	}
	red, err := inf.Lister().List(labels.SelectorFromSet(labels.Set{"color": "red"}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a/g2", "b/g3"}, keys(red)); diff != "" {
		t.Errorf("%T: List(color=red) (-want +got):\n%s", src, diff)
	}
	inA, _ := inf.Lister().Namespace("a").List(labels.Everything())
	if diff := cmp.Diff([]string{"a/g1", "a/g2"}, keys(inA)); diff != "" {
		t.Errorf("%T: Namespace(a).List (-want +got):\n%s", src, diff)
	}
	_, err = inf.Lister().Namespace("a").Get("missing")
	var status apierrors.APIStatus
	switch {
	case !apierrors.IsNotFound(err):
		t.Errorf("%T: Get(missing) = %v, want NotFound", src, err)
	case !errors.As(err, &status) || status.Status().Details == nil ||
		status.Status().Details.Group != gr.Group || status.Status().Details.Kind != gr.Resource:
		t.Errorf("%T: NotFound %v does not name %s", src, err, gr)
	case !strings.Contains(err.Error(), gr.String()):
		t.Errorf("%T: NotFound %q does not say %s", src, err, gr)
	}
	return inf
}

func keys[T cache.Object](objs []T) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.GetNamespace()+"/"+o.GetName())
	}
	slices.Sort(out)
	return out
}
