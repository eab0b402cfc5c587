package source

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/cache"
)

// RESTOptions configure [FromConfig]. The zero value serves a built-in type
// T over JSON, in every namespace, mapping its kind to a resource through
// discovery, without managedFields.
type RESTOptions struct {
	// Scheme is where T's GroupVersionKind is looked up. Default: a
	// built-in type's own (its Go package, k8s.io/api/<group>/<version>,
	// names them), with no scheme linked in. A CRD's Go struct works once
	// it is registered in a scheme (scheme.AddKnownTypes), or with
	// GroupVersionKind set and no scheme at all.
	Scheme *runtime.Scheme
	// GroupVersionKind names T's kind when it is not (or ambiguously) in
	// Scheme. If set, Scheme is not consulted.
	GroupVersionKind schema.GroupVersionKind
	// Mapper maps the kind to its resource and scope. If nil, the source
	// asks the server once, in FromConfig, for the resources of the kind's
	// group version (one GET of /api/v1 or /apis/<group>/<version>).
	// Share one (restmapper.NewDeferredDiscoveryRESTMapper) across many
	// sources to discover once.
	Mapper meta.RESTMapper
	// HTTPClient carries the requests; if nil, one is made from the
	// config (rest.HTTPClientFor). Share one across many sources to share
	// connections.
	HTTPClient *http.Client
	// Namespace limits a namespaced resource to one namespace; "" lists
	// and watches every namespace. It must be "" for a cluster-scoped one.
	Namespace string
	// DecodeWorkers, if more than 1, decodes JSON watch events on that
	// many goroutines while one reads the stream; the events are still
	// handed out in the order the server sent them. It speeds up a watch
	// whose decoding is the bottleneck (a busy resource of large objects)
	// on a machine with cores to spare, and costs a little more CPU in
	// all. It relies on the API server's framing, one event per line: a
	// line that is not one event is an error with it. Default: 0, events
	// are decoded on the goroutine that reads them.
	DecodeWorkers int
	// Protobuf asks for protobuf on the wire, for lists and watches. Only
	// built-in types have a protobuf encoding (FromConfig fails for a T
	// without one); a server that answers in JSON is decoded as JSON.
	Protobuf bool
	// KeepManagedFields keeps metadata.managedFields. Default: false, the
	// source cuts them out of each object's bytes before decoding it
	// (about a third of a server pod's bytes) and says so in its Info, so
	// an informer over it asked to keep them fails at construction.
	KeepManagedFields bool
	// DropAnnotations are annotation keys the source drops from every
	// object, as it drops managedFields: cut from a watch event's bytes,
	// and from a protobuf list item's, before the object is decoded, and
	// deleted from the decoded object where the bytes were not cut (a
	// JSON LIST). kubectl's last-applied configuration
	// (corev1.LastAppliedConfigAnnotation) is often the largest field of
	// an object that was ever applied with kubectl. An object left with
	// no annotations has a nil map. Default: none.
	DropAnnotations []string
}

