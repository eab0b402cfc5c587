package podserver

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source/sourcetest"
)

// Core serves namespaced core/v1 resources, each from a fake of its own,
// as kube-apiserver does: over HTTP/2 with TLS (every request of a client
// on one connection), lists and watches of /api/v1/{resource} and
// /api/v1/namespaces/{ns}/{resource} in JSON or protobuf, errors as a
// Status, and the legacy discovery of the resources it serves.
type Core struct {
	// URL is the server's base URL (https).
	URL string
	// Requests counts every request, discovery included.
	Requests atomic.Int64

	resources map[string]Resource
	srv       *httptest.Server
}

// Resource is one resource of a Core, made by Serve.
type Resource struct {
	name, kind string
	list       func(context.Context, metav1.ListOptions) (metav1.ListMeta, []runtime.Object, error)
	watch      func(context.Context, metav1.ListOptions) (next func(context.Context) (watch.EventType, runtime.Object, error), stop func(), err error)
}

// Serve is the resource name (plural, "configmaps") of kind ("ConfigMap"),
// served from f. T must be a k8s.io/api core/v1 type.
func Serve[T cache.Object](name, kind string, f *sourcetest.Fake[T]) Resource {
	return Resource{
		name: name, kind: kind,
		list: func(ctx context.Context, opts metav1.ListOptions) (metav1.ListMeta, []runtime.Object, error) {
			l, err := f.List(ctx, opts)
			if err != nil {
				return metav1.ListMeta{}, nil, err
			}
			items := make([]runtime.Object, len(l.Items))
			for i, o := range l.Items {
				items[i] = o
			}
			return metav1.ListMeta{ResourceVersion: l.ResourceVersion, Continue: l.Continue}, items, nil
		},
		watch: func(ctx context.Context, opts metav1.ListOptions) (func(context.Context) (watch.EventType, runtime.Object, error), func(), error) {
			w, err := f.Watch(ctx, opts)
			if err != nil {
				return nil, nil, err
			}
			next := func(ctx context.Context) (watch.EventType, runtime.Object, error) {
				ev, err := w.Next(ctx)
				if err != nil {
					return "", nil, err
				}
				return ev.Type, ev.Object, nil
			}
			return next, w.Stop, nil
		},
	}
}

// NewCore starts a server of rs, closed when t ends.
func NewCore(t testing.TB, rs ...Resource) *Core {
	c := &Core{resources: map[string]Resource{}}
	for _, r := range rs {
		c.resources[r.name] = r
	}
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(c.serve))
	c.srv.EnableHTTP2 = true
	c.srv.StartTLS()
	c.URL = c.srv.URL
	t.Cleanup(func() {
		c.srv.CloseClientConnections()
		c.srv.Close()
	})
	return c
}

// Config is a rest.Config for the server, trusting its certificate.
func (c *Core) Config() *rest.Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.srv.Certificate().Raw})
	return &rest.Config{Host: c.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

func (c *Core) serve(w http.ResponseWriter, r *http.Request) {
	c.Requests.Add(1)
	p := r.URL.Path
	proto := strings.Contains(r.Header.Get("Accept"), runtime.ContentTypeProtobuf)
	if p == "/api" || p == "/apis" || p == "/api/v1" {
		c.discovery(w, p, proto)
		return
	}
	var ns, name string
	switch tail, ok := strings.CutPrefix(p, "/api/v1/"); {
	case !ok:
	case strings.HasPrefix(tail, "namespaces/"):
		if parts := strings.Split(tail, "/"); len(parts) == 3 {
			ns, name = parts[1], parts[2]
		}
	case !strings.Contains(tail, "/"):
		name = tail
	}
	res, ok := c.resources[name]
	if !ok {
		WriteStatus(w, apierrors.NewNotFound(schema.GroupResource{Resource: name}, p))
		return
	}
	opts, err := listOptions(r, ns)
	if err != nil {
		WriteStatus(w, err)
		return
	}
	if opts.Watch {
		c.watch(r.Context(), w, res, opts, proto)
		return
	}
	lm, items, err := res.list(r.Context(), opts)
	if err != nil {
		WriteStatus(w, err)
		return
	}
	if proto {
		meta, err := lm.Marshal()
		if err != nil {
			WriteStatus(w, err)
			return
		}
		msg := protoField(nil, 1, meta)
		for _, o := range items {
			m, ok := o.(interface{ Marshal() ([]byte, error) })
			if !ok {
				WriteStatus(w, fmt.Errorf("%T has no protobuf encoding", o))
				return
			}
			b, err := m.Marshal()
			if err != nil {
				WriteStatus(w, err)
				return
			}
			msg = protoField(msg, 2, b)
		}
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
		_, _ = w.Write(envelope(res.kind+"List", msg))
		return
	}
	out := struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ListMeta  `json:"metadata"`
		Items           []runtime.Object `json:"items"`
	}{TypeMeta: metav1.TypeMeta{Kind: res.kind + "List", APIVersion: "v1"}, Metadata: lm, Items: items}
	if out.Items == nil {
		out.Items = []runtime.Object{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func (c *Core) watch(ctx context.Context, w http.ResponseWriter, res Resource, opts metav1.ListOptions, proto bool) {
	next, stop, err := res.watch(ctx, opts)
	if err != nil {
		WriteStatus(w, err)
		return
	}
	defer stop()
	flush := startWatch(w, proto)
	enc := json.NewEncoder(w)
	send := func(typ watch.EventType, obj runtime.Object) {
		if proto {
			_, _ = w.Write(ProtoFrame(typ, obj))
		} else {
			_ = enc.Encode(Event{Type: typ, Object: obj})
		}
		flush()
	}
	gvk := corev1.SchemeGroupVersion.WithKind(res.kind)
	for {
		typ, obj, err := next(ctx)
		if err != nil {
			if st, ok := watchStatus(err); ok {
				send(watch.Error, st)
			}
			return
		}
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		send(typ, obj)
	}
}

// discovery serves the legacy discovery documents of the core group with
// the resources of c, in protobuf when the client accepts it.
func (c *Core) discovery(w http.ResponseWriter, path string, proto bool) {
	doc := discoveryDoc(path)
	if doc == nil {
		l := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1"}
		for _, r := range c.resources {
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: r.name, Namespaced: true, Kind: r.kind, Verbs: metav1.Verbs{"get", "list", "watch"}})
		}
		doc = l
	}
	writeObject(w, doc, proto)
}
