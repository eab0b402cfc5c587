package source

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/objects"
)

// DynamicOptions configure [FromDynamic] and [FromMetadata]. The zero value
// lists and watches every namespace of a resource of unknown scope.
type DynamicOptions struct {
	// Namespace limits a namespaced resource to one namespace; "" lists
	// and watches every namespace (and is the only choice for a
	// cluster-scoped resource).
	Namespace string
	// Scope is the resource's scope if the caller knows it, so that the
	// informer's lister refuses a lookup in the wrong scope from the
	// start. Default: cache.ScopeNamespaced if Namespace is set, else
	// unknown (the lister then infers it from the cached objects). A
	// Namespace with cache.ScopeCluster is refused.
	Scope cache.Scope
}

// ErrNoResource is wrapped by the errors of constructors given an empty or
// incomplete resource.
var ErrNoResource = errors.New("source: no resource")

// FromDynamic lists and watches gvr through client-go's dynamic client,
// as *unstructured.Unstructured objects: for resources this program has no
// Go type for, such as custom resources found at run time.
//
//	src, err := source.FromDynamic(dynamic.NewForConfigOrDie(cfg),
//		schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"},
//		source.DynamicOptions{Namespace: "shop"})
//
// The source names gvr's GroupResource (widgets.example.com) in informer
// names and NotFound errors. It streams lists unless the client declares
// it cannot (client-go's fake dynamic client does). It fails for a nil
// client, a gvr without a resource or a version, and a namespace for a
// resource said to be cluster-scoped. Use [Convert] to turn its objects
// into a Go struct.
func FromDynamic(client dynamic.Interface, gvr schema.GroupVersionResource, opts DynamicOptions) (Source[*unstructured.Unstructured], error) {
	if objects.IsNil(client) {
		return nil, fmt.Errorf("%w: FromDynamic: nil client", ErrNilSource)
	}
	r, err := dynamicResource("FromDynamic", gvr, opts)
	if err != nil {
		return nil, err
	}
	return clientSource[*unstructured.Unstructured](client.Resource(gvr).Namespace(opts.Namespace), Info{Resource: r, WatchList: clientStreams(client)}), nil
}

// FromMetadata lists and watches gvr through client-go's metadata client:
// the server sends only each object's type and metadata, as
// *metav1.PartialObjectMetadata, so an informer caches names, labels,
// annotations and owner references without specs or statuses (a Secret's
// data never reaches the process). It takes the same options and fails
// for the same inputs as [FromDynamic].
func FromMetadata(client metadata.Interface, gvr schema.GroupVersionResource, opts DynamicOptions) (Source[*metav1.PartialObjectMetadata], error) {
	if objects.IsNil(client) {
		return nil, fmt.Errorf("%w: FromMetadata: nil client", ErrNilSource)
	}
	r, err := dynamicResource("FromMetadata", gvr, opts)
	if err != nil {
		return nil, err
	}
	info := Info{Resource: r, Name: r.String() + " metadata", WatchList: clientStreams(client)}
	return clientSource[*metav1.PartialObjectMetadata](client.Resource(gvr).Namespace(opts.Namespace), info), nil
}

// dynamicResource checks gvr and opts and returns what the source tells
// about its resource.
func dynamicResource(ctor string, gvr schema.GroupVersionResource, opts DynamicOptions) (Resource, error) {
	if gvr.Resource == "" || gvr.Version == "" {
		return Resource{}, fmt.Errorf("%w: %s: resource %q version %q: a resource and a version are needed", ErrNoResource, ctor, gvr.GroupResource(), gvr.Version)
	}
	r := Resource{GroupResource: gvr.GroupResource(), Scope: opts.Scope}
	if opts.Namespace != "" {
		if opts.Scope == cache.ScopeCluster {
			return Resource{}, fmt.Errorf("source: %s: %v is cluster-scoped: Namespace must be empty, not %q", ctor, r.GroupResource, opts.Namespace)
		}
		r.Scope = cache.ScopeNamespaced
	}
	return r, nil
}

// Convert adapts a source of unstructured objects (usually [FromDynamic])
// into a source of T, a pointer to a Go struct with JSON tags such as a
// custom resource's type that no scheme knows:
//
//	type Widget struct {
//		metav1.TypeMeta   `json:",inline"`
//		metav1.ObjectMeta `json:"metadata,omitempty"`
//		Spec              WidgetSpec `json:"spec"`
//	}
//	// ... with DeepCopyObject, as controller-gen writes it.
//	widgets, err := source.Convert[*Widget](dyn)
//
// Each object is converted with runtime.DefaultUnstructuredConverter into a
// new T; a bookmark becomes a T with only the bookmark's resourceVersion
// and annotations. An object that does not fit T (a string where T has a
// number) is an error wrapping [ErrWrongType] that names the object and T:
// List returns it in an *Error with PhaseList, Watcher.Next in one with
// PhaseWatch; it is never a panic. The source tells src's resource (or
// guesses it from T's name) and whether src streams lists.
//
// It fails for a nil src and for a T that is not a pointer to a struct.
// For T *unstructured.Unstructured it returns src itself.
func Convert[T cache.Object](src Source[*unstructured.Unstructured]) (Source[T], error) {
	if objects.IsNil(src) {
		return nil, fmt.Errorf("%w: Convert: nil source", ErrNilSource)
	}
	if same, ok := any(src).(Source[T]); ok {
		return same, nil
	}
	rt := reflect.TypeFor[T]()
	if rt.Kind() != reflect.Pointer || rt.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: Convert: %v is not a pointer to a struct", ErrWrongType, rt)
	}
	info := src.Info()
	info.Resource = ResourceOf(src)
	if info.Resource.Resource == "" {
		info.Resource.GroupResource = guessResource[T]()
	}
	info.Exclusive = true // every object is converted into a new T
	return &convertSource[T]{src: src, elem: rt.Elem(), info: info}, nil
}

