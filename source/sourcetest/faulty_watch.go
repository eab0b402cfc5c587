package sourcetest

import (
	"context"
	"errors"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// Watch starts a watch on the wrapped source, unless the plan has a fault
// for this call; the stream it returns injects the plan's Next faults.
func (f *Faulty[T]) Watch(ctx context.Context, opts metav1.ListOptions) (source.Watcher[T], error) {
	streaming := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	versioned := opts.ResourceVersion != "" && opts.ResourceVersion != "0"
	resume := versioned && !streaming
	f.mu.Lock()
	f.reqs.Watches++
	if streaming {
		f.reqs.StreamingLists++
	}
	f.watchers++
	id := f.watchers
	d := f.decideLocked(OpWatch)
	var startErr, streamErr error
	var form string
	if f.armGone {
		f.armGone = false
		if resume {
			// The history is gone since the event a FaultDrop lost.
			d = decision{Fault: Fault{Kind: FaultGone, Op: OpWatch, At: f.calls[OpWatch]}, scripted: d.scripted}
			_, streamErr = apiError(FaultGone, 0, source.ResourceOf[T](f).GroupResource, false, opts.ResourceVersion)
			form = "after drop, first event"
		}
	}
	switch d.Kind {
	case 0, FaultDelay:
	case FaultGone, FaultTooLarge:
		if streamErr != nil {
			break
		}
		if !versioned || (d.Kind == FaultGone && !resume) {
			d.Kind = 0 // no version to be too old or too new
			break
		}
		var err error
		form, err = apiError(d.Kind, d.form, source.ResourceOf[T](f).GroupResource, false, opts.ResourceVersion)
		if d.form%2 == 0 {
			startErr, form = err, join(form, "at start")
		} else {
			streamErr, form = err, join(form, "first event")
		}
	default:
		form, startErr = apiError(d.Kind, d.form, source.ResourceOf[T](f).GroupResource, false, opts.ResourceVersion)
	}
	var err error
	switch {
	case startErr != nil:
		err = &source.Error{Phase: source.PhaseWatchStart, Err: startErr}
	case streamErr != nil:
		err = &source.Error{Phase: source.PhaseWatch, Err: streamErr}
	}
	f.countErrLocked(err)
	if d.Kind != 0 {
		f.recordLocked(d, id, 0, form, streaming, err)
	}
	f.mu.Unlock()
	switch {
	case startErr != nil:
		return nil, err
	case streamErr != nil:
		return &errWatcher[T]{err: err}, nil
	}
	if d.Kind == FaultDelay {
		if err := f.wait(ctx, d.For, nil); err != nil {
			return nil, &source.Error{Phase: source.PhaseWatchStart, Err: err}
		}
	}
	w, err := f.src.Watch(ctx, opts)
	if err != nil {
		f.mu.Lock()
		f.countErrLocked(err)
		f.mu.Unlock()
		return nil, err
	}
	return &faultyWatcher[T]{f: f, w: w, id: id, streaming: streaming, resume: resume, stop: make(chan struct{})}, nil
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + ", " + b
}

// errWatcher is a stream whose first event is an error: a watch the
// server started and then failed.
type errWatcher[T cache.Object] struct {
	mu   sync.Mutex
	err  error
	done bool
}

func (w *errWatcher[T]) Next(ctx context.Context) (source.Event[T], error) {
	if err := ctx.Err(); err != nil {
		return source.Event[T]{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return source.Event[T]{}, source.ErrWatchClosed
	}
	w.done = true
	return source.Event[T]{}, w.err
}

func (w *errWatcher[T]) Stop() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

// faultyWatcher injects the plan's Next faults into a stream.
type faultyWatcher[T cache.Object] struct {
	f      *Faulty[T]
	w      source.Watcher[T]
	id     int
	resume bool // a watch from a version: 410 can happen in it
	stop   chan struct{}
	once   sync.Once

	// Used by Next's caller only, or under f.mu.
	streaming bool // a streaming list before its end bookmark
	n         int
	closed    bool
	dup       *source.Event[T]
}

// Stop stops the stream and the wrapped one; a stall in progress ends.
func (w *faultyWatcher[T]) Stop() {
	w.once.Do(func() { close(w.stop) })
	w.w.Stop()
}

// end ends the stream from inside: the fault closed the connection.
func (w *faultyWatcher[T]) end() {
	w.closed = true
	w.w.Stop()
}

// Next returns the next event of the wrapped stream, or the plan's fault.
func (w *faultyWatcher[T]) Next(ctx context.Context) (source.Event[T], error) {
	if err := ctx.Err(); err != nil {
		return source.Event[T]{}, err
	}
	if w.closed {
		return source.Event[T]{}, source.ErrWatchClosed
	}
	if w.dup != nil {
		ev := *w.dup
		w.dup = nil
		w.f.mu.Lock()
		w.handedLocked(ev)
		w.f.mu.Unlock()
		return ev, nil
	}
	f := w.f
	w.n++
	f.mu.Lock()
	d := f.decideLocked(OpNext)
	var apiErr error
	var form string
	switch d.Kind {
	case FaultGone:
		if !w.resume {
			d.Kind = 0
			break
		}
		form, apiErr = apiError(d.Kind, d.form, source.ResourceOf[T](f).GroupResource, false, f.lastRV)
	case FaultInternal, FaultForbidden:
		form, apiErr = apiError(d.Kind, d.form, source.ResourceOf[T](f).GroupResource, false, f.lastRV)
	case FaultNilObject:
		form = "ADDED event with a nil object"
	case FaultMalformed:
		form = "unknown event type, as an error"
		if d.form%2 == 1 {
			form = "unknown event type, as an event"
		}
	}
	var err error
	switch d.Kind {
	case FaultWrongType:
		err = contentError[T](d.Kind, source.PhaseWatch)
	case FaultMalformed:
		if d.form%2 == 0 {
			err = contentError[T](d.Kind, source.PhaseWatch)
		}
	}
	switch d.Kind {
	case FaultWrongType, FaultNilObject, FaultMalformed:
		f.badContentLocked(d.Kind)
	}
	if apiErr != nil {
		err = &source.Error{Phase: source.PhaseWatch, Err: apiErr}
		f.countErrLocked(err)
	}
	if d.Kind != 0 {
		f.recordLocked(d, w.id, w.n, form, w.streaming, err)
	}
	f.mu.Unlock()

	switch d.Kind {
	case FaultCut:
		w.end()
		return source.Event[T]{}, source.ErrWatchClosed
	case FaultGone, FaultInternal, FaultForbidden:
		w.end()
		return source.Event[T]{}, err
	case FaultDelay:
		if err := f.wait(ctx, d.For, w.stop); err != nil {
			return source.Event[T]{}, err
		}
	case FaultStall:
		if err := f.wait(ctx, d.For, w.stop); err != nil {
			return source.Event[T]{}, err
		}
		w.end()
		return source.Event[T]{}, source.ErrWatchClosed
	case FaultDuplicate:
		ev, err := w.next(ctx)
		if err == nil {
			if c, ok := ev.Object.DeepCopyObject().(T); ok {
				w.dup = &source.Event[T]{Type: ev.Type, Object: c}
			}
		}
		return ev, err
	case FaultDrop:
		if _, err := w.w.Next(ctx); err != nil {
			return source.Event[T]{}, w.passErr(err) // nothing to drop
		}
		w.end()
		f.mu.Lock()
		f.armGone = !w.streaming
		f.mu.Unlock()
		return source.Event[T]{}, source.ErrWatchClosed
	case FaultWrongType:
		return source.Event[T]{}, err
	case FaultNilObject:
		return source.Event[T]{Type: watch.Added}, nil
	case FaultMalformed:
		if err == nil {
			return source.Event[T]{Type: "BOGUS"}, nil
		}
		return source.Event[T]{}, err
	}
	return w.next(ctx)
}

// next returns the wrapped stream's next event and accounts for it.
func (w *faultyWatcher[T]) next(ctx context.Context) (source.Event[T], error) {
	ev, err := w.w.Next(ctx)
	if err != nil {
		return source.Event[T]{}, w.passErr(err)
	}
	w.f.mu.Lock()
	w.handedLocked(ev)
	w.f.mu.Unlock()
	return ev, nil
}

// passErr counts an error of the wrapped stream and hands it on.
func (w *faultyWatcher[T]) passErr(err error) error {
	if !errors.Is(err, source.ErrWatchClosed) && ctxErr(err) == nil {
		w.f.mu.Lock()
		w.f.countErrLocked(err)
		w.f.mu.Unlock()
	}
	return err
}

func ctxErr(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// handedLocked accounts for an event handed out.
func (w *faultyWatcher[T]) handedLocked(ev source.Event[T]) {
	f := w.f
	f.reqs.Events++
	var zero T
	if ev.Object == zero {
		return
	}
	rv := ev.Object.GetResourceVersion()
	if w.streaming {
		// The initial events carry their objects' versions; the list has
		// the version of its end bookmark.
		if ev.Type == watch.Bookmark && ev.Object.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
			w.streaming = false
			f.reqs.CompletedLists++
			f.lastRV = rv
		}
		return
	}
	if rv != "" {
		f.lastRV = rv
	}
}
