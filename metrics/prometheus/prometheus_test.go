package prometheus_test

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	promadapter "github.com/typedinformer/informer/metrics/prometheus"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// TestMain fails the test binary if a test, benchmark or example leaves a
// goroutine running.
func TestMain(m *testing.M) { leakcheck.Main(m) }

// gather returns every sample of reg whose metric name starts with one of
// prefixes, as "name{label=value,...}" -> value; a histogram gives its
// _count and _sum.
func gather(t *testing.T, reg *prometheus.Registry, prefixes ...string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		name := mf.GetName()
		if !hasPrefix(name, prefixes) {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				if v := lp.GetValue(); v != "" {
					ls = append(ls, lp.GetName()+"="+v)
				}
			}
			sort.Strings(ls)
			key := name + "{" + strings.Join(ls, ",") + "}"
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				got[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				got[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				got[strings.Replace(key, "{", "_count{", 1)] = float64(m.GetHistogram().GetSampleCount())
				got[strings.Replace(key, "{", "_sum{", 1)] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return got
}

func hasPrefix(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// pods labels an informer metric of the informer "pods" over pods.
func pods(metric string, extra ...string) string {
	ls := append([]string{"name=pods", "resource=pods"}, extra...)
	sort.Strings(ls)
	return metric + "{" + strings.Join(ls, ",") + "}"
}

// TestScriptedRun drives an informer on a fake through lists, events, a
// bookmark, watch cuts, a relist after compaction (410) and a Forbidden
// watch, and checks every informer metric after each step. The run is in
// a synctest bubble: latencies are 0 and staleness is exactly the virtual
// time slept.
func TestScriptedRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m, err := promadapter.New(reg, promadapter.Options{})
		if err != nil {
			t.Fatal(err)
		}
		fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{
			Resource: schema.GroupResource{Resource: "pods"}, NoWatchList: true, Objects: it.Pods(3),
		})
		var errs it.ErrSink
		inf, err := typed.NewInformer(fake, typed.Options[*corev1.Pod]{
			Name: "pods", Metrics: m, ErrorHandler: errs.Handle, NoWatchList: true, MinWatchTimeout: time.Hour,
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{AddFunc: func(p *corev1.Pod, _ bool) {
			if p.Name == "boom" {
				panic("boom")
			}
		}}); err != nil {
			t.Fatal(err)
		}
		if got := gather(t, reg, "informer_"); len(got) != 0 {
			t.Errorf("before Run: %v, want no informer metrics", got)
		}
		stop := it.Run(t, inf)
		if err := inf.WaitForSync(t.Context()); err != nil {
			t.Fatal(err)
		}
		watching := func(calls int) func() {
			return func() {
				it.Eventually(t, fmt.Sprintf("watch %d open", calls), func() bool {
					return fake.WatchCalls() == calls && fake.OpenWatches() == 1
				})
			}
		}
		watching(1)()
		mustDo := func(f func() error) func() {
			return func() {
				if err := f(); err != nil {
					t.Fatal(err)
				}
			}
		}
		key := cache.KeyOf(it.Pods(3)[0])

		// want holds the expected value of every sample; each step
		// changes some of them.
		want := map[string]float64{
			pods("informer_queued_items"): 0, pods("informer_synced"): 1,
			pods("informer_lists_total"): 1, pods("informer_watch_lists_total"): 0, pods("informer_relists_total"): 0,
			pods("informer_watches_total"): 1, pods("informer_watch_restarts_total"): 0,
			pods("informer_last_sync_error"): 0, pods("informer_seconds_since_last_event"): 0,
			pods("informer_handler_pending", "handler=pods#1"): 0, pods("informer_handler_panics_total", "handler=pods#1"): 0,
			pods("informer_handler_merged_total", "handler=pods#1"): 0,
			pods("informer_processing_latency_seconds_count"):       1, pods("informer_processing_latency_seconds_sum"): 0,
			pods("informer_quarantined_objects"): 0, pods("informer_refused_objects_total"): 0, pods("informer_idle_watches_total"): 0,
			pods("informer_consistency_checks_total"): 0, pods("informer_consistency_divergences_total"): 0,
			pods("informer_cache_mutations_total"): 0,
		}
		for _, typ := range []string{"ADDED", "MODIFIED", "DELETED", "BOOKMARK"} {
			want[pods("informer_watch_events_total", "type="+typ)] = 0
		}
		events := func(typ string) string { return pods("informer_watch_events_total", "type="+typ) }
		batches := pods("informer_processing_latency_seconds_count")
		steps := []struct {
			name   string
			do     func()
			change map[string]float64 // added to want
			set    map[string]float64 // replace want's values
		}{
			{name: "synced"},
			{name: "create", do: mustDo(func() error { _, err := fake.Create(it.Pod("ns-0", "new", nil)); return err }),
				change: map[string]float64{events("ADDED"): 1, batches: 1}},
			{name: "update", do: mustDo(func() error {
				_, err := fake.Update(it.Pod(key.Namespace, key.Name, map[string]string{"a": "b"}))
				return err
			}),
				change: map[string]float64{events("MODIFIED"): 1, batches: 1}},
			{name: "delete", do: mustDo(func() error { _, err := fake.Delete(cache.KeyOf(it.Pod("ns-0", "new", nil))); return err }),
				change: map[string]float64{events("DELETED"): 1, batches: 1}},
			{name: "bookmark", do: fake.Bookmark, change: map[string]float64{events("BOOKMARK"): 1, batches: 1}},
			{name: "handler panics", do: mustDo(func() error { _, err := fake.Create(it.Pod("ns-0", "boom", nil)); return err }),
				change: map[string]float64{events("ADDED"): 1, batches: 1, pods("informer_handler_panics_total", "handler=pods#1"): 1}},
			{name: "watch cut", do: func() { fake.CutWatches(); watching(2)() },
				change: map[string]float64{pods("informer_watches_total"): 1, pods("informer_watch_restarts_total"): 1}},
			{name: "relist after compaction", do: func() {
				fake.CutWatches() // the watch just opened: the reflector backs off before it re-watches
				mustDo(func() error { _, err := fake.Update(it.Pod(key.Namespace, key.Name, nil)); return err })()
				fake.Compact()
				it.Eventually(t, "relisted", func() bool { return fake.ListCalls() == 2 })
				watching(4)()
			}, change: map[string]float64{
				pods("informer_lists_total"): 1, pods("informer_relists_total"): 1, batches: 1,
				pods("informer_watches_total"): 2, pods("informer_watch_restarts_total"): 1, // the 410, then the watch after the list
			}},
			{name: "watch forbidden", do: func() {
				time.Sleep(2 * time.Second) // the watch lasted: the next one is opened at once
				fake.FailWatches(1, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC")))
				fake.CutWatches()
				synctest.Wait() // the re-watch failed; the informer backs off
			}, change: map[string]float64{
				pods("informer_watches_total"): 1, pods("informer_watch_restarts_total"): 1,
				pods("informer_errors_total", "reason=Forbidden"): 1,
			}, set: map[string]float64{pods("informer_last_sync_error"): 1}},
			{name: "watch allowed again", do: watching(6), change: map[string]float64{
				pods("informer_watches_total"): 1, pods("informer_watch_restarts_total"): 1,
			}, set: map[string]float64{pods("informer_last_sync_error"): 0}},
			{name: "quiet for 42s", do: func() {
				mustDo(func() error { _, err := fake.Create(it.Pod("ns-1", "late", nil)); return err })()
				synctest.Wait()
				time.Sleep(42 * time.Second)
			}, change: map[string]float64{events("ADDED"): 1, batches: 1},
				set: map[string]float64{pods("informer_seconds_since_last_event"): 42}},
		}
		for _, st := range steps {
			if st.do != nil {
				st.do()
			}
			synctest.Wait()
			for k, v := range st.change {
				want[k] += v
			}
			for k, v := range st.set {
				want[k] = v
			}
			if st.set[pods("informer_seconds_since_last_event")] == 0 {
				want[pods("informer_seconds_since_last_event")] = time.Since(inf.Status().LastEventTime).Seconds()
			}
			want[pods("informer_store_resource_version")] = float64(rvOf(t, inf.LastSyncResourceVersion()))
			size := inf.Status().Size
			want[pods("informer_objects")] = float64(inf.Store().Len())
			want[pods("informer_estimated_bytes")] = float64(size.EstimatedBytes)
			if size.Objects > 0 && size.EstimatedBytes <= 0 {
				t.Errorf("after %s: %d objects, estimated at %d bytes", st.name, size.Objects, size.EstimatedBytes)
			}
			if diff := cmp.Diff(want, gather(t, reg, "informer_")); diff != "" {
				t.Errorf("after %s: metrics (-want +got):\n%s", st.name, diff)
			}
		}
		if got := fake.ResourceVersion(); inf.LastSyncResourceVersion() != got {
			t.Errorf("informer at resourceVersion %s, fake at %s: the last step did not converge", inf.LastSyncResourceVersion(), got)
		}
		if n := errs.Count(func(err error) bool { return apierrors.IsForbidden(err) }); n != 1 {
			t.Errorf("%d Forbidden errors reported, want 1 (all: %v)", n, errs.All())
		}
		stop()
		if got := gather(t, reg, "informer_"); len(got) != 0 {
			t.Errorf("after Run returned: %v, want no informer metrics", got)
		}
	})
}

func rvOf(t *testing.T, rv string) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscan(rv, &n); err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return n
}

