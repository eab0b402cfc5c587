// Package podserver serves a sourcetest.Fake of pods over HTTP as
// kube-apiserver does, for the tests of the REST source and of what is
// built on it: GET /api/v1/pods and /api/v1/namespaces/{ns}/pods, lists
// and watches in JSON (one {"type","object"} value per line) or, when the
// request accepts it, in protobuf (length-prefixed WatchEvent frames), and
// errors as a Status with its code; legacy discovery of pods and nodes. It
// can send chosen pods in a form that does not decode (Undecodable).
//
// Core serves several core/v1 resources at once, each from a fake of its
// own, over HTTP/2 with TLS as kube-apiserver speaks: the many small
// clusters of the fleet tests.
package podserver

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
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

	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

// Server is a fake's pods over HTTP. It counts the requests it serves.
type Server struct {
	Fake *sourcetest.Fake[*corev1.Pod]
	// URL is the server's base URL.
	URL string
	// Requests counts every request; Lists the LIST requests of pods, and
	// Watches the WATCH requests (streaming lists included).
	Requests, Lists, Watches atomic.Int64
	// Frame, if set before the first watch, replaces the JSON encoding of
	// watch events (to send malformed ones).
	Frame func(watch.EventType, *corev1.Pod) string
	// Undecodable, if set before the first request, is asked about every
	// pod the server sends, in lists and in watch events (from the
	// server's goroutines: it must be safe for concurrent use). A pod it
	// returns true for is sent with its metadata intact and a spec that
	// does not decode into a corev1.Pod: in JSON
	// "spec": {"containers": "oops"}, in protobuf a spec whose containers
	// field has the wrong wire type.
	Undecodable func(*corev1.Pod) bool
	// Whole, if set before the first request, makes the server answer
	// every LIST whole, in one response whatever its limit and without a
	// continue token, as kube-apiserver's watch cache answers a list at
	// resourceVersion "0" or not older than a version. A JSON answer is
	// written as the pods are read from the fake, a page at a time, so
	// that the server never holds the whole list.
	Whole bool
	// OnList, if set before the first request, is called as each LIST
	// request starts, from the request's goroutine; the function it
	// returns is called once the response is written.
	OnList func() (done func())
	srv    *httptest.Server
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
	opts, err := listOptions(r, ns)
	if err != nil {
		WriteStatus(w, err)
		return
	}
	proto := strings.Contains(r.Header.Get("Accept"), runtime.ContentTypeProtobuf)
	if opts.Watch {
		s.Watches.Add(1)
		s.watch(r.Context(), w, opts, proto)
		return
	}
	s.Lists.Add(1)
	if s.OnList != nil {
		defer s.OnList()()
	}
	if s.Whole && !proto {
		s.writeWhole(r.Context(), w, opts)
		return
	}
	l, err := s.list(r.Context(), opts)
	if err != nil {
		WriteStatus(w, err)
		return
	}
	out := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	out.ResourceVersion, out.Continue, out.ShardInfo = l.ResourceVersion, l.Continue, l.ShardInfo
	for _, p := range l.Items {
		out.Items = append(out.Items, *p)
	}
	if s.Undecodable != nil {
		s.writeList(w, out, proto)
		return
	}
	writeObject(w, out, proto)
}

// list lists the fake, all its pages at once if Whole.
func (s *Server) list(ctx context.Context, opts metav1.ListOptions) (source.List[*corev1.Pod], error) {
	if !s.Whole {
		return s.Fake.List(ctx, opts)
	}
	var all source.List[*corev1.Pod]
	err := s.pages(ctx, opts, func(l source.List[*corev1.Pod]) error {
		if all.ResourceVersion == "" {
			all = l
			return nil
		}
		all.Items = append(all.Items, l.Items...)
		return nil
	})
	return all, err
}

// wholePage is the size of the pages a Whole server reads from its fake.
const wholePage = 500

// pages reads the fake's list in pages and calls each with every page;
// the Continue of the pages is the fake's.
func (s *Server) pages(ctx context.Context, opts metav1.ListOptions, each func(source.List[*corev1.Pod]) error) error {
	opts.Limit, opts.Continue = wholePage, ""
	for {
		l, err := s.Fake.List(ctx, opts)
		if err != nil {
			return err
		}
		next := l.Continue
		l.Continue = ""
		if err := each(l); err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		opts.ResourceVersion, opts.ResourceVersionMatch, opts.Continue = "", "", next
	}
}

