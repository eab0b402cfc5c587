package source

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
)

// Source lists and watches objects of type T. Implementations must be safe
// for concurrent use.
type Source[T cache.Object] interface {
	// List returns one page of objects (all of them if opts.Limit is 0).
	List(ctx context.Context, opts metav1.ListOptions) (List[T], error)
	// Watch starts a watch stream as described by opts: from
	// opts.ResourceVersion, with bookmarks if opts.AllowWatchBookmarks, and
	// with the initial state streamed first if opts.SendInitialEvents is set.
	Watch(ctx context.Context, opts metav1.ListOptions) (Watcher[T], error)
}

// List is one page of a list.
type List[T cache.Object] struct {
	// Items are the page's objects.
	Items []T
	// ResourceVersion is the version the list was read at.
	ResourceVersion string
	// Continue is the token for the next page; empty on the last page.
	Continue string
}

// Event is one watch event. For watch.Added, watch.Modified,
// watch.Deleted and watch.Bookmark, Object is set (a bookmark's object
// carries only a resourceVersion and annotations). For watch.Error, Err is
// set and Object is the zero T.
type Event[T cache.Object] struct {
	// Type is ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.
	Type watch.EventType
	// Object is the event's object; the zero T for ERROR.
	Object T
	// Err is set for ERROR events: an API status or a malformed frame.
	Err error
}

// Watcher is a typed watch stream.
type Watcher[T cache.Object] interface {
	// Next blocks until the next event. It returns ErrWatchClosed when the
	// stream has ended (the server closed it, it timed out, or Stop was
	// called) and ctx's error if ctx ends first.
	Next(ctx context.Context) (Event[T], error)
	// Stop ends the stream and releases its resources. It is safe to call
	// more than once and concurrently with Next.
	Stop()
}

// ErrWatchClosed is returned by Watcher.Next when the stream has ended.
var ErrWatchClosed = errors.New("source: watch closed")

// Phase names the step of list+watch that failed.
type Phase string

// The phases of an [Error].
const (
	PhaseList       Phase = "list"
	PhaseWatchStart Phase = "watch start"
	PhaseWatch      Phase = "watch"
)

// Error is what a Source returns or sends when something fails: the phase
// and the cause. Unwrap gives the cause, so apierrors helpers see through it.
type Error struct {
	// Phase is the step that failed.
	Phase Phase
	// Err is the cause.
	Err error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %v", e.Phase, e.Err) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ErrWrongType is wrapped by the errors [As] returns.
var ErrWrongType = errors.New("source: object of the wrong type")

// As converts an untyped object into a T. It is the one checked conversion
// of the module: a nil object, a typed nil, or an object of another type
// returns an error naming the expected and the actual type.
func As[T cache.Object](obj runtime.Object) (T, error) {
	var zero T
	if obj == nil {
		return zero, fmt.Errorf("%w: want %T, got nil", cache.ErrNilObject, zero)
	}
	t, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("%w: want %T, got %T", ErrWrongType, zero, obj)
	}
	if t == zero {
		return zero, fmt.Errorf("%w: want %T, got a nil %T", cache.ErrNilObject, zero, obj)
	}
	return t, nil
}