// convertSource converts the objects of an unstructured source into T.
type convertSource[T cache.Object] struct {
	src  Source[*unstructured.Unstructured]
	elem reflect.Type // T's struct type
	info Info
}

// Info tells the adapted source's resource (or the one guessed from T) and
// whether it streams lists; the converted objects are the caller's alone.
func (s *convertSource[T]) Info() Info { return s.info }

func (s *convertSource[T]) List(ctx context.Context, opts metav1.ListOptions) (List[T], error) {
	l, err := s.src.List(ctx, opts)
	if err != nil {
		return List[T]{}, err
	}
	out := List[T]{Items: make([]T, 0, len(l.Items)), Undecodable: l.Undecodable, ResourceVersion: l.ResourceVersion, Continue: l.Continue, ShardInfo: l.ShardInfo}
	for _, u := range l.Items {
		t, err := s.object(u)
		if err != nil {
			return List[T]{}, &Error{Phase: PhaseList, Err: err}
		}
		out.Items = append(out.Items, t)
	}
	return out, nil
}

func (s *convertSource[T]) Watch(ctx context.Context, opts metav1.ListOptions) (Watcher[T], error) {
	w, err := s.src.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	if objects.IsNil(w) {
		return nil, &Error{Phase: PhaseWatchStart, Err: fmt.Errorf("%w: nil watch", ErrNilObject)}
	}
	return &convertWatcher[T]{s: s, w: w}, nil
}

// convertWatcher converts the events of an unstructured watch on the
// caller's goroutine.
type convertWatcher[T cache.Object] struct {
	s *convertSource[T]
	w Watcher[*unstructured.Unstructured]
}

func (c *convertWatcher[T]) Stop() { c.w.Stop() }

func (c *convertWatcher[T]) Next(ctx context.Context) (Event[T], error) {
	ev, err := c.w.Next(ctx)
	if err != nil {
		return Event[T]{}, err
	}
	var t T
	if ev.Type == watch.Bookmark {
		t, err = c.s.bookmark(ev.Object)
	} else {
		t, err = c.s.object(ev.Object)
	}
	if err != nil {
		return Event[T]{}, &Error{Phase: PhaseWatch, Err: fmt.Errorf("%s event: %w", ev.Type, err)}
	}
	return Event[T]{Type: ev.Type, Object: t}, nil
}

// newT returns a new, empty T.
func (s *convertSource[T]) newT() T {
	t, _ := reflect.New(s.elem).Interface().(T)
	return t
}

// object converts u into a new T, or returns an error naming u and T.
func (s *convertSource[T]) object(u *unstructured.Unstructured) (T, error) {
	var zero T
	if u == nil {
		return zero, fmt.Errorf("%w: want %T, got a nil *unstructured.Unstructured", ErrNilObject, zero)
	}
	t := s.newT()
	if err := fromUnstructured(u.Object, t); err != nil {
		return zero, fmt.Errorf("%w: %s %s into %T: %w", ErrWrongType, u.GetKind(), objectName(u), zero, err)
	}
	return t, nil
}

// bookmark makes the T of a bookmark: only its resourceVersion and
// annotations (the initial-events-end marker) matter, and the rest of a
// bookmark's object need not fit T.
func (s *convertSource[T]) bookmark(u *unstructured.Unstructured) (T, error) {
	var zero T
	if u == nil {
		return zero, fmt.Errorf("%w: want %T, got a nil *unstructured.Unstructured", ErrNilObject, zero)
	}
	t := s.newT()
	t.SetResourceVersion(u.GetResourceVersion())
	t.SetAnnotations(u.GetAnnotations())
	return t, nil
}

// fromUnstructured is runtime.DefaultUnstructuredConverter.FromUnstructured
// with a panic in the converter's reflection turned into an error: a bad
// object must not take the informer down.
func fromUnstructured(u map[string]any, obj any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("converter panicked: %v", p)
		}
	}()
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u, obj)
}

// objectName is "namespace/name", or "name" for a cluster-scoped object.
func objectName(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns + "/" + u.GetName()
	}
	return u.GetName()
}