// writeWhole writes a Whole server's JSON answer to a LIST: the list's
// metadata from the first page, then every pod as its page is read. A
// failure after the first page (a continue token that expired) cuts the
// response, as a server that fails midway does.
func (s *Server) writeWhole(ctx context.Context, w http.ResponseWriter, opts metav1.ListOptions) {
	started := false
	err := s.pages(ctx, opts, func(l source.List[*corev1.Pod]) error {
		if !started {
			started = true
			meta, err := json.Marshal(metav1.ListMeta{ResourceVersion: l.ResourceVersion, ShardInfo: l.ShardInfo})
			if err != nil {
				return err
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","metadata":`)
			_, _ = w.Write(meta)
			_, _ = io.WriteString(w, `,"items":[`)
		} else if len(l.Items) > 0 {
			_, _ = io.WriteString(w, ",")
		}
		for i, p := range l.Items {
			if i > 0 {
				_, _ = io.WriteString(w, ",")
			}
			b, err := s.itemJSON(p)
			if err != nil {
				return err
			}
			_, _ = w.Write(b)
		}
		return nil
	})
	switch {
	case err != nil && !started:
		WriteStatus(w, err)
	case err != nil:
		panic(http.ErrAbortHandler) // net/http closes the connection mid-body
	default:
		_, _ = io.WriteString(w, "]}\n")
	}
}

// itemJSON is a list item in JSON, in a form that does not decode if
// Undecodable picks it.
func (s *Server) itemJSON(p *corev1.Pod) ([]byte, error) {
	if s.Undecodable != nil && s.Undecodable(p) {
		return undecodableJSON(p), nil
	}
	return json.Marshal(p)
}

func (s *Server) watch(ctx context.Context, w http.ResponseWriter, opts metav1.ListOptions, proto bool) {
	wt, err := s.Fake.Watch(ctx, opts)
	if err != nil {
		WriteStatus(w, err)
		return
	}
	defer wt.Stop()
	flush := startWatch(w, proto)
	enc := json.NewEncoder(w)
	send := func(typ watch.EventType, obj runtime.Object) {
		p, _ := obj.(*corev1.Pod)
		switch bad := p != nil && typ != watch.Bookmark && s.Undecodable != nil && s.Undecodable(p); {
		case proto && bad:
			_, _ = w.Write(frame(typ, envelope("Pod", undecodableProto(p))))
		case proto:
			_, _ = w.Write(ProtoFrame(typ, obj))
		case bad:
			_ = enc.Encode(Event{Type: typ, Object: json.RawMessage(undecodableJSON(p))})
		default:
			_ = enc.Encode(Event{Type: typ, Object: obj})
		}
		flush()
	}
	for {
		ev, err := wt.Next(ctx)
		if err != nil {
			if st, ok := watchStatus(err); ok {
				send(watch.Error, st)
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
	return frame(typ, EncodeProto(obj))
}

// frame is the watch frame of an event whose object's encoding (with its
// envelope) is obj.
func frame(typ watch.EventType, obj []byte) []byte {
	we := &metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: obj}}
	msg, err := we.Marshal()
	if err != nil {
		panic(err)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(msg))), msg...)
}

