package sourcetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// Watch starts a watch as a real server does. With ResourceVersion "" or
// "0" it first sends a synthetic ADDED event for every current object, then
// live events. With a specific resourceVersion it replays the retained
// changes after it, then live events; if that version was compacted away,
// the watch starts, its first Next returns 410 Gone ("too old resource
// version", which a server sends as an ERROR event), and then it is
// closed. A version newer than the current one fails at start with the
// "Too large resource version" error (a real server's watch cache sends
// it as an ERROR event after waiting a few seconds).
//
// SendInitialEvents=true (with ResourceVersionMatch NotOlderThan) streams
// the current state as ADDED events and then, if AllowWatchBookmarks, a
// BOOKMARK annotated with metav1.InitialEventsAnnotationKey;
// SendInitialEvents=false skips the initial state. TimeoutSeconds ends the stream after that long, and so
// does the end of ctx.
//
// Label and field selectors filter events as the apiserver's watch cache
// does: an object that stops matching arrives as DELETED (its previous
// content with the new resourceVersion), one that starts matching as
// ADDED. Start failures are *Error with PhaseWatchStart; in-stream errors
// are returned by Next as an *Error with PhaseWatch.
func (f *Fake[T]) Watch(ctx context.Context, opts metav1.ListOptions) (source.Watcher[T], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watchCalls++
	if err := ctx.Err(); err != nil {
		return nil, &source.Error{Phase: source.PhaseWatchStart, Err: err}
	}
	if f.failWatches > 0 {
		f.failWatches--
		return nil, &source.Error{Phase: source.PhaseWatchStart, Err: f.failWatchErr}
	}
	w, err := f.startLocked(opts)
	if err != nil {
		return nil, &source.Error{Phase: source.PhaseWatchStart, Err: err}
	}
	if w.state != watchOpen {
		return w, nil // the 410 stream: nothing to register
	}
	f.nextID++
	w.id = f.nextID
	f.watchers[w.id] = w
	w.mu.Lock()
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		w.timer = time.AfterFunc(time.Duration(*opts.TimeoutSeconds)*time.Second, w.Stop)
	}
	w.stopCtx = context.AfterFunc(ctx, w.Stop)
	w.mu.Unlock()
	return w, nil
}

// startLocked validates opts and builds a watcher holding the initial
// events.
func (f *Fake[T]) startLocked(opts metav1.ListOptions) (*fakeWatcher[T], error) {
	if err := validateOptions(opts, true, !f.noWatchList); err != nil {
		return nil, err
	}
	sel, err := parseSelectors(opts)
	if err != nil {
		return nil, err
	}
	rv, err := parseRV(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if rv > f.rv {
		return nil, tooLargeRV(rv, f.rv)
	}
	w := &fakeWatcher[T]{
		f:         f,
		sel:       sel,
		bookmarks: opts.AllowWatchBookmarks,
		notify:    make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	initial := opts.SendInitialEvents
	switch {
	case (initial == nil && rv == 0) || (initial != nil && *initial):
		for _, obj := range sortedByKey(f.objects) {
			if sel.matches(obj) {
				w.queue = append(w.queue, frame[T]{ev: source.Event[T]{Type: watch.Added, Object: obj}})
			}
		}
		if initial != nil && w.bookmarks {
			w.queue = append(w.queue, f.bookmarkLocked(true))
		}
	case rv == 0:
		// sendInitialEvents=false from "now": live events only.
	case rv < f.compacted:
		expired := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, f.compacted))
		w.queue = []frame[T]{errFrame[T](expired)}
		w.state = watchEnding
		close(w.done)
	default:
		for _, c := range f.history {
			if c.rv <= rv {
				continue
			}
			if fr, ok := w.filter(c); ok {
				w.queue = append(w.queue, fr)
			}
		}
	}
	return w, nil
}

// Bookmark sends a BOOKMARK carrying the current resourceVersion to every
// open watch that asked for bookmarks (AllowWatchBookmarks).
func (f *Fake[T]) Bookmark() {
	f.mu.Lock()
	defer f.mu.Unlock()
	fr := f.bookmarkLocked(false)
	for _, w := range f.watchers {
		if w.bookmarks {
			w.enqueue(fr)
		}
	}
}

// bookmarkLocked returns a BOOKMARK event whose object is a new T with
// only the current resourceVersion set (and the initial-events-end
// annotation if initialEnd). A T that is not a pointer type cannot be
// built, and the watch gets an error saying so instead.
func (f *Fake[T]) bookmarkLocked(initialEnd bool) frame[T] {
	rt := reflect.TypeFor[T]()
	if rt.Kind() != reflect.Pointer {
		return errFrame[T](fmt.Errorf("%w: cannot build a bookmark object of non-pointer type %v", source.ErrWrongType, rt))
	}
	ro, _ := reflect.New(rt.Elem()).Interface().(runtime.Object)
	obj, err := source.As[T](ro)
	if err != nil {
		return errFrame[T](err)
	}
	obj.SetResourceVersion(formatRV(f.rv))
	if initialEnd {
		obj.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	return frame[T]{ev: source.Event[T]{Type: watch.Bookmark, Object: obj}}
}

// CutWatches ends every open watch now, as a dropped connection or an
// apiserver restart does: events not yet received are lost and Next
// returns source.ErrWatchClosed.
func (f *Fake[T]) CutWatches() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, w := range f.watchers {
		w.finish(nil)
		delete(f.watchers, id)
	}
}

