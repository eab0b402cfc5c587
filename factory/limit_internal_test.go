package factory

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/source"
)

// stubSource answers with what it is told: listErr, watchErr, or a watch
// that plays events then ends with endErr.
type stubSource struct {
	listErr, watchErr error
	events            []source.Event[*corev1.Pod]
	endErr            error
	// held, if set, is asked during List; heldInList keeps its answer.
	held       func() bool
	heldInList bool
}

func (s *stubSource) Info() source.Info { return source.Info{WatchList: true} }

func (s *stubSource) List(context.Context, metav1.ListOptions) (source.List[*corev1.Pod], error) {
	if s.held != nil {
		s.heldInList = s.held()
	}
	return source.List[*corev1.Pod]{}, s.listErr
}

func (s *stubSource) Watch(context.Context, metav1.ListOptions) (source.Watcher[*corev1.Pod], error) {
	if s.watchErr != nil {
		return nil, s.watchErr
	}
	return &stubWatcher{events: s.events, end: s.endErr}, nil
}

type stubWatcher struct {
	events []source.Event[*corev1.Pod]
	end    error
}

func (w *stubWatcher) Next(ctx context.Context) (source.Event[*corev1.Pod], error) {
	if len(w.events) == 0 {
		if w.end == nil {
			<-ctx.Done()
			return source.Event[*corev1.Pod]{}, ctx.Err()
		}
		return source.Event[*corev1.Pod]{}, w.end
	}
	ev := w.events[0]
	w.events = w.events[1:]
	return ev, nil
}

func (w *stubWatcher) Stop() {}

