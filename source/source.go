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
// for concurrent use, and hand over the objects they return: the caller may
// keep them, and the source must not change them afterwards.
type Source[T cache.Object] interface {
	// Info says what the source lists and what it can do. It is asked
	// once, when a consumer is made, and must not change.
	Info() Info
	// List returns one page of objects (all of them if opts.Limit is 0).
	// An object of the page that the source read but could not decode
	// into T is in the page's Undecodable, not an error of the page,
	// when its metadata names it.
	List(ctx context.Context, opts metav1.ListOptions) (List[T], error)
	// Watch starts a watch stream as described by opts: from
	// opts.ResourceVersion, with bookmarks if opts.AllowWatchBookmarks, and
	// with the initial state streamed first if opts.SendInitialEvents is set.
	Watch(ctx context.Context, opts metav1.ListOptions) (Watcher[T], error)
}

// ItemLister is a [Source] that can also list item by item: ListItems
// reads a page as List does, but hands over each item as soon as it is
// decoded, so that a consumer can drop what it does not need before the
// next one is read: a list, even one the server sends whole, is never
// held at once, neither as objects nor as bytes. [FromConfig]'s JSON
// source is one. A consumer asks for it with a type assertion, and lists
// with List when the source is not one; a source that wraps another
// offers it only if the wrapped one does.
type ItemLister[T cache.Object] interface {
	Source[T]
	// ListItems lists one page as List does and calls yield with each of
	// its items, in the page's order, on the caller's goroutine; yield
	// keeps the object, as it would an item of List. It returns the page
	// without its Items: ResourceVersion, Continue, ShardInfo and
	// Undecodable are known only once the page is read. If yield returns
	// an error, ListItems stops and returns it unwrapped. Any other error
	// is List's, and means the page failed, even if items were handed
	// over before the failure was read: they are not a list, and the
	// caller drops them.
	ListItems(ctx context.Context, opts metav1.ListOptions, yield func(T) error) (List[T], error)
}

// List is one page of a list.
type List[T cache.Object] struct {
	// Items are the page's objects.
	Items []T
	// Undecodable are the page's objects that the source read but could
	// not decode into T, each named by its metadata (Name is never
	// empty), in the order of the page; they are not in Items. An
	// informer quarantines them under their keys. Only FromConfig sets
	// it; sources that get their objects decoded by client-go
	// (FromClient, FromListerWatcher, FromDynamic, FromMetadata) cannot
	// tell one object from the list, and fail the list.
	Undecodable []*UndecodableError
	// ResourceVersion is the version the list was read at.
	ResourceVersion string
	// Continue is the token for the next page; empty on the last page.
	Continue string
	// ShardInfo is the server's echo of the request's shard selector
	// (metav1.ListMeta.ShardInfo): nil if the request had none, or if the
	// server did not apply it.
	ShardInfo *metav1.ShardInfo
}

// Event is one watch event: ADDED, MODIFIED or DELETED with the object, or
// BOOKMARK with an object that carries only a resourceVersion (and, at the
// end of a streaming list, the metav1.InitialEventsAnnotationKey
// annotation). Errors in the stream are not events: [Watcher.Next] returns
// them.
type Event[T cache.Object] struct {
	// Type is watch.Added, watch.Modified, watch.Deleted or watch.Bookmark.
	Type watch.EventType
	// Object is the event's object.
	Object T
	// Progress is set by a source that merges several streams, such as
	// [InNamespaces]: the resourceVersion through which it has delivered
	// every change of every stream. Its objects' versions interleave, so
	// a consumer resumes, and reports how far its cache has come (for a
	// read of its own writes), from Progress rather than from the
	// object's version. Empty: the object's version is the stream's
	// progress, as for one watch of the API server.
	Progress string
}

// Watcher is a typed watch stream.
type Watcher[T cache.Object] interface {
	// Next blocks until the next event. It returns ErrWatchClosed when the
	// stream has ended (the server closed it, it timed out, or Stop was
	// called), ctx's error if ctx ends first, and any other error for a
	// failure in the stream: an ERROR event's status (an *Error with
	// PhaseWatch wrapping the API error), or an event that makes no sense
	// (ErrMalformed, ErrWrongType). The caller stops the stream after an
	// error, but for one: an event whose object the source read whole
	// but could not decode into T is an *UndecodableError (in an *Error
	// with PhaseWatch), and the next call reads the event after it. A
	// ctx that ends while Next blocks may end the stream too (a
	// source reading a connection can stop the read only by closing it):
	// after ctx's error, the caller watches again.
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

// Error is what a Source returns when something fails: the phase and the
// cause. Unwrap gives the cause, so apierrors helpers see through it.
type Error struct {
	// Phase is the step that failed.
	Phase Phase
	// Err is the cause.
	Err error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %v", e.Phase, e.Err) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errors about objects and frames.
var (
	// ErrWrongType is wrapped by the errors [As] returns for an object of
	// another type than T.
	ErrWrongType = errors.New("source: object of the wrong type")
	// ErrNilObject is wrapped by the errors about a nil object, list or
	// watch where one is required.
	ErrNilObject = errors.New("source: nil object")
	// ErrMalformed is wrapped by errors about frames that make no sense: an
	// unknown event type, an error event without a status, an event
	// without an object, a list or an event that is not JSON (or not the
	// protobuf the API server writes). An object that is, but does not
	// decode into T, is an *UndecodableError instead.
	ErrMalformed = errors.New("source: malformed list or watch event")
	// ErrPanic is wrapped, with the panic's value and stack, by the error
	// an informer reports for a source that panicked in List, Watch or
	// Next; the informer retries after a backoff, as for any failure.
	ErrPanic = errors.New("source: panicked")
	// ErrParked is wrapped by the error of a source that cannot serve now
	// and says so once: its next List or Watch waits, itself, until it
	// can go on (a resource that is not served, waiting for discovery to
	// list it again). A consumer reports the error and calls again at
	// once, without a backoff: the wait is the source's, and ends as soon
	// as the source can serve.
	ErrParked = errors.New("source: parked")
)

// As converts an untyped object into a T. It is the one checked conversion
// of the module: a nil object, a typed nil, or an object of another type
// returns an error naming the expected and the actual type.
func As[T cache.Object](obj runtime.Object) (T, error) {
	var zero T
	if obj == nil {
		return zero, fmt.Errorf("%w: want %T, got nil", ErrNilObject, zero)
	}
	t, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("%w: want %T, got %T", ErrWrongType, zero, obj)
	}
	if t == zero {
		return zero, fmt.Errorf("%w: want %T, got a nil %T", ErrNilObject, zero, obj)
	}
	return t, nil
}
