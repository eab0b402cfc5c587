package typed_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// lagging is a fake whose next watch, once armed, fails with 410 Gone (so
// that the informer lists again) or starts with old events, and whose
// next list is an old snapshot: an API server behind a load balancer whose
// watch cache lags.
type lagging struct {
	*sourcetest.Fake[*corev1.Pod]
	mu        sync.Mutex
	snapshots []source.List[*corev1.Pod]
	expire    bool
	replay    []source.Event[*corev1.Pod]
	replayAt  int // the lists made before the watch that replays
	lists     int
}

func (l *lagging) List(ctx context.Context, opts metav1.ListOptions) (source.List[*corev1.Pod], error) {
	l.mu.Lock()
	l.lists++
	var s *source.List[*corev1.Pod]
	if len(l.snapshots) > 0 {
		s = &l.snapshots[0]
		l.snapshots = l.snapshots[1:]
	}
	l.mu.Unlock()
	if s != nil {
		return *s, nil
	}
	return l.Fake.List(ctx, opts)
}

func (l *lagging) Watch(ctx context.Context, opts metav1.ListOptions) (source.Watcher[*corev1.Pod], error) {
	l.mu.Lock()
	expire := l.expire
	l.expire = false
	var replay []source.Event[*corev1.Pod]
	if l.lists >= l.replayAt {
		replay, l.replay = l.replay, nil
	}
	l.mu.Unlock()
	if expire {
		return nil, apierrors.NewResourceExpired("too old resource version")
	}
	w, err := l.Fake.Watch(ctx, opts)
	if err != nil || len(replay) == 0 {
		return w, err
	}
	return &replaying{Watcher: w, first: replay}, nil
}

type replaying struct {
	source.Watcher[*corev1.Pod]
	first []source.Event[*corev1.Pod]
}

func (r *replaying) Next(ctx context.Context) (source.Event[*corev1.Pod], error) {
	if len(r.first) > 0 {
		ev := r.first[0]
		r.first = r.first[1:]
		return ev, nil
	}
	return r.Watcher.Next(ctx)
}

