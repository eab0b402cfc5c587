package source_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

// podServer serves a Fake of pods over HTTP as an API server does, in
// JSON: GET /api/v1/pods and /api/v1/namespaces/{ns}/pods, lists and
// watches (one {"type","object"} value per line, objects with their kind),
// errors as a Status with its code. It counts the requests it serves.
type podServer struct {
	fake     *sourcetest.Fake[*corev1.Pod]
	srv      *httptest.Server
	requests atomic.Int64
	// frame, if set, replaces the encoding of watch events (to send
	// malformed ones).
	frame func(watch.EventType, *corev1.Pod) string
}

func newPodServer(t *testing.T, f *sourcetest.Fake[*corev1.Pod]) *podServer {
	s := servePods(f)
	t.Cleanup(s.srv.Close)
	return s
}

// servePods starts a podServer; the caller closes s.srv.
func servePods(f *sourcetest.Fake[*corev1.Pod]) *podServer {
	s := &podServer{fake: f}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// config is a rest.Config for the server.
func (s *podServer) config() *rest.Config { return &rest.Config{Host: s.srv.URL} }

// mapper knows pods, so the tests need no discovery.
func podMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	m.Add(corev1.SchemeGroupVersion.WithKind("Node"), meta.RESTScopeRoot)
	return m
}

func (s *podServer) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	var ns string
	switch p := r.URL.Path; {
	case p == "/api" || p == "/apis" || p == "/api/v1":
		s.discovery(w, p)
		return
	case p == "/api/v1/pods":
	case strings.HasPrefix(p, "/api/v1/namespaces/") && strings.HasSuffix(p, "/pods"):
		ns = strings.TrimSuffix(strings.TrimPrefix(p, "/api/v1/namespaces/"), "/pods")
	default:
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Resource: "unknown"}, p))
		return
	}
	var opts metav1.ListOptions
	q := r.URL.Query()
	if err := metav1.Convert_url_Values_To_v1_ListOptions(&q, &opts, nil); err != nil {
		writeStatus(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	if ns != "" {
		sel := "metadata.namespace=" + ns
		if opts.FieldSelector != "" {
			sel += "," + opts.FieldSelector
		}
		opts.FieldSelector = sel
	}
	if opts.Watch {
		s.watch(r.Context(), w, opts)
		return
	}
	l, err := s.fake.List(r.Context(), opts)
	if err != nil {
		writeStatus(w, err)
		return
	}
	out := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	out.ResourceVersion, out.Continue = l.ResourceVersion, l.Continue
	for _, p := range l.Items {
		out.Items = append(out.Items, *p)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func (s *podServer) watch(ctx context.Context, w http.ResponseWriter, opts metav1.ListOptions) {
	wt, err := s.fake.Watch(ctx, opts)
	if err != nil {
		writeStatus(w, err)
		return
	}
	defer wt.Stop()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	flush()
	enc := json.NewEncoder(w)
	for {
		ev, err := wt.Next(ctx)
		if err != nil {
			var api apierrors.APIStatus
			if errors.As(err, &api) {
				st := api.Status()
				st.Kind, st.APIVersion = "Status", "v1"
				_ = enc.Encode(serverEvent{Type: watch.Error, Object: st})
				flush()
			}
			return
		}
		if s.frame != nil {
			_, _ = w.Write([]byte(s.frame(ev.Type, ev.Object)))
			flush()
			continue
		}
		ev.Object.Kind, ev.Object.APIVersion = "Pod", "v1"
		_ = enc.Encode(serverEvent{Type: ev.Type, Object: ev.Object})
		flush()
	}
}

// discovery serves the legacy discovery documents: the core group with
// pods and nodes.
func (s *podServer) discovery(w http.ResponseWriter, path string) {
	var doc any
	switch path {
	case "/api":
		doc = metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}
	case "/apis":
		doc = metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	default:
		verbs := metav1.Verbs{"get", "list", "watch"}
		doc = metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1",
			APIResources: []metav1.APIResource{
				{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: verbs},
				{Name: "nodes", Namespaced: false, Kind: "Node", Verbs: verbs},
			}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(doc)
}

// writeStatus writes err as an API server does: a Status with its code.
func writeStatus(w http.ResponseWriter, err error) {
	st := metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error()}
	var api apierrors.APIStatus
	if errors.As(err, &api) {
		st = api.Status()
	}
	st.Kind, st.APIVersion = "Status", "v1"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(st)
}

// restPods is FromConfig over s for pods in ns, with the test mapper.
func restPods(t *testing.T, s *podServer, ns string) source.Source[*corev1.Pod] {
	t.Helper()
	src, err := source.FromConfig[*corev1.Pod](s.config(), source.RESTOptions{Namespace: ns, Mapper: podMapper()})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// serverEvent is a watch event as the API server encodes it: the type,
// then the object.
type serverEvent struct {
	Type   watch.EventType `json:"type"`
	Object any             `json:"object"`
}
