package source

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/objects"
)

// Client is what every typed clientset client offers for one resource, such
// as clientset.CoreV1().Pods(namespace): L is its list type (*corev1.PodList).
type Client[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// FromClient adapts a typed clientset client. The list type is inferred:
//
//	src, err := source.FromClient[*corev1.Pod](clientset.CoreV1().Pods(metav1.NamespaceAll))
//
// It fails for a nil client and for a list type whose items are not T (a
// Services client for a Pod source).
func FromClient[T cache.Object, L runtime.Object](c Client[L]) (Source[T], error) {
	if objects.IsNil(c) {
		return nil, fmt.Errorf("%w: FromClient: nil client", ErrNilSource)
	}
	if err := checkListType[T, L](); err != nil {
		return nil, err
	}
	return clientSource[T](c, Info{Resource: clientResource[T](c), WatchList: clientStreams(c)}), nil
}

// clientSource adapts a client of one resource (typed, dynamic or
// metadata) described by info.
func clientSource[T cache.Object, L runtime.Object](c Client[L], info Info) Source[T] {
	return &runtimeSource[T]{
		list: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return c.List(ctx, opts)
		},
		watch: c.Watch,
		info:  info,
	}
}

// clientStreams reports whether a client can stream lists: not client-go's
// fake clients, whose watches never send the initial-events bookmark, nor
// anything that declares IsWatchListSemanticsUnSupported.
func clientStreams(c any) bool {
	switch c := c.(type) {
	case interface{ IsWatchListSemanticsUnSupported() bool }:
		return !c.IsWatchListSemanticsUnSupported()
	case interface {
		Resource() schema.GroupVersionResource
		Kind() schema.GroupVersionKind
	}:
		return false // a client-go fake typed client (gentype.FakeClient)
	}
	return true
}

// checkListType refuses a list type whose Items hold another type than T.
// A list type without an Items slice is left to the per-object check.
func checkListType[T cache.Object, L runtime.Object]() error {
	lt := reflect.TypeFor[L]()
	if lt.Kind() == reflect.Pointer {
		lt = lt.Elem()
	}
	if lt.Kind() != reflect.Struct {
		return nil
	}
	f, ok := lt.FieldByName("Items")
	if !ok || f.Type.Kind() != reflect.Slice {
		return nil
	}
	item, want := f.Type.Elem(), reflect.TypeFor[T]()
	if item == want || reflect.PointerTo(item) == want {
		return nil
	}
	return fmt.Errorf("%w: FromClient: list type %v holds %v, not %v", ErrWrongType, reflect.TypeFor[L](), item, want)
}

// clientResource reads what a clientset client tells about its resource:
// client-go's fake clients know it exactly; real ones know their group.
func clientResource[T cache.Object](c any) Resource {
	r := Resource{GroupResource: guessResource[T]()}
	switch c := c.(type) {
	case interface {
		Resource() schema.GroupVersionResource
		Namespace() string
	}:
		r.GroupResource = c.Resource().GroupResource()
		if c.Namespace() != "" {
			r.Scope = cache.ScopeNamespaced
		}
	case interface {
		GetClient() rest.Interface
		GetNamespace() string
	}:
		if rc := c.GetClient(); !objects.IsNil(rc) {
			r.Group = rc.APIVersion().Group
		}
		if c.GetNamespace() != "" {
			r.Scope = cache.ScopeNamespaced
		}
	}
	return r
}

// FromListerWatcher adapts a client-go cache.ListerWatcher (for example
// cache.NewListWatchFromClient, or a dynamic or metadata client wrapped in a
// cache.ListWatch). A lister-watcher that also implements
// cache.ListerWatcherWithContext gets the caller's context. It fails for a
// nil lister-watcher.
func FromListerWatcher[T cache.Object](lw clientcache.ListerWatcher) (Source[T], error) {
	if objects.IsNil(lw) {
		return nil, fmt.Errorf("%w: FromListerWatcher: nil lister-watcher", ErrNilSource)
	}
	lwc := clientcache.ToListerWatcherWithContext(lw)
	return &runtimeSource[T]{list: lwc.ListWithContext, watch: lwc.WatchWithContext, info: Info{WatchList: clientStreams(lw)}}, nil
}

// runtimeSource adapts list and watch functions on runtime.Objects.
type runtimeSource[T cache.Object] struct {
	list  func(context.Context, metav1.ListOptions) (runtime.Object, error)
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
	info  Info
}