// TestStaleListOrEventIsRefused: after b was deleted and a updated, the
// source answers a relist with a snapshot from before (a list older than
// the cache), or replays a's old state in a new watch (an event older than
// the cached a). The informer refuses either: b does not come back, a does
// not go back, the handler hears of neither, a *StaleError is reported
// once, and the informer lists again, with a quorum read, to a cache equal
// to the server.
func TestStaleListOrEventIsRefused(t *testing.T) {
	for _, kind := range []string{"list", "event"} {
		t.Run(kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: true}, it.Pod("ns", "a", nil), it.Pod("ns", "b", nil))
				src := &lagging{Fake: fake}
				var errs []error
				var errMu sync.Mutex
				inf := mustInformer(t, src, typed.Options[*corev1.Pod]{ErrorHandler: func(err error) {
					errMu.Lock()
					errs = append(errs, err)
					errMu.Unlock()
				}})
				var calls []string
				reg, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{
					AddFunc:    func(p *corev1.Pod, _ bool) { calls = append(calls, "add "+p.Name+"@"+p.ResourceVersion) },
					UpdateFunc: func(_, p *corev1.Pod) { calls = append(calls, "update "+p.Name+"@"+p.ResourceVersion) },
					DeleteFunc: func(d handler.Deleted[*corev1.Pod]) { calls = append(calls, "delete "+d.Key.Name) },
				})
				if err != nil {
					t.Fatal(err)
				}
				it.Run(t, inf)
				if err := typed.WaitForCacheSync(t.Context(), inf, reg); err != nil {
					t.Fatal(err)
				}
				old, err := fake.List(t.Context(), metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				oldA, err := fake.Get(cache.Key{Namespace: "ns", Name: "a"})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := fake.Delete(cache.Key{Namespace: "ns", Name: "b"}); err != nil {
					t.Fatal(err)
				}
				if _, err := fake.Update(it.Pod("ns", "a", map[string]string{"v": "2"})); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				calls = nil
				src.mu.Lock()
				lists := src.lists
				if kind == "list" {
					src.snapshots, src.expire = []source.List[*corev1.Pod]{old}, true
				} else {
					src.replay = []source.Event[*corev1.Pod]{{Type: watch.Modified, Object: oldA.DeepCopy()}}
				}
				src.mu.Unlock()
				fake.CutWatches()
				time.Sleep(time.Minute) // the backoffs before the watch and the relists (fake time)
				synctest.Wait()

				if _, ok := inf.Store().GetByKey(cache.Key{Namespace: "ns", Name: "b"}); ok {
					t.Errorf("b is back in the cache after a stale %s", kind)
				}
				if a, _ := inf.Store().GetByKey(cache.Key{Namespace: "ns", Name: "a"}); a == nil || a.ResourceVersion != "104" {
					t.Errorf("a = %v after a stale %s, want a at 104", a, kind)
				}
				// The quorum relist tells of a, unchanged, as a relist does (and,
				// after the stale list, so does the watch from its version
				// replaying a's last update).
				for _, c := range calls {
					if c != "update a@104" {
						t.Errorf("handler calls %q after a stale %s, want only updates of a at 104", calls, kind)
						break
					}
				}
				if len(calls) == 0 {
					t.Errorf("no handler call after the stale %s: the quorum relist tells of a", kind)
				}
				errMu.Lock()
				var stale []*typed.StaleError
				for _, err := range errs {
					if se := (*typed.StaleError)(nil); errors.As(err, &se) {
						stale = append(stale, se)
					}
				}
				errMu.Unlock()
				if len(stale) != 1 || !errors.Is(stale[0], typed.ErrWentBack) || stale[0].Cached != fake.ResourceVersion() {
					t.Errorf("stale errors %v (all: %v), want one at the cache's version %s", stale, errs, fake.ResourceVersion())
				}
				src.mu.Lock()
				relists := src.lists - lists
				src.mu.Unlock()
				want := 1 // the quorum relist
				if kind == "list" {
					want = 2 // the stale one, then the quorum relist
				}
				if relists != want {
					t.Errorf("%d lists after the stale %s, want %d", relists, kind, want)
				}
				if got := keys(inf.Store().List()); !slices.Equal(got, []string{"a"}) {
					t.Errorf("cache %q after the relist, want [a]", got)
				}
			})
		})
	}
}

// TestQuorumListIsTheTruth: when the quorum relist asked for after a
// stale list is older than the cache too (etcd was restored from a
// backup: versions went back for good), the informer takes it, and then
// the events that follow it, though older than what the cache held.
func TestQuorumListIsTheTruth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: true}, it.Pod("ns", "a", nil), it.Pod("ns", "b", nil))
		src := &lagging{Fake: fake}
		var errs []error
		inf := mustInformer(t, src, typed.Options[*corev1.Pod]{ErrorHandler: func(err error) { errs = append(errs, err) }})
		it.Run(t, inf)
		if err := inf.WaitForSync(t.Context()); err != nil {
			t.Fatal(err)
		}
		old, err := fake.List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := fake.Update(it.Pod("ns", "a", map[string]string{"n": "1"})); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		c := it.Pod("ns", "c", nil)
		c.ResourceVersion = "103" // after the restored list (102), before the cache (105)
		src.mu.Lock()
		src.snapshots, src.expire = []source.List[*corev1.Pod]{old, old}, true
		src.replay, src.replayAt = []source.Event[*corev1.Pod]{{Type: watch.Added, Object: c}}, src.lists+2
		src.mu.Unlock()
		fake.CutWatches()
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := keys(inf.Store().List()); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Errorf("cache %q, want the restored list's a and b, and c from the event after it", got)
		}
		var stale int
		for _, err := range errs {
			if errors.Is(err, typed.ErrWentBack) {
				stale++
			}
		}
		if stale != 1 {
			t.Errorf("%d stale errors (all: %v), want 1: the quorum list is taken", stale, errs)
		}
	})
}

func keys(ps []*corev1.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}
