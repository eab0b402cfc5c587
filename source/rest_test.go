package source_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

// TestConformanceFromConfig runs the suite on FromConfig over a Fake
// served as an API server, in one namespace and in all namespaces.
func TestConformanceFromConfig(t *testing.T) {
	for _, ns := range []string{conformanceNS, ""} {
		for _, workers := range []int{0, 3} {
			t.Run(fmt.Sprintf("namespace=%q/workers=%d", ns, workers), func(t *testing.T) {
				sourcetest.Run(t, fakeCase(false, func(f *sourcetest.Fake[*corev1.Pod]) (source.Source[*corev1.Pod], error) {
					return source.FromConfig[*corev1.Pod](podserver.New(t, f).Config(), source.RESTOptions{Namespace: ns, Mapper: podserver.Mapper(), DecodeWorkers: workers})
				}))
			})
		}
	}
}

func TestFromConfigResource(t *testing.T) {
	s := podserver.New(t, sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{}))
	got := source.ResourceOf(restPods(t, s, ""))
	want := source.Resource{GroupResource: schema.GroupResource{Resource: "pods"}, Scope: cache.ScopeNamespaced}
	if got != want {
		t.Errorf("ResourceOf = %+v, want %+v", got, want)
	}
}

// TestFromConfigDecodes: list items and watch objects arrive as the server
// sent them, with their kind cleared as client-go's typed clients do.
func TestFromConfigDecodes(t *testing.T) {
	f := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
	in := pod("ns", "a", map[string]string{"app": "web"})
	in.Spec.Containers = []corev1.Container{{Name: "c", Image: "nginx", Args: []string{"-x"}}}
	in.Annotations = map[string]string{"note": "ünïcode \"quoted\"\n"}
	created, err := f.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	src := restPods(t, podserver.New(t, f), "ns")
	l, err := src.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 {
		t.Fatalf("List: %d items, want 1", len(l.Items))
	}
	if diff := cmp.Diff(created, l.Items[0]); diff != "" {
		t.Errorf("listed pod (-want +got):\n%s", diff)
	}
	w, err := src.Watch(t.Context(), metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	upd := created.DeepCopy()
	upd.Labels["app"] = "db"
	if upd, err = f.Update(upd); err != nil {
		t.Fatal(err)
	}
	ev := next(t, w)
	if ev.Type != watch.Modified {
		t.Errorf("event %s, want MODIFIED", ev.Type)
	}
	if diff := cmp.Diff(upd, ev.Object); diff != "" {
		t.Errorf("watched pod (-want +got):\n%s", diff)
	}
}

// TestFromConfigStreamErrors: ERROR events carry the server's status;
// frames that make no sense are malformed; an object of another kind is
// the wrong type; an object that is JSON but does not decode into T is
// undecodable; none of them panics.
func TestFromConfigStreamErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame string
		want  error
		check func(error) bool
	}{
		{"error event", `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","code":410,"reason":"Expired","message":"too old"}}` + "\n", nil, apierrors.IsResourceExpired},
		{"error event, object first", `{"object":{"kind":"Status","apiVersion":"v1","status":"Failure","code":500,"message":"boom"},"type":"ERROR"}` + "\n", nil, apierrors.IsInternalError},
		{"error without status", `{"type":"ERROR"}` + "\n", source.ErrMalformed, nil},
		{"unknown type", `{"type":"RENAMED","object":{"kind":"Pod","apiVersion":"v1"}}` + "\n", source.ErrMalformed, nil},
		{"no object", `{"type":"ADDED"}` + "\n", source.ErrMalformed, nil},
		{"null object", `{"type":"ADDED","object":null}` + "\n", source.ErrNilObject, nil},
		{"another kind", `{"type":"ADDED","object":{"kind":"Service","apiVersion":"v1","metadata":{"name":"s"}}}` + "\n", source.ErrWrongType, nil},
		{"wrong field type", `{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":7}}}` + "\n", source.ErrUndecodable, nil},
		{"not JSON", "<html>gateway</html>\n", source.ErrMalformed, nil},
		{"bad time", `{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","creationTimestamp":"yesterday"}}}` + "\n", source.ErrUndecodable, nil},
		{"bad quantity", `{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"},"spec":{"overhead":{"cpu":"lots"}}}}` + "\n", source.ErrUndecodable, nil},
		{"not an object", `["ADDED"]` + "\n", source.ErrMalformed, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
			s := podserver.New(t, f)
			s.Frame = func(watch.EventType, *corev1.Pod) string { return tc.frame }
			w, err := restPods(t, s, "").Watch(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			if _, err := f.Create(pod("ns", "a", nil)); err != nil {
				t.Fatal(err)
			}
			_, err = nextErr(t, w)
			wantStreamError(t, err, tc.want)
			if tc.check != nil && !tc.check(err) {
				t.Errorf("error %v: the API status is lost", err)
			}
		})
	}
}