// Info tells what the adapted client knows of its resource and whether it
// can stream lists; its objects may be shared (a fake's tracker keeps
// them).
func (s *runtimeSource[T]) Info() Info { return s.info }

func (s *runtimeSource[T]) List(ctx context.Context, opts metav1.ListOptions) (List[T], error) {
	obj, err := s.list(ctx, opts)
	if err != nil {
		return List[T]{}, &Error{Phase: PhaseList, Err: err}
	}
	if objects.IsNil(obj) {
		return List[T]{}, &Error{Phase: PhaseList, Err: fmt.Errorf("%w: nil list", ErrNilObject)}
	}
	lm, err := meta.ListAccessor(obj)
	if err != nil {
		return List[T]{}, &Error{Phase: PhaseList, Err: fmt.Errorf("%w: %T is not a list: %w", ErrWrongType, obj, err)}
	}
	out := List[T]{ResourceVersion: lm.GetResourceVersion(), Continue: lm.GetContinue(), ShardInfo: shardInfoOf(obj)}
	out.Items = make([]T, 0, meta.LenList(obj))
	err = meta.EachListItemWithAlloc(obj, func(item runtime.Object) error {
		t, err := As[T](item)
		if err != nil {
			return err
		}
		out.Items = append(out.Items, t)
		return nil
	})
	if err != nil {
		return List[T]{}, &Error{Phase: PhaseList, Err: err}
	}
	return out, nil
}

func (s *runtimeSource[T]) Watch(ctx context.Context, opts metav1.ListOptions) (Watcher[T], error) {
	w, err := s.watch(ctx, opts)
	if err != nil {
		return nil, &Error{Phase: PhaseWatchStart, Err: err}
	}
	if objects.IsNil(w) {
		return nil, &Error{Phase: PhaseWatchStart, Err: fmt.Errorf("%w: nil watch", ErrNilObject)}
	}
	return &runtimeWatcher[T]{w: w}, nil
}

// runtimeWatcher converts a watch.Interface stream event by event, on the
// caller's goroutine: no extra goroutine or channel hop.
type runtimeWatcher[T cache.Object] struct {
	w       watch.Interface
	stopped atomic.Bool
}

func (r *runtimeWatcher[T]) Stop() {
	if r.stopped.CompareAndSwap(false, true) {
		r.w.Stop()
	}
}

func (r *runtimeWatcher[T]) Next(ctx context.Context) (Event[T], error) {
	if err := ctx.Err(); err != nil {
		return Event[T]{}, err
	}
	if r.stopped.Load() {
		return Event[T]{}, ErrWatchClosed
	}
	ch := r.w.ResultChan()
	var ev watch.Event
	var ok bool
	select {
	case ev, ok = <-ch: // an event is waiting: no need to watch ctx too
	default:
		select {
		case <-ctx.Done():
			return Event[T]{}, ctx.Err()
		case ev, ok = <-ch:
		}
	}
	// After Stop, what the stream still delivers is not an event of it:
	// client-go's StreamWatcher may report the body that Stop closed as an
	// ERROR event ("unable to decode an event from the watch stream").
	// Stop sets stopped before it stops the stream.
	if !ok || r.stopped.Load() {
		return Event[T]{}, ErrWatchClosed
	}
	return convert[T](ev)
}

// convert turns a watch.Event into a typed Event, or the stream error it
// carries.
func convert[T cache.Object](ev watch.Event) (Event[T], error) {
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		obj, err := As[T](ev.Object)
		if err != nil {
			return Event[T]{}, &Error{Phase: PhaseWatch, Err: fmt.Errorf("%s event: %w", ev.Type, err)}
		}
		return Event[T]{Type: ev.Type, Object: obj}, nil
	case watch.Error:
		return Event[T]{}, &Error{Phase: PhaseWatch, Err: statusError(ev.Object)}
	default:
		return Event[T]{}, &Error{Phase: PhaseWatch, Err: fmt.Errorf("%w: unknown watch event type %q", ErrMalformed, ev.Type)}
	}
}

// statusError turns the object of an ERROR event into an error: the API
// status it carries, or a malformed-event error.
func statusError(obj runtime.Object) error {
	if objects.IsNil(obj) {
		return fmt.Errorf("%w: error event without a status", ErrMalformed)
	}
	if status, ok := obj.(*metav1.Status); ok {
		return apierrors.FromObject(status)
	}
	err := apierrors.FromObject(obj)
	if _, ok := err.(apierrors.APIStatus); ok {
		return err
	}
	return fmt.Errorf("%w: error event carrying %T", ErrMalformed, obj)
}
