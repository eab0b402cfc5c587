// Package podserver serves a sourcetest.Fake of pods over HTTP as
// kube-apiserver does, for the tests of the REST source and of what is
// built on it: GET /api/v1/pods and /api/v1/namespaces/{ns}/pods, lists
// and watches in JSON (one {"type","object"} value per line) or, when the
// request accepts it, in protobuf (length-prefixed WatchEvent frames), and
// errors as a Status with its code; legacy discovery of pods and nodes.
package podserver

import (
	"bytes"
	"context"
	"encoding/binary"
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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/source/sourcetest"
)

// Server is a fake's pods over HTTP. It counts the requests it serves.
type Server struct {
	Fake *sourcetest.Fake[*corev1.Pod]
	// URL is the server's base URL.
	URL      string
	Requests atomic.Int64
	// Frame, if set before the first watch, replaces the JSON encoding of
	// watch events (to send malformed ones).
	Frame func(watch.EventType, *corev1.Pod) string
	srv   *httptest.Server
}

// New starts a server of f, closed when t ends.
func New(t testing.TB, f *sourcetest.Fake[*corev1.Pod]) *Server {
	s := Start(f)
	t.Cleanup(s.Close)
	return s
}

// Start starts a server of f; the caller closes it.
func Start(f *sourcetest.Fake[*corev1.Pod]) *Server {
	s := &Server{Fake: f}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server and ends its watches.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Config is a rest.Config for the server.
func (s *Server) Config() *rest.Config { return &rest.Config{Host: s.URL} }

// Mapper knows pods and nodes, so tests need no discovery.
func Mapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	m.Add(corev1.SchemeGroupVersion.WithKind("Node"), meta.RESTScopeRoot)
	return m
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.Requests.Add(1)
	var ns string
	switch p := r.URL.Path; {
	case p == "/api" || p == "/apis" || p == "/api/v1":
		discovery(w, p, strings.Contains(r.Header.Get("Accept"), runtime.ContentTypeProtobuf))
		return
	case p == "/api/v1/pods":
	case strings.HasPrefix(p, "/api/v1/namespaces/") && strings.HasSuffix(p, "/pods"):
		ns = strings.TrimSuffix(strings.TrimPrefix(p, "/api/v1/namespaces/"), "/pods")
	default:
		WriteStatus(w, apierrors.NewNotFound(schema.GroupResource{Resource: "unknown"}, p))
		return
	}
	var opts metav1.ListOptions
	q := r.URL.Query()
	if err := metav1.Convert_url_Values_To_v1_ListOptions(&q, &opts, nil); err != nil {
		WriteStatus(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	if ns != "" {
		sel := "metadata.namespace=" + ns
		if opts.FieldSelector != "" {
			sel += "," + opts.FieldSelector
		}
		opts.FieldSelector = sel
	}
	proto := strings.Contains(r.Header.Get("Accept"), runtime.ContentTypeProtobuf)
	if opts.Watch {
		s.watch(r.Context(), w, opts, proto)
		return
	}
	l, err := s.Fake.List(r.Context(), opts)
	if err != nil {
		WriteStatus(w, err)
		return
	}
	out := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	out.ResourceVersion, out.Continue, out.ShardInfo = l.ResourceVersion, l.Continue, l.ShardInfo
	for _, p := range l.Items {
		out.Items = append(out.Items, *p)
	}
	if proto {
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
		_, _ = w.Write(EncodeProto(out))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func (s *Server) watch(ctx context.Context, w http.ResponseWriter, opts metav1.ListOptions, proto bool) {
	wt, err := s.Fake.Watch(ctx, opts)
	if err != nil {
		WriteStatus(w, err)
		return
	}
	defer wt.Stop()
	if proto {
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf+";stream=watch")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	flush()
	enc := json.NewEncoder(w)
	send := func(typ watch.EventType, obj runtime.Object) {
		if proto {
			_, _ = w.Write(ProtoFrame(typ, obj))
		} else {
			_ = enc.Encode(Event{Type: typ, Object: obj})
		}
		flush()
	}
	for {
		ev, err := wt.Next(ctx)
		if err != nil {
			var api apierrors.APIStatus
			if errors.As(err, &api) {
				st := api.Status()
				st.Kind, st.APIVersion = "Status", "v1"
				send(watch.Error, &st)
			}
			return
		}
		if s.Frame != nil && !proto {
			_, _ = w.Write([]byte(s.Frame(ev.Type, ev.Object)))
			flush()
			continue
		}
		ev.Object.Kind, ev.Object.APIVersion = "Pod", "v1"
		send(ev.Type, ev.Object)
	}
}

// EncodeProto encodes obj as the API server writes a protobuf body: the
// "k8s\x00" envelope around the object's message.
func EncodeProto(obj runtime.Object) []byte {
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	var b bytes.Buffer
	if err := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).Encode(obj, &b); err != nil {
		panic(err) // the test's own objects: a bug in the test
	}
	return b.Bytes()
}

// ProtoFrame is one watch event as the API server writes a protobuf watch:
// the length, then a metav1.WatchEvent whose object is EncodeProto's.
func ProtoFrame(typ watch.EventType, obj runtime.Object) []byte {
	we := &metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: EncodeProto(obj)}}
	msg, err := we.Marshal()
	if err != nil {
		panic(err)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(msg))), msg...)
}

// discovery serves the legacy discovery documents: the core group with
// pods and nodes, in protobuf when the client accepts it, as the API server
// does.
func discovery(w http.ResponseWriter, path string, proto bool) {
	var doc runtime.Object
	switch path {
	case "/api":
		doc = &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}
	case "/apis":
		doc = &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	default:
		verbs := metav1.Verbs{"get", "list", "watch"}
		doc = &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1",
			APIResources: []metav1.APIResource{
				{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: verbs},
				{Name: "nodes", Namespaced: false, Kind: "Node", Verbs: verbs},
			}}
	}
	if proto {
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
		_, _ = w.Write(EncodeProto(doc))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(doc)
}

// WriteStatus writes err as an API server does: a Status with its code.
func WriteStatus(w http.ResponseWriter, err error) {
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

// Event is a watch event as the API server encodes it in JSON: the type,
// then the object.
type Event struct {
	Type   watch.EventType `json:"type"`
	Object any             `json:"object"`
}