// FromConfig lists and watches T's resource through a REST client made
// from cfg. It finds T's GroupVersionKind in opts.Scheme (or takes
// opts.GroupVersionKind), the resource and its scope from a REST mapper,
// and decodes each JSON list and watch event once, straight into T, with
// the API machinery's case-sensitive JSON decoder:
//
//	src, err := source.FromConfig[*appsv1.Deployment](cfg, source.RESTOptions{Namespace: "shop"})
//
// It fails for a nil config, a T that is not a pointer to a struct, a T
// whose kind it cannot tell, a kind the server does not serve (the
// mapping is asked once, here, through discovery unless opts.Mapper is
// set), and a namespace for a cluster-scoped resource.
func FromConfig[T cache.Object](cfg *rest.Config, opts RESTOptions) (Source[T], error) {
	if cfg == nil {
		return nil, fmt.Errorf("%w: FromConfig: nil config", ErrNilSource)
	}
	var dropAnn map[string]bool
	for i, k := range opts.DropAnnotations {
		if k == "" {
			return nil, fmt.Errorf("source: FromConfig: DropAnnotations[%d] is empty", i)
		}
		if dropAnn == nil {
			dropAnn = map[string]bool{}
		}
		dropAnn[k] = true
	}
	if opts.DecodeWorkers < 0 {
		return nil, fmt.Errorf("source: FromConfig: DecodeWorkers is %d, want 0 or more", opts.DecodeWorkers)
	}
	newT, err := newObjectFunc[T]()
	if err != nil {
		return nil, err
	}
	typed, proj, err := projectionOf[T](opts)
	if err != nil {
		return nil, err
	}
	gvk, err := kindOf(typed, opts)
	if err != nil {
		return nil, err
	}
	if _, ok := typed.(protoUnmarshaler); opts.Protobuf && !ok {
		return nil, fmt.Errorf("%w: Protobuf: %T has no protobuf encoding (only built-in types have one)", ErrWrongType, typed)
	}
	var plan *protoStruct
	if opts.Protobuf && proj {
		if plan, err = newProtoStruct(reflect.TypeFor[T]().Elem(), reflect.TypeOf(typed).Elem(), ""); err != nil {
			return nil, fmt.Errorf("source: FromConfig[%v]: %w", reflect.TypeFor[T](), err)
		}
	}
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &schema.GroupVersion{Group: gvk.Group, Version: gvk.Version}
	c.APIPath = "/apis"
	if gvk.Group == "" {
		c.APIPath = "/api"
	}
	c.NegotiatedSerializer = statusCodecs.WithoutConversion() // bodies are decoded here; client-go decodes only error statuses
	c.ContentType, c.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	if opts.Protobuf {
		c.ContentType = runtime.ContentTypeProtobuf
		c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	}
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	hc := opts.HTTPClient
	if hc == nil {
		if hc, err = rest.HTTPClientFor(c); err != nil {
			return nil, fmt.Errorf("source: FromConfig: %w", err)
		}
	}
	rc, err := rest.RESTClientForConfigAndClient(c, hc)
	if err != nil {
		return nil, fmt.Errorf("source: FromConfig: %w", err)
	}
	var (
		resource   schema.GroupVersionResource
		namespaced bool
	)
	if opts.Mapper != nil {
		m, err := opts.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("source: FromConfig[%v]: map %v to a resource: %w", reflect.TypeFor[T](), gvk, err)
		}
		resource, namespaced = m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace
	} else if resource, namespaced, err = discover(rc, c.APIPath, gvk); err != nil {
		return nil, fmt.Errorf("source: FromConfig[%v]: map %v to a resource: %w", reflect.TypeFor[T](), gvk, err)
	}
	if !namespaced && opts.Namespace != "" {
		return nil, fmt.Errorf("source: FromConfig: %v is cluster-scoped: Namespace must be empty, not %q", resource.GroupResource(), opts.Namespace)
	}
	r := Resource{GroupResource: resource.GroupResource(), Scope: cache.ScopeCluster}
	if namespaced {
		r.Scope = cache.ScopeNamespaced
	}
	req := func(opts metav1.ListOptions, ns string) *rest.Request {
		q := rc.Get().NamespaceIfScoped(ns, namespaced).Resource(resource.Resource).VersionedParams(&opts, metav1.ParameterCodec)
		if opts.TimeoutSeconds != nil {
			q = q.Timeout(time.Duration(*opts.TimeoutSeconds) * time.Second)
		}
		return q
	}
	rs := &restSource[T]{request: req, namespace: opts.Namespace, gvk: gvk, workers: opts.DecodeWorkers,
		cutMF: !opts.KeepManagedFields, dropAnn: dropAnn, gzip: !c.DisableCompression,
		info: Info{Resource: r, WatchList: true, Exclusive: true, NoManagedFields: !opts.KeepManagedFields}}
	if opts.Protobuf {
		return &protoSource[T]{rest: rs, newT: newT, proj: plan}, nil
	}
	return rs, nil
}

