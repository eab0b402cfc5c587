package bench_test

import (
	"context"
	goruntime "runtime"
	"testing"

	"github.com/typedinformer/informer/internal/bench"
)

// liveHeap is the heap in use after collecting all garbage.
func liveHeap() uint64 {
	var m goruntime.MemStats
	for range 3 {
		goruntime.GC()
	}
	goruntime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkHeapPerPod reports the heap an informer holds per cached pod
// for pods as the API server sends them: a JSON list of 5,000 pods with
// managedFields, decoded by each side's own client from the same bytes.
// The bytes are in the baseline, so the figure is the decoded object plus
// the informer's overhead. At equal settings: mf=drop, both drop
// managedFields (ours by default, client-go with the transform its users
// set); mf=keep, both keep them (ours with KeepManagedFields, client-go by
// default). Ours at mf=drop against client-go at mf=keep is the defaults
// against the defaults.
func BenchmarkHeapPerPod(b *testing.B) {
	const n = 5000
	list, err := bench.JSONList("1", bench.Pods(n, bench.PodOptions{ManagedFields: true}))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d bytes of JSON per pod", len(list)/n)
	for _, mf := range []string{"drop", "keep"} {
		set := settings{keepManagedFields: mf == "keep", dropManagedFields: mf == "drop"}
		for _, impl := range sides(impls...) {
			b.Run("mf="+mf+"/impl="+impl, func(b *testing.B) {
				heapPerPod(b, impl, list, n, set)
			})
		}
	}
}

// heapPerPod syncs an informer of impl (with set) from a JSON
// list of n pods b.N times and reports the live heap it holds per pod.
func heapPerPod(b *testing.B, impl string, list []byte, n int, set settings) {
	var perPod float64
	for range b.N {
		replay := &bench.Replay{List: list, WatchType: "application/json"}
		before := liveHeap()
		r := startWireWith(b, impl, replay, false, 0, func() {}, set)
		if !r.synced(context.Background()) {
			b.Fatal("not synced")
		}
		after := liveHeap()
		if got := r.len(); got != n {
			b.Fatalf("cached %d pods, want %d", got, n)
		}
		perPod = float64(int64(after)-int64(before)) / float64(n)
		r.stop()
	}
	b.ReportMetric(perPod, "B/pod")
}
