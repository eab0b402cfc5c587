package bench

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// Replay is an http.RoundTripper that answers as an API server serving
// pods, from bytes in memory: a LIST of pods gets List, and the first
// watch gets Watch repeated Repeat times, then its body ends; later watches
// (and every watch if Watch is empty) wait for their request's end. A request for a streaming list is refused
// with 400, as by a server without them, so clients list.
type Replay struct {
	// List is the body of every LIST, a JSON PodList.
	List []byte
	// Watch is the body of the first watch, repeated Repeat times.
	Watch []byte
	// WatchType is the content type of Watch.
	WatchType string
	// Repeat is how many times Watch is sent; at least once.
	Repeat int

	mu      sync.Mutex
	watched bool
}

// RoundTrip serves req.
func (r *Replay) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	switch {
	case q.Get("sendInitialEvents") == "true":
		return respond(req, http.StatusBadRequest, runtime.ContentTypeJSON,
			io.NopCloser(strings.NewReader(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"BadRequest","code":400,"message":"streaming lists are off"}`))), nil
	case q.Get("watch") != "true":
		return respond(req, http.StatusOK, runtime.ContentTypeJSON, io.NopCloser(bytes.NewReader(r.List))), nil
	}
	r.mu.Lock()
	first := !r.watched
	r.watched = true
	r.mu.Unlock()
	if !first || len(r.Watch) == 0 {
		return respond(req, http.StatusOK, r.WatchType, newWaitBody(req.Context().Done())), nil
	}
	return respond(req, http.StatusOK, r.WatchType, io.NopCloser(&repeater{data: r.Watch, left: max(r.Repeat, 1)})), nil
}

func respond(req *http.Request, code int, contentType string, body io.ReadCloser) *http.Response {
	return &http.Response{StatusCode: code, Header: http.Header{"Content-Type": {contentType}}, Body: body, Request: req}
}

// repeater reads data left times.
type repeater struct {
	data []byte
	off  int
	left int
}

func (r *repeater) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.data[r.off:])
	r.off += n
	if r.off == len(r.data) {
		r.off = 0
		r.left--
	}
	return n, nil
}

// waitBody is a watch body that sends nothing until its request ends or
// it is closed.
type waitBody struct {
	done   <-chan struct{}
	once   sync.Once
	closed chan struct{}
}

func newWaitBody(done <-chan struct{}) *waitBody {
	return &waitBody{done: done, closed: make(chan struct{})}
}

func (w *waitBody) Read([]byte) (int, error) {
	select {
	case <-w.done:
	case <-w.closed:
	}
	return 0, io.EOF
}

func (w *waitBody) Close() error { w.once.Do(func() { close(w.closed) }); return nil }

// Config is a client config whose requests r answers; protobuf asks for
// protobuf as client-go's clientsets do when told to.
func (r *Replay) Config(protobuf bool) *rest.Config {
	cfg := &rest.Config{Host: "http://replay.invalid", Transport: r, QPS: -1}
	if protobuf {
		cfg.ContentType = runtime.ContentTypeProtobuf
		cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	}
	return cfg
}

// Mapper maps the core kinds to their resources without discovery.
func Mapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(podsGVK, meta.RESTScopeNamespace)
	return m
}
