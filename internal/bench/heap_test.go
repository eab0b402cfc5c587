package bench_test

import (
	"context"
	"flag"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/internal/bench"
	"github.com/typedinformer/informer/internal/intern"
	"github.com/typedinformer/informer/source"
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
// managedFields, decoded by each side's own client from the same bytes,
// labelled as a Deployment's pods are (one label set per ReplicaSet of
// 20) or a StatefulSet's (one per pod).
// The bytes are in the baseline, so the figure is the decoded object plus
// the informer's overhead. At equal settings: mf=drop, both drop
// managedFields (ours by default, client-go with the transform its users
// set); mf=keep, both keep them (ours with KeepManagedFields, client-go by
// default). Ours at mf=drop against client-go at mf=keep is the defaults
// against the defaults. impl=floor is the pods alone: our source's list
// decoded and its strings and maps shared as our informer shares them,
// held in a slice with no informer: ours less the informer's own cost.
func BenchmarkHeapPerPod(b *testing.B) {
	const n = 5000
	for _, layout := range []bench.Labels{bench.LabelsDeployment, bench.LabelsStatefulSet} {
		pods := bench.Pods(n, bench.PodOptions{ManagedFields: true, Labels: layout})
		sets := bench.LabelSets(pods)
		list, err := bench.JSONList("1", pods)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%s: %d bytes of JSON per pod, %d label sets", layout, len(list)/n, sets)
		for _, mf := range []string{"drop", "keep"} {
			set := settings{keepManagedFields: mf == "keep", dropManagedFields: mf == "drop"}
			for _, impl := range sides("ours", "client-go", "floor") {
				b.Run("labels="+layout.String()+"/mf="+mf+"/impl="+impl, func(b *testing.B) {
					if impl == "floor" {
						heapFloor(b, list, n, set.keepManagedFields)
					} else {
						heapPerPod(b, impl, list, n, set)
					}
					b.ReportMetric(float64(sets), "label-sets")
				})
			}
		}
	}
}

var heapProfile = flag.String("bench.heapprofile", "", "BenchmarkHeapPerPod: write the heap profile of the synced informer (in use, every 512 bytes sampled) to this file")

// writeHeapProfile writes the in-use heap profile to -bench.heapprofile,
// if set.
func writeHeapProfile(b *testing.B) {
	if *heapProfile == "" {
		return
	}
	f, err := os.Create(*heapProfile)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// heapPerPod syncs an informer of impl (with set) from a JSON
// list of n pods b.N times and reports the live heap it holds per pod.
func heapPerPod(b *testing.B, impl string, list []byte, n int, set settings) {
	if *heapProfile != "" {
		defer func(rate int) { goruntime.MemProfileRate = rate }(goruntime.MemProfileRate)
		goruntime.MemProfileRate = 512
	}
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
		writeHeapProfile(b)
		r.stop()
	}
	b.ReportMetric(perPod, "B/pod")
}

// heapFloor reports the heap per pod of n pods decoded from list by our
// REST source, their strings and maps shared as our informer shares
// them, held without an informer.
func heapFloor(b *testing.B, list []byte, n int, keep bool) {
	strs, err := intern.New[*corev1.Pod](intern.Options{Maps: true})
	if err != nil {
		b.Fatal(err)
	}
	var perPod float64
	for range b.N {
		replay := &bench.Replay{List: list, WatchType: "application/json"}
		src, err := source.FromConfig[*corev1.Pod](replay.Config(false), source.RESTOptions{Mapper: bench.Mapper(), KeepManagedFields: keep})
		if err != nil {
			b.Fatal(err)
		}
		before := liveHeap()
		l, err := src.List(context.Background(), metav1.ListOptions{})
		if err != nil || len(l.Items) != n {
			b.Fatalf("listed %d pods (%v), want %d", len(l.Items), err, n)
		}
		for _, p := range l.Items {
			if err := strs.Strings(p); err != nil {
				b.Fatal(err)
			}
		}
		after := liveHeap()
		perPod = float64(int64(after)-int64(before)) / float64(n)
		goruntime.KeepAlive(l)
	}
	b.ReportMetric(perPod, "B/pod")
}
