package file

import (
	"context"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// Watch reads the directory, then streams the changes to the objects
// matching opts as an API server does, until Stop, opts.TimeoutSeconds or
// the end of ctx. While a watch is open the source follows the directory
// (see the package documentation).
//
// With ResourceVersion "" or "0" it first sends an ADDED event for every
// object (none if SendInitialEvents is false). With a resourceVersion the
// source remembers it replays the changes after it; with an older or
// unknown one it fails at once with 410 Gone. SendInitialEvents (with
// AllowWatchBookmarks and ResourceVersionMatch NotOlderThan) streams the
// current objects as ADDED events, then a BOOKMARK annotated with
// metav1.InitialEventsAnnotationKey. With AllowWatchBookmarks, a change
// the selectors hide is told as a BOOKMARK with the new resourceVersion.
//
// Label and field selectors are honoured as on List; an object that stops
// matching is a DELETED event (its previous content at the new
// resourceVersion), one that starts matching an ADDED. Start failures are
// *source.Error with source.PhaseWatchStart; a watch that falls
// Options.History events behind its reader ends with a 410 Gone from Next.
func (s *Source[T]) Watch(ctx context.Context, opts metav1.ListOptions) (source.Watcher[T], error) {
	w, err := s.watch(ctx, opts)
	if err != nil {
		return nil, &source.Error{Phase: source.PhaseWatchStart, Err: err}
	}
	return w, nil
}

func (s *Source[T]) watch(ctx context.Context, opts metav1.ListOptions) (*watcher[T], error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := newFilter(opts)
	if err != nil {
		return nil, err
	}
	initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	if initial && (!opts.AllowWatchBookmarks || opts.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan) {
		return nil, apierrors.NewBadRequest("sendInitialEvents needs allowWatchBookmarks and resourceVersionMatch NotOlderThan")
	}
	s.acquire()
	_ = s.Rescan(ctx) // a directory that cannot be read was reported

	w := &watcher[T]{
		src:       s,
		f:         f,
		bookmarks: opts.AllowWatchBookmarks,
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	if err := s.start(w, opts, initial); err != nil {
		s.release()
		return nil, err
	}
	w.stopCtx = context.AfterFunc(ctx, func() { w.end(source.ErrWatchClosed) })
	if t := opts.TimeoutSeconds; t != nil && *t > 0 {
		w.timer = time.AfterFunc(time.Duration(*t)*time.Second, func() { w.end(source.ErrWatchClosed) })
	}
	return w, nil
}

// start queues w's first events, as opts asks, and registers w for the
// changes that follow, with no change in between.
func (s *Source[T]) start(w *watcher[T], opts metav1.ListOptions, initial bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rv := opts.ResourceVersion
	w.limit = s.opts.History
	switch {
	case initial || ((rv == "" || rv == "0") && opts.SendInitialEvents == nil):
		if n, ok := parseRV(rv); rv != "" && rv != "0" && (!ok || n > s.rv) {
			return s.gone(rv)
		}
		objs, err := s.snapshot(s.rv)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			if w.f.matches(obj) {
				w.queue = append(w.queue, item[T]{typ: watch.Added, obj: obj})
			}
		}
		w.limit += len(w.queue)
		if initial {
			w.queue = append(w.queue, item[T]{typ: watch.Bookmark, rv: s.rv, initialEnd: true})
		}
	case rv == "" || rv == "0":
		// SendInitialEvents false: from now on.
	default:
		n, ok := parseRV(rv)
		if !ok || n < s.floor || n > s.rv {
			return s.gone(rv)
		}
		i := len(s.history)
		for i > 0 && s.history[i-1].rv > n {
			i--
		}
		if i < len(s.history) {
			w.offer(s.history[i:], s.rv)
		}
	}
	s.watchers[w] = struct{}{}
	return nil
}

// watcher is one watch: a queue the source fills under its lock and Next
// empties, so the source never waits for a reader.
type watcher[T cache.Object] struct {
	src       *Source[T]
	f         filter
	bookmarks bool
	limit     int // queued events beyond which the watch is ended
	stopCtx   func() bool
	timer     *time.Timer
	stopOnce  sync.Once

	mu    sync.Mutex
	queue []item[T]
	err   error // why the stream ended; nil while it runs
	wake  chan struct{}
	done  chan struct{} // closed when err is set
}

// item is a queued event. obj is a stored object, copied when Next hands
// it over; rv, if set, replaces its resourceVersion (or is a bookmark's).
type item[T cache.Object] struct {
	typ        watch.EventType
	obj        T
	rv         int64
	initialEnd bool
}

// offer queues the events changes make for w's selectors, or a bookmark
// at rv if they make none. It ends w if its reader is too far behind. The
// caller holds the source's mu.
func (w *watcher[T]) offer(changes []change[T], rv int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	n := len(w.queue)
	for _, c := range changes {
		switch c.typ {
		case watch.Added:
			if w.f.matches(c.obj) {
				w.queue = append(w.queue, item[T]{typ: watch.Added, obj: c.obj})
			}
		case watch.Deleted:
			if w.f.matches(c.prev) {
				w.queue = append(w.queue, item[T]{typ: watch.Deleted, obj: c.obj})
			}
		default:
			was, is := w.f.matches(c.prev), w.f.matches(c.obj)
			switch {
			case was && is:
				w.queue = append(w.queue, item[T]{typ: watch.Modified, obj: c.obj})
			case was:
				w.queue = append(w.queue, item[T]{typ: watch.Deleted, obj: c.prev, rv: c.rv})
			case is:
				w.queue = append(w.queue, item[T]{typ: watch.Added, obj: c.obj})
			}
		}
	}
	if len(w.queue) == n && w.bookmarks {
		w.queue = append(w.queue, item[T]{typ: watch.Bookmark, rv: rv})
	}
	if len(w.queue) > w.limit {
		w.endLocked(&source.Error{Phase: source.PhaseWatch, Err: apierrors.NewResourceExpired(
			"the watch fell more than " + strconv.Itoa(w.src.opts.History) + " events behind: list again")})
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// end ends the stream with err: Next returns it once the queue is dropped.
func (w *watcher[T]) end(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.endLocked(err)
}

func (w *watcher[T]) endLocked(err error) {
	if w.err == nil {
		w.err, w.queue = err, nil
		close(w.done)
	}
}

// Next returns the next event, source.ErrWatchClosed once the watch ended
// (Stop, its timeout, the end of Watch's context), a 410 Gone if it fell
// behind, or ctx's error.
func (w *watcher[T]) Next(ctx context.Context) (source.Event[T], error) {
	for {
		if err := ctx.Err(); err != nil {
			return source.Event[T]{}, err
		}
		w.mu.Lock()
		if w.err != nil {
			err := w.err
			w.mu.Unlock()
			return source.Event[T]{}, err
		}
		if len(w.queue) > 0 {
			it := w.queue[0]
			w.queue[0] = item[T]{}
			w.queue = w.queue[1:]
			w.mu.Unlock()
			return w.event(it), nil
		}
		w.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-w.wake:
		case <-w.done:
		}
	}
}

// event makes the event of a queued item, with an object of its own.
func (w *watcher[T]) event(it item[T]) source.Event[T] {
	s := w.src
	if it.typ == watch.Bookmark {
		obj := s.dec.newT()
		obj.GetObjectKind().SetGroupVersionKind(s.dec.gvk)
		obj.SetResourceVersion(strconv.FormatInt(it.rv, 10))
		if it.initialEnd {
			obj.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		}
		return source.Event[T]{Type: watch.Bookmark, Object: obj}
	}
	obj := s.clone(it.obj)
	if it.rv != 0 {
		obj.SetResourceVersion(strconv.FormatInt(it.rv, 10))
	}
	return source.Event[T]{Type: it.typ, Object: obj}
}

// Stop ends the watch. It is safe to call more than once and concurrently
// with Next. The last Stop of the source's open watches also stops it
// following the directory, and waits for that.
func (w *watcher[T]) Stop() {
	w.stopOnce.Do(func() {
		w.stopCtx()
		if w.timer != nil {
			w.timer.Stop()
		}
		w.end(source.ErrWatchClosed)
		w.src.mu.Lock()
		delete(w.src.watchers, w)
		w.src.mu.Unlock()
		w.src.release()
	})
}
