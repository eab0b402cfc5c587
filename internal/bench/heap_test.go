package bench_test

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"slices"
	"strings"
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
// managedFields, decoded by each side's own client from the same bytes.
// The bytes are in the baseline, so the figure is the decoded object plus
// the informer's overhead. At equal settings: mf=drop, both drop
// managedFields (ours by default, client-go with the transform its users
// set); mf=keep, both keep them (ours with KeepManagedFields, client-go by
// default). Ours at mf=drop against client-go at mf=keep is the defaults
// against the defaults. impl=floor is the pods alone: our source's list
// decoded and its strings shared as our informer shares them, held in a
// slice with no informer: what any cache of these Go types holds at
// least, short of sharing maps and slices or decoding fewer fields.
// impl=floor-shared-maps is the same with equal maps (labels,
// annotations, a container's requests and limits) shared between the
// pods as well: what sharing them would save, which no side does.
func BenchmarkHeapPerPod(b *testing.B) {
	const n = 5000
	list, err := bench.JSONList("1", bench.Pods(n, bench.PodOptions{ManagedFields: true}))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d bytes of JSON per pod", len(list)/n)
	for _, mf := range []string{"drop", "keep"} {
		set := settings{keepManagedFields: mf == "keep", dropManagedFields: mf == "drop"}
		for _, impl := range sides("ours", "client-go", "floor", "floor-shared-maps") {
			b.Run("mf="+mf+"/impl="+impl, func(b *testing.B) {
				if impl != "ours" && impl != "client-go" {
					heapFloor(b, list, n, set.keepManagedFields, impl == "floor-shared-maps")
					return
				}
				heapPerPod(b, impl, list, n, set)
			})
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
// REST source, their strings shared, held without an informer; with
// shareMaps, their equal maps shared too.
func heapFloor(b *testing.B, list []byte, n int, keep, shareMaps bool) {
	strs, err := intern.New[*corev1.Pod](intern.Options{})
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
		maps := mapSharer{}
		for _, p := range l.Items {
			if err := strs.Strings(p); err != nil {
				b.Fatal(err)
			}
			if shareMaps {
				maps.share(p)
			}
		}
		maps = mapSharer{}
		after := liveHeap()
		perPod = float64(int64(after)-int64(before)) / float64(n)
		goruntime.KeepAlive(l)
	}
	b.ReportMetric(perPod, "B/pod")
}

// mapSharer replaces a pod's maps with an equal one seen before.
type mapSharer struct {
	strs map[string]map[string]string
	res  map[string]corev1.ResourceList
}

func (m *mapSharer) share(p *corev1.Pod) {
	if m.strs == nil {
		m.strs, m.res = map[string]map[string]string{}, map[string]corev1.ResourceList{}
	}
	for _, f := range []*map[string]string{&p.Labels, &p.Annotations} {
		*f = canonical(m.strs, *f)
	}
	for i := range p.Spec.Containers {
		r := &p.Spec.Containers[i].Resources
		r.Requests, r.Limits = canonical(m.res, r.Requests), canonical(m.res, r.Limits)
	}
}

// canonical returns the map equal to v that seen holds, adding v if none.
func canonical[M ~map[K]V, K ~string, V any](seen map[string]M, v M) M {
	if v == nil {
		return nil
	}
	keys := slices.Sorted(maps.Keys(v))
	var id strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&id, "%q=%v;", k, v[k])
	}
	if c, ok := seen[id.String()]; ok {
		return c
	}
	seen[id.String()] = v
	return v
}
