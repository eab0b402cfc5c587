package source

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	ourcache "github.com/typedinformer/informer/cache"
)

// Client is what every typed clientset client offers for one resource, such
// as clientset.CoreV1().Pods(namespace): L is its list type (*corev1.PodList).
type Client[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// FromClient adapts a typed clientset client. The list type is inferred:
//
//	src := source.FromClient[*corev1.Pod](clientset.CoreV1().Pods(metav1.NamespaceAll))
func FromClient[T ourcache.Object, L runtime.Object](c Client[L]) Source[T] {
	return &runtimeSource[T]{
		list: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return c.List(ctx, opts)
		},
		watch: c.Watch,
	}
}

// FromListerWatcher adapts a client-go cache.ListerWatcher (for example
// cache.NewListWatchFromClient, or a dynamic or metadata client wrapped in a
// cache.ListWatch). A lister-watcher that also implements
// cache.ListerWatcherWithContext gets the caller's context.
func FromListerWatcher[T ourcache.Object](lw cache.ListerWatcher) Source[T] {
	lwc := cache.ToListerWatcherWithContext(lw)
	return &runtimeSource[T]{list: lwc.ListWithContext, watch: lwc.WatchWithContext}
}

// runtimeSource adapts list and watch functions on runtime.Objects.
type runtimeSource[T ourcache.Object] struct {
	list  func(context.Context, metav1.ListOptions) (runtime.Object, error)
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
}

func (s *runtimeSource[T]) List(ctx context.Context, opts metav1.ListOptions) (List[T], error) {
	obj, err := s.list(ctx, opts)
	if err != nil {
		return List[T]{}, &Error{Phase: PhaseList, Err: err}
	}
	if isNil(obj) {
		return List[T]{}, &Error{Phase: PhaseList, Err: fmt.Errorf("%w: nil list", ourcache.ErrNilObject)}
	}
	lm, err := meta.ListAccessor(obj)
	if err != nil {
		return List[T]{}, &Error{Phase: PhaseList, Err: fmt.Errorf("%w: %T is not a list: %w", ErrWrongType, obj, err)}
	}
	out := List[T]{ResourceVersion: lm.GetResourceVersion(), Continue: lm.GetContinue()}
	n := meta.LenList(obj)
	out.Items = make([]T, 0, n)
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
	if w == nil || reflect.ValueOf(w).Kind() == reflect.Pointer && reflect.ValueOf(w).IsNil() {
		return nil, &Error{Phase: PhaseWatchStart, Err: fmt.Errorf("%w: nil watch", ourcache.ErrNilObject)}
	}
	return &runtimeWatcher[T]{w: w}, nil
}

// runtimeWatcher converts a watch.Interface stream event by event, on the
// caller's goroutine: no extra goroutine or channel hop.
type runtimeWatcher[T ourcache.Object] struct {
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
	select {
	case <-ctx.Done():
		return Event[T]{}, ctx.Err()
	case ev, ok := <-r.w.ResultChan():
		// After Stop, what the stream still delivers is not an event of it:
		// client-go's StreamWatcher may report the body that Stop closed as
		// an ERROR event ("unable to decode an event from the watch
		// stream"). Stop sets stopped before it stops the stream.
		if !ok || r.stopped.Load() {
			return Event[T]{}, ErrWatchClosed
		}
		return convert[T](ev), nil
	}
}

// convert turns a watch.Event into a typed Event; anything malformed becomes
// an error event.
func convert[T ourcache.Object](ev watch.Event) Event[T] {
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		obj, err := As[T](ev.Object)
		if err != nil {
			return Event[T]{Type: watch.Error, Err: &Error{Phase: PhaseWatch, Err: fmt.Errorf("%s event: %w", ev.Type, err)}}
		}
		return Event[T]{Type: ev.Type, Object: obj}
	case watch.Error:
		return Event[T]{Type: watch.Error, Err: &Error{Phase: PhaseWatch, Err: statusError(ev.Object)}}
	default:
		return Event[T]{Type: watch.Error, Err: &Error{Phase: PhaseWatch, Err: fmt.Errorf("%w: unknown watch event type %q", ErrMalformed, ev.Type)}}
	}
}

// statusError turns the object of an ERROR event into an error: the API
// status it carries, or a malformed-event error.
func statusError(obj runtime.Object) error {
	if isNil(obj) {
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

// isNil reports a nil object, including a typed nil pointer in the
// interface, which the API machinery's accessors would dereference.
func isNil(obj runtime.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// ErrMalformed is wrapped by errors about frames that make no sense: an
// unknown event type, an error event without a status.
var ErrMalformed = errors.New("source: malformed watch event")
