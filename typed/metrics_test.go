package typed_test

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/metrics"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// recMetrics is a metrics.Metrics that records what one informer reports.
type recMetrics struct {
	mu           sync.Mutex
	ids          []metrics.Informer
	state        metrics.State
	batches      []metrics.Batch
	reasons      []string
	unregistered int
}

func (m *recMetrics) Register(id metrics.Informer, state metrics.State) metrics.Recorder {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ids = append(m.ids, id)
	m.state = state
	return m
}

func (m *recMetrics) ObserveBatch(b metrics.Batch) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b.Latency = 0 // compared by the counts only
	m.batches = append(m.batches, b)
}

func (m *recMetrics) ObserveError(reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reasons = append(m.reasons, reason)
}

func (m *recMetrics) Unregister() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unregistered++
}

// TestMetricsHooks checks what Options.Metrics receives: one Register when
// Run starts, with the informer's identity; a Batch per applied batch with
// its events by type; each error's reason; the state at collection; and
// Unregister when Run returns. It also checks the Status fields the
// metrics read (LastEventTime, WatchRestarts), with and without Metrics.
func TestMetricsHooks(t *testing.T) {
	for _, withMetrics := range []bool{true, false} {
		t.Run(map[bool]string{true: "metrics", false: "nil"}[withMetrics], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { metricsHooks(t, withMetrics) })
		})
	}
}

func metricsHooks(t *testing.T, withMetrics bool) {
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: true}, it.Pods(2)...)
	m := &recMetrics{}
	opts := typed.Options[*corev1.Pod]{Name: "shop", ErrorHandler: (&it.ErrSink{}).Handle, MinWatchTimeout: time.Hour}
	if withMetrics {
		opts.Metrics = m
	}
	inf := mustInformer(t, fake, opts)
	if got := inf.Status().LastEventTime; !got.IsZero() {
		t.Errorf("LastEventTime before Run = %v, want zero", got)
	}
	rec := it.NewRecorder()
	stop := startSynced(t, inf, rec)
	it.Eventually(t, "watch open", func() bool { return fake.OpenWatches() == 1 })
	listedAt := time.Now()

	time.Sleep(time.Minute)
	if _, err := fake.Create(it.Pod("ns-0", "new", nil)); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	if _, err := fake.Delete(cache.KeyOf(it.Pod("ns-0", "new", nil))); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	time.Sleep(time.Second)
	fake.Bookmark()
	synctest.Wait()
	bookmarkedAt := time.Now()
	fake.FailWatches(1, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC")))
	fake.CutWatches()
	it.Eventually(t, "watch reopened", func() bool { return fake.WatchCalls() == 3 && fake.OpenWatches() == 1 })
	synctest.Wait()

	st := inf.Status()
	if st.Stats.WatchRestarts != 2 {
		t.Errorf("WatchRestarts = %d, want 2 (the Forbidden one and the one after)", st.Stats.WatchRestarts)
	}
	if !st.LastEventTime.Equal(bookmarkedAt) || !bookmarkedAt.After(listedAt) {
		t.Errorf("LastEventTime = %v, want the bookmark's time %v (virtual time; the list was at %v, re-watches do not count)", st.LastEventTime, bookmarkedAt, listedAt)
	}
	if !withMetrics {
		stop()
		return
	}
	var s metrics.Snapshot
	m.mu.Lock()
	m.state(&s)
	m.mu.Unlock()
	wantSnap := metrics.Snapshot{
		Synced: true, Stats: metrics.Stats{Lists: 1, Watches: 3, WatchRestarts: 2, Events: 2, Bookmarks: 1, Errors: 1},
		LastEventTime: st.LastEventTime, ResourceVersion: fake.ResourceVersion(),
		Handlers: []metrics.Handler{{Name: "shop#1"}},
		Objects:  inf.Store().Len(), EstimatedBytes: inf.Status().Size.EstimatedBytes,
	}
	if wantSnap.Objects > 0 && wantSnap.EstimatedBytes <= 0 {
		t.Errorf("%d objects estimated at %d bytes", wantSnap.Objects, wantSnap.EstimatedBytes)
	}
	if diff := cmp.Diff(wantSnap, s); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
	stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	if diff := cmp.Diff([]metrics.Informer{{Name: "shop", Resource: "pods"}}, m.ids); diff != "" {
		t.Errorf("registered (-want +got):\n%s", diff)
	}
	wantBatches := []metrics.Batch{{Listed: 1}, {Added: 1}, {Deleted: 1}, {Bookmarks: 1}}
	if diff := cmp.Diff(wantBatches, m.batches); diff != "" {
		t.Errorf("batches (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Forbidden"}, m.reasons); diff != "" {
		t.Errorf("error reasons (-want +got):\n%s", diff)
	}
	if m.unregistered != 1 {
		t.Errorf("Unregister called %d times after Run returned, want 1", m.unregistered)
	}
}

// TestRefusedIsNotABookmark: an object the informer quarantines travels
// to the writer as a refusal, not as a bookmark: over a fake that sends no
// bookmarks, the metrics count one refused object in the list and one in
// a watch event, and no bookmark.
func TestRefusedIsNotABookmark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: true}, it.Pod("ns", "bad", nil), it.Pod("ns", "good", nil))
		m := &recMetrics{}
		inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{
			Metrics: m, ErrorHandler: func(error) {},
			Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
				if p.Name == "bad" || p.Name == "worse" {
					return nil, errors.New("refused")
				}
				return p, nil
			},
		})
		stop := it.Run(t, inf)
		if err := inf.WaitForSync(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, err := fake.Create(it.Pod("ns", "worse", nil)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		stop()
		var got metrics.Batch
		m.mu.Lock()
		for _, b := range m.batches {
			got.Added += b.Added
			got.Bookmarks += b.Bookmarks
			got.Refused += b.Refused
			got.Listed += b.Listed
		}
		m.mu.Unlock()
		if want := (metrics.Batch{Listed: 1, Refused: 2}); got != want {
			t.Errorf("batches add up to %+v, want %+v", got, want)
		}
		if st := inf.Status(); st.Stats.Bookmarks != 0 || len(st.Quarantined) != 2 {
			t.Errorf("status: %d bookmarks, %d quarantined; want 0 and 2", st.Stats.Bookmarks, len(st.Quarantined))
		}
	})
}