// TestWorkqueue checks the workqueue metrics of a client-go rate-limited
// queue: depth, adds and retries, labelled by the queue's name.
func TestWorkqueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m, err := promadapter.New(reg, promadapter.Options{})
		if err != nil {
			t.Fatal(err)
		}
		q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "pods", MetricsProvider: m.WorkqueueProvider()})
		defer q.ShutDown()
		q.Add("a")
		q.Add("b")
		q.Add("a") // already queued: not counted again
		item, _ := q.Get()
		q.AddRateLimited(item) // a retry
		q.Done(item)
		time.Sleep(time.Second) // the rate limiter's delay passes: the item is queued again
		synctest.Wait()
		want := map[string]float64{
			"workqueue_depth{name=pods}": 2, "workqueue_adds_total{name=pods}": 3, "workqueue_retries_total{name=pods}": 1,
		}
		got := gather(t, reg, "workqueue_depth", "workqueue_adds", "workqueue_retries")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("workqueue metrics (-want +got):\n%s", diff)
		}
	})
}

// TestNew checks construction errors: a nil registerer, and a registry
// that already has the metrics.
func TestNew(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := promadapter.New(reg, promadapter.Options{}); err != nil {
		t.Fatalf("first New: %v", err)
	}
	tests := []struct {
		name string
		reg  prometheus.Registerer
		want func(error) bool
	}{
		{"nil registerer", nil, func(err error) bool { return errors.Is(err, promadapter.ErrNilRegisterer) }},
		{"registered twice", reg, func(err error) bool {
			var are prometheus.AlreadyRegisteredError
			return errors.As(err, &are)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := promadapter.New(tc.reg, promadapter.Options{})
			if m != nil || !tc.want(err) {
				t.Errorf("New = %v, %v", m, err)
			}
		})
	}
	// The failed New left nothing behind: a fresh registry takes it.
	if _, err := promadapter.New(prometheus.NewRegistry(), promadapter.Options{}); err != nil {
		t.Errorf("New on a fresh registry: %v", err)
	}
}