// DropEvents makes the next n changes reach no watch; they still happen in
// the store and the history, so only a relist (or a watch from an older
// resourceVersion) sees them. n <= 0 cancels pending drops.
func (f *Fake[T]) DropEvents(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropEvents = max(n, 0)
}

// FailLists makes the next n List calls return err, wrapped in an *Error
// with PhaseList. A nil err means a 500 InternalError. n <= 0 cancels
// pending failures. An informer's streaming list is a Watch, not a List:
// to refuse it too, use FailWatches as well (or FakeOptions.NoWatchList).
func (f *Fake[T]) FailLists(n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failLists, f.failListErr = max(n, 0), orInternal(err, "injected list failure")
}

// FailWatches makes the next n Watch calls fail at start with err, wrapped
// in an *Error with PhaseWatchStart. A nil err means a 500 InternalError.
// n <= 0 cancels pending failures.
func (f *Fake[T]) FailWatches(n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failWatches, f.failWatchErr = max(n, 0), orInternal(err, "injected watch failure")
}

// InjectWatchError makes every open watch, after the events it already
// has, fail with an *source.Error with PhaseWatch wrapping err (a 500
// InternalError if nil), as an ERROR event does, then end.
func (f *Fake[T]) InjectWatchError(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fr := errFrame[T](orInternal(err, "injected watch error"))
	for id, w := range f.watchers {
		w.finish(&fr)
		delete(f.watchers, id)
	}
}

// InjectEvent delivers ev as is, without filtering, to every open watch:
// use it for events a source should not deliver (an object of the wrong
// shape, no object, an unknown type), to test what consumes a Source.
// ev.Object is copied; if it cannot be, the watches get an error instead.
func (f *Fake[T]) InjectEvent(ev source.Event[T]) {
	fr := frame[T]{ev: ev}
	if obj, err := copyOf(ev.Object); err != nil {
		fr = errFrame[T](fmt.Errorf("fake inject event: %w", err))
	} else {
		fr.ev.Object = obj
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.watchers {
		w.enqueue(fr)
	}
}

// ListCalls returns how many times List was called.
func (f *Fake[T]) ListCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.listCalls
}

// WatchCalls returns how many times Watch was called.
func (f *Fake[T]) WatchCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.watchCalls
}

// OpenWatches returns how many watches are open: started, and not yet
// stopped, cut, timed out or ended by an injected error.
func (f *Fake[T]) OpenWatches() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.watchers)
}

func orInternal(err error, msg string) error {
	if err == nil {
		return apierrors.NewInternalError(errors.New(msg))
	}
	return err
}

// watchState is the life cycle of a fakeWatcher.
type watchState int

const (
	watchOpen   watchState = iota // receiving events
	watchEnding                   // no more events; Next drains the queue
	watchClosed                   // ended; the queue is gone
)

// frame is one queued item of a watch stream: an event, or the error Next
// returns in its place.
type frame[T cache.Object] struct {
	ev  source.Event[T]
	err error
}

// errFrame is a frame carrying an in-stream error.
func errFrame[T cache.Object](err error) frame[T] {
	return frame[T]{err: &source.Error{Phase: source.PhaseWatch, Err: err}}
}

// fakeWatcher is one watch stream: an unbounded queue of events filled
// under the fake's lock and drained by Next. Queued objects are shared and
// never modified; Next hands out a copy.
type fakeWatcher[T cache.Object] struct {
	f         *Fake[T]
	id        uint64
	sel       selector
	bookmarks bool
	notify    chan struct{} // a token when the queue grows
	done      chan struct{} // closed when the watcher leaves watchOpen

	mu      sync.Mutex
	state   watchState
	queue   []frame[T]
	timer   *time.Timer
	stopCtx func() bool
}

// Next returns the next event or in-stream error, source.ErrWatchClosed
// once the stream has ended, or ctx's error.
func (w *fakeWatcher[T]) Next(ctx context.Context) (source.Event[T], error) {
	for {
		if err := ctx.Err(); err != nil {
			return source.Event[T]{}, err
		}
		w.mu.Lock()
		if w.state != watchClosed && len(w.queue) > 0 {
			fr := w.queue[0]
			w.queue[0] = frame[T]{}
			w.queue = w.queue[1:]
			w.mu.Unlock()
			if fr.err != nil {
				return source.Event[T]{}, fr.err
			}
			return deliver(fr.ev)
		}
		state := w.state
		w.mu.Unlock()
		if state != watchOpen {
			return source.Event[T]{}, source.ErrWatchClosed
		}
		select {
		case <-ctx.Done():
		case <-w.notify:
		case <-w.done:
		}
	}
}