// statusCodecs decode the error statuses of failed requests, all that
// client-go's REST client decodes for a source that reads bodies itself.
var statusCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return serializer.NewCodecFactory(s)
}()

// projectionOf returns a value of the type T's objects are of on the
// server: T's own, or the type T projects (see Projection), whose fields
// it checks T's against; proj tells the second.
func projectionOf[T cache.Object](opts RESTOptions) (typed runtime.Object, proj bool, err error) {
	t := reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T)
	p, ok := any(t).(Projection)
	if !ok {
		return t, false, nil
	}
	full := p.ProjectionOf()
	if full == nil {
		if opts.GroupVersionKind.Empty() || opts.Protobuf {
			return nil, false, fmt.Errorf("%w: %v projects a type it does not name (ProjectionOf is nil): set RESTOptions.GroupVersionKind, and use JSON", ErrBadProjection, reflect.TypeFor[T]())
		}
		return t, false, nil
	}
	ft := reflect.TypeOf(full)
	if ft.Kind() != reflect.Pointer || ft.Elem().Kind() != reflect.Struct {
		return nil, false, fmt.Errorf("%w: %v projects %v, not a pointer to a struct", ErrBadProjection, reflect.TypeFor[T](), ft)
	}
	if err := checkProjection(reflect.TypeFor[T]().Elem(), ft.Elem()); err != nil {
		return nil, false, fmt.Errorf("source: FromConfig[%v]: %w", reflect.TypeFor[T](), err)
	}
	return full, true, nil
}

// newObjectFunc returns a function making a new, empty T, or an error if
// T is not a pointer to a struct (the only objects a decoder can fill).
func newObjectFunc[T cache.Object]() (func() T, error) {
	rt := reflect.TypeFor[T]()
	if rt.Kind() != reflect.Pointer || rt.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: %v is not a pointer to a struct", ErrWrongType, rt)
	}
	elem := rt.Elem()
	return func() T {
		t, _ := reflect.New(elem).Interface().(T)
		return t
	}, nil
}

// ErrUnknownKind is wrapped by the errors of [FromConfig] when T's
// GroupVersionKind cannot be told.
var ErrUnknownKind = errors.New("source: unknown kind")

// KindOf returns the GroupVersionKind FromConfig lists for T with opts:
// opts.GroupVersionKind, else the kind opts.Scheme registered T (or the
// type T projects) as, else a built-in type's own. It fails, wrapping
// ErrUnknownKind or ErrBadProjection, where FromConfig would.
func KindOf[T cache.Object](opts RESTOptions) (schema.GroupVersionKind, error) {
	typed, _, err := projectionOf[T](opts)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return kindOf(typed, opts)
}

// kindOf returns the GroupVersionKind of obj's type: opts.GroupVersionKind,
// the one kind opts.Scheme registered it as, or a built-in type's own.
func kindOf(obj runtime.Object, opts RESTOptions) (schema.GroupVersionKind, error) {
	if gvk := opts.GroupVersionKind; !gvk.Empty() {
		if gvk.Kind == "" || gvk.Version == "" {
			return schema.GroupVersionKind{}, fmt.Errorf("%w: GroupVersionKind %v needs a version and a kind", ErrUnknownKind, gvk)
		}
		return gvk, nil
	}
	s := opts.Scheme
	if s == nil {
		if gvk, ok := builtinKind(reflect.TypeOf(obj)); ok {
			return gvk, nil
		}
		return schema.GroupVersionKind{}, fmt.Errorf("%w: %T is not a built-in type: register it in a scheme (RESTOptions.Scheme) or set RESTOptions.GroupVersionKind", ErrUnknownKind, obj)
	}
	gvks, _, err := s.ObjectKinds(obj)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("%w: %T is not in the scheme (register it, or set RESTOptions.GroupVersionKind): %w", ErrUnknownKind, obj, err)
	}
	if len(gvks) != 1 {
		return schema.GroupVersionKind{}, fmt.Errorf("%w: %T is registered as %v: set RESTOptions.GroupVersionKind to choose", ErrUnknownKind, obj, gvks)
	}
	return gvks[0], nil
}