// writeList writes l with the pods Undecodable picks in a form that does
// not decode, each item encoded alone.
func (s *Server) writeList(w http.ResponseWriter, l *corev1.PodList, proto bool) {
	if proto {
		meta, err := l.ListMeta.Marshal()
		if err != nil {
			panic(err)
		}
		msg := protoField(nil, 1, meta)
		for i := range l.Items {
			p := &l.Items[i]
			var item []byte
			if s.Undecodable(p) {
				item = undecodableProto(p)
			} else if item, err = p.Marshal(); err != nil {
				panic(err)
			}
			msg = protoField(msg, 2, item)
		}
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
		_, _ = w.Write(envelope("PodList", msg))
		return
	}
	out := struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ListMeta   `json:"metadata"`
		Items           []json.RawMessage `json:"items"`
	}{TypeMeta: l.TypeMeta, Metadata: l.ListMeta, Items: []json.RawMessage{}}
	for i := range l.Items {
		p := &l.Items[i]
		if s.Undecodable(p) {
			out.Items = append(out.Items, undecodableJSON(p))
			continue
		}
		b, err := json.Marshal(p)
		if err != nil {
			panic(err)
		}
		out.Items = append(out.Items, b)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// undecodableJSON is p in JSON with "spec": {"containers": "oops"}: a
// string where corev1.PodSpec has an array.
func undecodableJSON(p *corev1.Pod) []byte {
	b, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	m["spec"] = map[string]any{"containers": "oops"}
	if b, err = json.Marshal(m); err != nil {
		panic(err)
	}
	return b
}

// undecodableProto is p's protobuf message (without the envelope) with its
// metadata and status, and a spec whose field 2 (containers, a message) is
// a varint: corev1.PodSpec's Unmarshal refuses its wire type.
func undecodableProto(p *corev1.Pod) []byte {
	meta, err := p.ObjectMeta.Marshal()
	if err != nil {
		panic(err)
	}
	status, err := p.Status.Marshal()
	if err != nil {
		panic(err)
	}
	msg := protoField(nil, 1, meta)
	msg = protoField(msg, 2, []byte{2 << 3, 1}) // field 2, wire type 0 (varint), value 1
	return protoField(msg, 3, status)
}

// protoField appends field num, length-delimited, with value val to b.
func protoField(b []byte, num int, val []byte) []byte {
	b = binary.AppendUvarint(b, uint64(num)<<3|2)
	b = binary.AppendUvarint(b, uint64(len(val)))
	return append(b, val...)
}

// envelope wraps the message msg of a v1 kind in the "k8s\x00" envelope
// the API server writes around a protobuf object.
func envelope(kind string, msg []byte) []byte {
	u := &runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: kind}, Raw: msg}
	b, err := u.Marshal()
	if err != nil {
		panic(err)
	}
	return append([]byte("k8s\x00"), b...)
}

// discovery serves the legacy discovery documents: the core group with
// pods and nodes, in protobuf when the client accepts it, as the API server
// does.
func discovery(w http.ResponseWriter, path string, proto bool) {
	doc := discoveryDoc(path)
	if doc == nil {
		verbs := metav1.Verbs{"get", "list", "watch"}
		doc = &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1",
			APIResources: []metav1.APIResource{
				{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: verbs},
				{Name: "nodes", Namespaced: false, Kind: "Node", Verbs: verbs},
			}}
	}
	writeObject(w, doc, proto)
}

// discoveryDoc is the legacy discovery document at path (/api, /apis) or
// nil for any other path, which the caller serves with its resources.
func discoveryDoc(path string) runtime.Object {
	switch path {
	case "/api":
		return &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}
	case "/apis":
		return &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	}
	return nil
}

// writeObject writes obj as the API server writes a body: in protobuf
// when the client accepts it, else in JSON.
func writeObject(w http.ResponseWriter, obj runtime.Object, proto bool) {
	if proto {
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
		_, _ = w.Write(EncodeProto(obj))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(obj)
}

// listOptions are the list options of r's query, with a field selector
// on the namespace ns of its path if ns is set; an error is a BadRequest.
func listOptions(r *http.Request, ns string) (metav1.ListOptions, error) {
	var opts metav1.ListOptions
	q := r.URL.Query()
	if err := metav1.Convert_url_Values_To_v1_ListOptions(&q, &opts, nil); err != nil {
		return opts, apierrors.NewBadRequest(err.Error())
	}
	if ns != "" {
		sel := "metadata.namespace=" + ns
		if opts.FieldSelector != "" {
			sel += "," + opts.FieldSelector
		}
		opts.FieldSelector = sel
	}
	return opts, nil
}

// startWatch writes the headers of a watch response and flushes them; it
// returns the function that flushes each event.
func startWatch(w http.ResponseWriter, proto bool) (flush func()) {
	if proto {
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf+";stream=watch")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	flush = func() {
		if f != nil {
			f.Flush()
		}
	}
	flush()
	return flush
}

// watchStatus is the Status of the ERROR event that ends a watch with
// err, if err is an API error; a watch that just ends sends none.
func watchStatus(err error) (*metav1.Status, bool) {
	var api apierrors.APIStatus
	if !errors.As(err, &api) {
		return nil, false
	}
	st := api.Status()
	st.Kind, st.APIVersion = "Status", "v1"
	return &st, true
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