// TestFromConfigClosedStream: the server ending the stream, or Stop, ends
// Next with ErrWatchClosed.
func TestFromConfigClosedStream(t *testing.T) {
	f := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
	src := restPods(t, podserver.New(t, f), "")
	w, err := src.Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.CutWatches()
	if _, err := nextErr(t, w); !errors.Is(err, source.ErrWatchClosed) {
		t.Errorf("after the server closed: Next = %v, want ErrWatchClosed", err)
	}
	w.Stop()
	w2, err := src.Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w2.Stop()
	w2.Stop()
	if _, err := nextErr(t, w2); !errors.Is(err, source.ErrWatchClosed) {
		t.Errorf("after Stop: Next = %v, want ErrWatchClosed", err)
	}
}

// TestFromConfigRequestErrors: a refused list or watch is the server's
// status error, in its phase.
func TestFromConfigRequestErrors(t *testing.T) {
	f := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
	src := restPods(t, podserver.New(t, f), "")
	f.FailLists(1, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no")))
	_, err := src.List(t.Context(), metav1.ListOptions{})
	var serr *source.Error
	if !apierrors.IsForbidden(err) || !errors.As(err, &serr) || serr.Phase != source.PhaseList {
		t.Errorf("List = %v, want a Forbidden in phase list", err)
	}
	f.Compact()
	// Like an API server, the fake starts the watch and sends the 410 as
	// its first event.
	w, err := src.Watch(t.Context(), metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	_, err = nextErr(t, w)
	if !apierrors.IsResourceExpired(err) || !errors.As(err, &serr) || serr.Phase != source.PhaseWatch {
		t.Errorf("watch from a compacted version: Next = %v, want a 410 in phase watch", err)
	}
}

// widget is a struct in no scheme, named by RESTOptions.GroupVersionKind.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (w *widget) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func TestFromConfigConstructionErrors(t *testing.T) {
	cfg := &rest.Config{Host: "http://127.0.0.1:1"}
	mapper := podserver.Mapper()
	for _, tc := range []struct {
		name string
		make func() error
		want error
		text string
	}{
		{"nil config", func() error {
			_, err := source.FromConfig[*corev1.Pod](nil, source.RESTOptions{})
			return err
		}, source.ErrNilSource, "nil config"},
		{"type in no scheme", func() error {
			_, err := source.FromConfig[*widget](cfg, source.RESTOptions{Mapper: mapper})
			return err
		}, source.ErrUnknownKind, "RESTOptions.GroupVersionKind"},
		{"kind without version", func() error {
			_, err := source.FromConfig[*widget](cfg, source.RESTOptions{Mapper: mapper, GroupVersionKind: schema.GroupVersionKind{Kind: "Widget"}})
			return err
		}, source.ErrUnknownKind, "needs a version"},
		{"unmapped kind", func() error {
			_, err := source.FromConfig[*corev1.Service](cfg, source.RESTOptions{Mapper: mapper})
			return err
		}, nil, "map /v1, Kind=Service to a resource"},
		{"protobuf for a type without a protobuf encoding", func() error {
			_, err := source.FromConfig[*widget](cfg, source.RESTOptions{Mapper: mapper, Protobuf: true,
				GroupVersionKind: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}})
			return err
		}, source.ErrWrongType, "has no protobuf encoding"},
		{"namespace of a cluster-scoped resource", func() error {
			_, err := source.FromConfig[*corev1.Node](cfg, source.RESTOptions{Mapper: mapper, Namespace: "ns"})
			return err
		}, nil, "nodes is cluster-scoped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.make()
			if err == nil {
				t.Fatal("no error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("error %v does not wrap %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("error %q does not say %q", err, tc.text)
			}
		})
	}
}

// TestFromConfigWatchIsNotThrottled: like client-go's, watches do not wait
// on the client's rate limiter, so a watch restart never queues behind
// lists.
func TestFromConfigWatchIsNotThrottled(t *testing.T) {
	f := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
	s := podserver.New(t, f)
	cfg := s.Config()
	cfg.QPS, cfg.Burst = 0.001, 1
	src, err := source.FromConfig[*corev1.Pod](cfg, source.RESTOptions{Mapper: podserver.Mapper()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.List(t.Context(), metav1.ListOptions{}); err != nil { // takes the one token
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for range 3 {
		w, err := src.Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("Watch after the limiter's only token was taken: %v", err)
		}
		w.Stop()
	}
}