func bookmark(end bool) source.Event[*corev1.Pod] {
	p := &corev1.Pod{}
	p.ResourceVersion = "10"
	if end {
		p.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return source.Event[*corev1.Pod]{Type: watch.Bookmark, Object: p}
}

// TestLimitPermits: when a limited source holds its one permit, and that
// it gives it back on every path: a LIST page that succeeds or fails, a
// streaming list at its end bookmark (not at another bookmark), on a
// stream error, on Stop, when its context ends, and when it fails to
// start; a plain watch takes none.
func TestLimitPermits(t *testing.T) {
	send := true
	streaming := metav1.ListOptions{SendInitialEvents: &send, AllowWatchBookmarks: true}
	added := source.Event[*corev1.Pod]{Type: watch.Added, Object: &corev1.Pod{}}
	errBoom := errors.New("boom")
	for _, tc := range []struct {
		name string
		src  *stubSource
		// do uses the source and reports whether a permit was held at
		// the point the case checks; afterwards none may be held.
		do func(ctx context.Context, t *testing.T, st *stubSource, s source.Source[*corev1.Pod], held func() bool) bool
	}{
		{"LIST ok", &stubSource{}, func(ctx context.Context, t *testing.T, st *stubSource, s source.Source[*corev1.Pod], held func() bool) bool {
			st.held = held
			_, err := s.List(ctx, metav1.ListOptions{})
			return err != nil || !st.heldInList
		}},
		{"LIST fails", &stubSource{listErr: errBoom}, func(ctx context.Context, t *testing.T, st *stubSource, s source.Source[*corev1.Pod], held func() bool) bool {
			st.held = held
			_, err := s.List(ctx, metav1.ListOptions{})
			return !errors.Is(err, errBoom) || !st.heldInList
		}},
		{"streaming list held until the end bookmark", &stubSource{events: []source.Event[*corev1.Pod]{added, bookmark(false), bookmark(true)}},
			func(ctx context.Context, t *testing.T, st *stubSource, s source.Source[*corev1.Pod], held func() bool) bool {
				w, err := s.Watch(ctx, streaming)
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
				heldAll := held()
				for range 2 { // the object and a plain bookmark
					if _, err := w.Next(ctx); err != nil {
						t.Fatal(err)
					}
					heldAll = heldAll && held()
				}
				if _, err := w.Next(ctx); err != nil {
					t.Fatal(err)
				}
				return !heldAll || held()
			}},
		{"streaming list fails in the stream", &stubSource{events: []source.Event[*corev1.Pod]{added}, endErr: errBoom},
			func(ctx context.Context, t *testing.T, st *stubSource, s source.Source[*corev1.Pod], held func() bool) bool {
				w, _ := s.Watch(ctx, streaming)
				w.Next(ctx)
				_, err := w.Next(ctx)
				bad := !errors.Is(err, errBoom) || held()
				w.Stop() // after the release: not a second one
				return bad
			}},
		{"streaming list stopped", &stubSource{},
			func(ctx context.Context, t *testing.T, st *stubSource, s source.Source[*corev1.Pod], held func() bool) bool {
				w, _ := s.Watch(ctx, streaming)
				h := held()
				w.Stop()
				w.Stop()
				return !h || held()
			}},
		{"streaming list's context ends", &stubSource{},
			func(ctx context.Context, t *testing.T, st *stubSource, s source.Source[*corev1.Pod], held func() bool) bool {
				wctx, cancel := context.WithCancel(ctx)
				w, _ := s.Watch(wctx, streaming)
				defer w.Stop()
				h := held()
				cancel()
				deadline := time.Now().Add(time.Minute) // a deadlock guard
				for held() && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				return !h || held()
			}},
		{"streaming list fails to start", &stubSource{watchErr: errBoom},
			func(ctx context.Context, t *testing.T, st *stubSource, s source.Source[*corev1.Pod], held func() bool) bool {
				_, err := s.Watch(ctx, streaming)
				return !errors.Is(err, errBoom) || held()
			}},
		{"plain watch takes no permit", &stubSource{},
			func(ctx context.Context, t *testing.T, st *stubSource, s source.Source[*corev1.Pod], held func() bool) bool {
				w, _ := s.Watch(ctx, metav1.ListOptions{AllowWatchBookmarks: true})
				defer w.Stop()
				return held()
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sem := semaphore.NewWeighted(1)
			held := func() bool {
				if sem.TryAcquire(1) {
					sem.Release(1)
					return false
				}
				return true
			}
			if bad := tc.do(t.Context(), t, tc.src, limit(source.Source[*corev1.Pod](tc.src), sem), held); bad {
				t.Errorf("permit held at the wrong time")
			}
			if held() {
				t.Errorf("permit still held after the case")
			}
		})
	}
}

// TestLimitWaitEndsWithContext: a request waiting for a permit gives up
// with its context, and the error says so.
func TestLimitWaitEndsWithContext(t *testing.T) {
	sem := semaphore.NewWeighted(1)
	if !sem.TryAcquire(1) {
		t.Fatal("fresh semaphore is full")
	}
	defer sem.Release(1)
	s := limit(source.Source[*corev1.Pod](&stubSource{}), sem)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, listErr := s.List(ctx, metav1.ListOptions{})
	send := true
	_, watchErr := s.Watch(ctx, metav1.ListOptions{SendInitialEvents: &send, AllowWatchBookmarks: true})
	for _, err := range []error{listErr, watchErr} {
		var se *source.Error
		if !errors.Is(err, context.Canceled) || !errors.As(err, &se) {
			t.Errorf("waiting for a permit with an ended context = %v, want a *source.Error wrapping context.Canceled", err)
		}
	}
}

// itemStub is a stubSource that lists item by item, recording whether it
// held a permit while it did.
type itemStub struct {
	stubSource
	sem  *semaphore.Weighted
	held bool
}

func (s *itemStub) ListItems(_ context.Context, _ metav1.ListOptions, yield func(*corev1.Pod) error) (source.List[*corev1.Pod], error) {
	s.held = !s.sem.TryAcquire(1)
	if !s.held {
		s.sem.Release(1)
	}
	return source.List[*corev1.Pod]{}, yield(&corev1.Pod{})
}

// A bounded ItemLister stays one (an informer of the factory lists a
// whole LIST body item by item), and its ListItems takes a permit; a
// source that is not one does not become one.
func TestLimitKeepsItemLister(t *testing.T) {
	sem := semaphore.NewWeighted(1)
	stub := &itemStub{sem: sem}
	il, ok := limit[*corev1.Pod](stub, sem).(source.ItemLister[*corev1.Pod])
	if !ok {
		t.Fatal("limit of an ItemLister is not one")
	}
	n := 0
	if _, err := il.ListItems(t.Context(), metav1.ListOptions{}, func(*corev1.Pod) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("ListItems: %v, %d items, want 1", err, n)
	}
	if !stub.held {
		t.Error("ListItems ran without a permit")
	}
	if !sem.TryAcquire(1) {
		t.Error("the permit was not given back")
	}
	if _, ok := limit[*corev1.Pod](&stubSource{}, sem).(source.ItemLister[*corev1.Pod]); ok {
		t.Error("limit of a plain source is an ItemLister")
	}
}