// TestHandlerGauges checks a stalled handler's pending and merged
// notifications under CoalesceByKey: updates of one key while the handler
// is stuck on the first are merged into one pending notification.
func TestHandlerGauges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		registry := prometheus.NewRegistry()
		m, err := promadapter.New(registry, promadapter.Options{})
		if err != nil {
			t.Fatal(err)
		}
		p := it.Pods(1)[0]
		fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Resource: schema.GroupResource{Resource: "pods"}, Objects: []*corev1.Pod{p}})
		inf, err := typed.NewInformer(fake, typed.Options[*corev1.Pod]{Name: "pods", Metrics: m})
		if err != nil {
			t.Fatal(err)
		}
		gate := make(chan struct{})
		reg, err := inf.AddHandlerWithOptions(handler.Funcs[*corev1.Pod]{UpdateFunc: func(_, _ *corev1.Pod) { <-gate }},
			typed.HandlerOptions{Name: "slow", Buffer: typed.CoalesceByKey})
		if err != nil {
			t.Fatal(err)
		}
		stop := it.Run(t, inf)
		defer stop()
		if err := typed.WaitForCacheSync(t.Context(), inf, reg); err != nil { // the initial Add is handled
			t.Fatal(err)
		}
		gauges := func() map[string]float64 {
			return gather(t, registry, "informer_handler_")
		}
		want := func(pending, merged float64) map[string]float64 {
			return map[string]float64{
				pods("informer_handler_pending", "handler=slow"):      pending,
				pods("informer_handler_merged_total", "handler=slow"): merged,
				pods("informer_handler_panics_total", "handler=slow"): 0,
			}
		}
		for i, w := range []map[string]float64{want(1, 0), want(2, 0), want(2, 1), want(2, 2)} {
			// The first update keeps the handler busy (pending until it
			// returns); the next ones wait, merged into one.
			if _, err := fake.Update(it.Pod(p.Namespace, p.Name, map[string]string{"n": fmt.Sprint(i)})); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			if diff := cmp.Diff(w, gauges()); diff != "" {
				t.Errorf("after update %d (-want +got):\n%s", i+1, diff)
			}
		}
		close(gate)
		synctest.Wait()
		if diff := cmp.Diff(want(0, 2), gauges()); diff != "" {
			t.Errorf("after the handler caught up (-want +got):\n%s", diff)
		}
	})
}
