package typed_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// stallable wraps a fake so that its open watches can be stalled: they
// deliver nothing more, and end only when stopped, as a watch over a
// half-open connection does. Watches opened later are not stalled.
type stallable struct {
	*sourcetest.Fake[*corev1.Pod]

	mu      sync.Mutex
	watches []*stallWatch
}

type stallWatch struct {
	source.Watcher[*corev1.Pod]
	stalled chan struct{}
	once    sync.Once
	stopped chan struct{}
	stop    sync.Once
}

func (s *stallable) Watch(ctx context.Context, opts metav1.ListOptions) (source.Watcher[*corev1.Pod], error) {
	w, err := s.Fake.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	sw := &stallWatch{Watcher: w, stalled: make(chan struct{}), stopped: make(chan struct{})}
	s.mu.Lock()
	s.watches = append(s.watches, sw)
	s.mu.Unlock()
	return sw, nil
}

// stallAll stalls every watch opened so far.
func (s *stallable) stallAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.watches {
		w.once.Do(func() { close(w.stalled) })
	}
}

func (w *stallWatch) Next(ctx context.Context) (source.Event[*corev1.Pod], error) {
	select {
	case <-w.stalled:
	default:
		ev, err := w.Watcher.Next(ctx)
		select {
		case <-w.stalled: // stalled while waiting: the event never arrives
		default:
			return ev, err
		}
	}
	select {
	case <-w.stopped:
		return source.Event[*corev1.Pod]{}, source.ErrWatchClosed
	case <-ctx.Done():
		return source.Event[*corev1.Pod]{}, ctx.Err()
	}
}

func (w *stallWatch) Stop() {
	w.stop.Do(func() { close(w.stopped) })
	w.Watcher.Stop()
}

// TestWatchIdleTimeout stalls the watch of a synced informer. Once the
// source has sent a periodic bookmark, the idle timeout stops the stalled
// watch and watches again from the last resourceVersion: no relist, the
// change made during the stall arrives (I1), and the stop is reported
// and counted. Without a bookmark seen (a server that sends none), or
// with the timeout off, a stalled watch is left alone.
func TestWatchIdleTimeout(t *testing.T) {
	const timeout = 10 * time.Second
	cases := []struct {
		name     string
		bookmark bool
		timeout  time.Duration
		wantIdle int
	}{
		{name: "stalled after a bookmark", bookmark: true, timeout: timeout, wantIdle: 1},
		{name: "no bookmark seen: not armed", timeout: timeout},
		{name: "off", bookmark: true, timeout: -1},
	}
	for _, tc := range cases {
		for _, watchList := range []bool{true, false} {
			t.Run(tc.name+map[bool]string{true: "/watchList", false: "/LIST"}[watchList], func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					src := &stallable{Fake: fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: !watchList}, it.Pods(10)...)}
					var errs it.ErrSink
					inf := mustInformer(t, src, typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle, WatchIdleTimeout: tc.timeout, NoWatchList: !watchList})
					rec := it.NewRecorder()
					startSynced(t, inf, rec)
					it.Eventually(t, "watch open", func() bool { return src.OpenWatches() == 1 })
					if tc.bookmark {
						src.Bookmark()
					}
					synctest.Wait()
					before := inf.Status().Stats
					lists := src.ListCalls()

					src.stallAll()
					if _, err := src.Create(it.Pod("ns-0", "during-stall", nil)); err != nil {
						t.Fatal(err)
					}
					time.Sleep(timeout * 5 / 4)
					synctest.Wait()
					st := inf.Status().Stats
					if got := st.IdleWatches - before.IdleWatches; got != tc.wantIdle {
						t.Fatalf("IdleWatches went up by %d, want %d (stats %+v)", got, tc.wantIdle, st)
					}
					if tc.wantIdle == 0 {
						if _, ok := inf.Store().GetByKey(cache.Key{Namespace: "ns-0", Name: "during-stall"}); ok {
							t.Error("the stalled watch delivered an event")
						}
						return
					}
					it.Converge(t, src.Fake, inf.Store(), rec)
					st = inf.Status().Stats
					if st.Relists != before.Relists || src.ListCalls() != lists || st.WatchLists != before.WatchLists {
						t.Errorf("I8: a stalled watch led to a relist: before %+v, after %+v, LIST calls %d -> %d", before, st, lists, src.ListCalls())
					}
					if st.WatchRestarts <= before.WatchRestarts {
						t.Errorf("WatchRestarts %d -> %d, want a resumed watch", before.WatchRestarts, st.WatchRestarts)
					}
					if n := errs.Count(it.Is(typed.ErrWatchIdle)); n != 1 {
						t.Errorf("%d idle-watch reports, want 1: %v", n, errs.All())
					}
					var serr *source.Error
					for _, err := range errs.All() {
						if errors.As(err, &serr) && errors.Is(err, typed.ErrWatchIdle) && serr.Phase != source.PhaseWatch {
							t.Errorf("idle error %v: phase %q, want %q", err, serr.Phase, source.PhaseWatch)
						}
					}
				})
			})
		}
	}
}
