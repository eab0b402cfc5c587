package factory_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/factory"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// inFlight counts the list requests in flight at a source, across many
// sources: LIST calls while they run, and streaming lists from Watch until
// their end bookmark (or error, or Stop). Each request takes delay, so
// that requests overlap.
type inFlight struct {
	delay time.Duration

	mu             sync.Mutex
	now, max, seen int
}

func (c *inFlight) begin() {
	c.mu.Lock()
	c.now++
	c.seen++
	c.max = max(c.max, c.now)
	c.mu.Unlock()
}

func (c *inFlight) end() {
	c.mu.Lock()
	c.now--
	c.mu.Unlock()
}

func (c *inFlight) figures() (maxNow, seen int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max, c.seen
}

// wrap returns src with its list requests counted.
func (c *inFlight) wrap(src source.Source[*corev1.Pod]) source.Source[*corev1.Pod] {
	return &countedSource{Source: src, c: c}
}

type countedSource struct {
	source.Source[*corev1.Pod]
	c *inFlight
}

func (s *countedSource) List(ctx context.Context, opts metav1.ListOptions) (source.List[*corev1.Pod], error) {
	s.c.begin()
	defer s.c.end()
	time.Sleep(s.c.delay)
	return s.Source.List(ctx, opts)
}

func (s *countedSource) Watch(ctx context.Context, opts metav1.ListOptions) (source.Watcher[*corev1.Pod], error) {
	if opts.SendInitialEvents == nil || !*opts.SendInitialEvents {
		return s.Source.Watch(ctx, opts)
	}
	s.c.begin()
	time.Sleep(s.c.delay)
	w, err := s.Source.Watch(ctx, opts)
	if err != nil {
		s.c.end()
		return nil, err
	}
	return &countedWatcher{Watcher: w, end: sync.OnceFunc(s.c.end)}, nil
}

type countedWatcher struct {
	source.Watcher[*corev1.Pod]
	end func()
}

func (w *countedWatcher) Next(ctx context.Context) (source.Event[*corev1.Pod], error) {
	ev, err := w.Watcher.Next(ctx)
	if err != nil || (ev.Type == watch.Bookmark && ev.Object.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true") {
		w.end()
	}
	return ev, err
}

func (w *countedWatcher) Stop() { w.end(); w.Watcher.Stop() }

// TestListBound: 30 informers of a factory bounded to 5 concurrent lists
// never have more than 5 list requests in flight at their sources, and
// more than one (the bound is not a mutex), with streaming lists and with
// paged LIST. All sync.
func TestListBound(t *testing.T) {
	const informers, bound = 30, 5
	for _, noWatch := range []bool{false, true} {
		t.Run(fmt.Sprintf("noWatchList=%v", noWatch), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &inFlight{delay: 10 * time.Millisecond}
				fs := newFakes(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: noWatch, Objects: it.Pods(1200)})
				fs.wrap = c.wrap
				f := newFactory(t, fs, factory.Options{MaxConcurrentLists: bound})
				for i := range informers {
					// One fake (every namespace), 30 label scopes: 30 informers,
					// 3 pages of 500 each when listing.
					informerFor[*corev1.Pod](t, f, factory.Scope{LabelSelector: fmt.Sprintf("shard!=s%d", i)})
				}
				start(t, f)
				waitSynced(t, f)
				maxNow, seen := c.figures()
				t.Logf("figures: %d informers, bound %d: %d list requests, at most %d in flight", informers, bound, seen, maxNow)
				if maxNow > bound || maxNow < 2 {
					t.Errorf("at most %d list requests in flight, want 2..%d", maxNow, bound)
				}
				if minSeen := informers; seen < minSeen {
					t.Errorf("%d list requests seen, want at least %d", seen, minSeen)
				}
			})
		})
	}
}

// TestListPermitNotHeldWhileBackingOff: with one permit, an informer whose
// lists keep failing backs off without the permit, so others list and
// sync while it waits for its next attempt.
func TestListPermitNotHeldWhileBackingOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakes(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: true, Objects: it.Pods(10)})
		bad := fs.of("bad")
		bad.FailLists(1000, nil) // 500s
		f := newFactory(t, fs, factory.Options{MaxConcurrentLists: 1, ErrorHandler: func(error) {}})
		start(t, f)
		informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: "bad"})
		it.Eventually(t, "the bad informer's first list failed", func() bool { return bad.ListCalls() == 1 })
		var goods []typed.Syncer
		for i := range 3 {
			inf, _ := informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: fmt.Sprintf("good-%d", i)})
			goods = append(goods, inf)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour) // a deadlock guard
		defer cancel()
		if err := typed.WaitForCacheSync(ctx, goods...); err != nil {
			t.Fatal(err)
		}
		if n := bad.ListCalls(); n != 1 {
			t.Errorf("the good informers synced after %d lists of the bad one, want 1: it held the permit while backing off", n)
		}
	})
}