// deliver gives the consumer its own copy of ev's object.
func deliver[T cache.Object](ev source.Event[T]) (source.Event[T], error) {
	obj, err := copyOf(ev.Object)
	if err != nil {
		return source.Event[T]{}, &source.Error{Phase: source.PhaseWatch, Err: err}
	}
	ev.Object = obj
	return ev, nil
}

// Stop ends the stream; pending events are dropped. It is idempotent.
func (w *fakeWatcher[T]) Stop() {
	if w.finish(nil) {
		w.f.unregister(w.id)
	}
}

func (f *Fake[T]) unregister(id uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.watchers, id)
}

// finish ends the watcher: with last, after delivering the queue and last;
// without, at once. It reports whether the watcher was open.
func (w *fakeWatcher[T]) finish(last *frame[T]) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	wasOpen := w.state == watchOpen
	switch {
	case last != nil && wasOpen:
		w.queue = append(w.queue, *last)
		w.state = watchEnding
	case last == nil && w.state != watchClosed:
		clear(w.queue)
		w.queue = nil
		w.state = watchClosed
	}
	if wasOpen {
		close(w.done)
		if w.timer != nil {
			w.timer.Stop()
		}
		if w.stopCtx != nil {
			w.stopCtx()
		}
	}
	return wasOpen
}

// enqueue appends fr if the watcher is open. The fake's lock is held.
func (w *fakeWatcher[T]) enqueue(fr frame[T]) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != watchOpen {
		return
	}
	w.queue = append(w.queue, fr)
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// filter turns a change into the event this watcher sees, as the
// apiserver's watch cache does for selectors.
func (w *fakeWatcher[T]) filter(c change[T]) (frame[T], bool) {
	var zero T
	cur := c.typ != watch.Deleted && w.sel.matches(c.obj)
	old := c.prev != zero && w.sel.matches(c.prev)
	ev := func(t watch.EventType, obj T) (frame[T], bool) {
		return frame[T]{ev: source.Event[T]{Type: t, Object: obj}}, true
	}
	switch {
	case cur && old:
		return ev(watch.Modified, c.obj)
	case cur:
		return ev(watch.Added, c.obj)
	case old && c.typ == watch.Deleted:
		return ev(watch.Deleted, c.obj)
	case old:
		// Left the selector: the previous content at the new version.
		gone, err := copyOf(c.prev)
		if err != nil {
			return errFrame[T](err), true
		}
		gone.SetResourceVersion(formatRV(c.rv))
		return ev(watch.Deleted, gone)
	}
	return frame[T]{}, false
}

// selector is the label and field selector of a list or watch.
type selector struct {
	labels labels.Selector
	fields fields.Selector
}

// parseSelectors parses opts' selectors; errors are BadRequest, as from
// the apiserver. Only metadata.name and metadata.namespace fields exist.
func parseSelectors(opts metav1.ListOptions) (selector, error) {
	ls, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return selector{}, apierrors.NewBadRequest(fmt.Sprintf("invalid label selector %q: %v", opts.LabelSelector, err))
	}
	fs, err := fields.ParseSelector(opts.FieldSelector)
	if err != nil {
		return selector{}, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector %q: %v", opts.FieldSelector, err))
	}
	for _, r := range fs.Requirements() {
		if _, _, err := runtime.DefaultMetaV1FieldSelectorConversion(r.Field, r.Value); err != nil {
			return selector{}, apierrors.NewBadRequest(err.Error())
		}
	}
	return selector{labels: ls, fields: fs}, nil
}

// matches reports whether obj, which must not be nil, is selected.
func (s selector) matches(obj metav1.Object) bool {
	return s.labels.Matches(labels.Set(obj.GetLabels())) &&
		s.fields.Matches(fields.Set{"metadata.name": obj.GetName(), "metadata.namespace": obj.GetNamespace()})
}

// validateOptions runs the apiserver's own validation of list and watch
// options and returns its Invalid error.
func validateOptions(opts metav1.ListOptions, isWatch, watchList bool) error {
	in := internalversion.ListOptions{
		Watch:                isWatch,
		ResourceVersion:      opts.ResourceVersion,
		ResourceVersionMatch: opts.ResourceVersionMatch,
		Continue:             opts.Continue,
		SendInitialEvents:    opts.SendInitialEvents,
	}
	if errs := validation.ValidateListOptions(&in, watchList); len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	return nil
}

// parseRV reads a resourceVersion parameter; "" and "0" are 0.
func parseRV(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	rv, err := strconv.ParseInt(s, 10, 64)
	if err != nil || rv < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %q", s))
	}
	return rv, nil
}

// tooLargeRV is the error a real server returns for a resourceVersion it
// has not reached yet (k8s.io/apiserver storage.NewTooLargeResourceVersionError).
func tooLargeRV(want, current int64) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", want, current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type:    metav1.CauseTypeResourceVersionTooLarge,
		Message: "Too large resource version",
	}}
	return err
}
