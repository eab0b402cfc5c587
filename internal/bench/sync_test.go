package bench_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/internal/bench"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// BenchmarkInitialSync measures the time and allocations from Run until
// a handler has seen every pod of the initial list, for 10k and 100k pods,
// through a paged-less LIST and through a streaming list
// (sendInitialEvents), both sides reading the same pre-built pods from the
// same ListerWatcher. The reported ns/pod and allocs/pod divide one op
// (one whole sync) by the pods. impl=floor is our source alone, its list
// read and dropped: the copy of each item out of the list (client-go's
// reflector makes the same one), or the events read from the watch.
func BenchmarkInitialSync(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		var pods []*corev1.Pod // built when a benchmark of n needs them
		for _, mode := range []string{"list", "stream"} {
			for _, impl := range sides("ours", "client-go", "floor") {
				b.Run(fmt.Sprintf("pods=%dk/mode=%s/impl=%s", n/1000, mode, impl), func(b *testing.B) {
					if len(pods) != n {
						pods = bench.Pods(n, bench.PodOptions{})
					}
					base := newMemLW(pods, mode == "stream", 1)
					b.ReportAllocs()
					b.ResetTimer()
					var allocs uint64
					for range b.N {
						lw := base.fresh()
						before := mallocs()
						if impl == "floor" {
							readSource(b, lw, mode == "stream", n)
							allocs += mallocs() - before
							continue
						}
						c := newCounter(n)
						r := start(b, impl, lw, 1, c.hit, typed.Options[*corev1.Pod]{NoWatchList: mode == "list"})
						<-c.done
						allocs += mallocs() - before
						r.stop()
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/pod")
					b.ReportMetric(float64(allocs)/float64(b.N*n), "allocs/pod")
				})
			}
		}
	}
}

// readSource reads n pods from lw through our source, by LIST or by
// streaming list, and drops them.
func readSource(b *testing.B, lw *memLW, stream bool, n int) {
	b.Helper()
	src, err := source.FromListerWatcher[*corev1.Pod](lw)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if !stream {
		l, err := src.List(ctx, metav1.ListOptions{})
		if err != nil || len(l.Items) != n {
			b.Fatalf("listed %d pods (%v), want %d", len(l.Items), err, n)
		}
		return
	}
	w, err := src.Watch(ctx, metav1.ListOptions{SendInitialEvents: new(true), AllowWatchBookmarks: true})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	for got := 0; ; {
		ev, err := w.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if ev.Type == watch.Bookmark {
			if got != n {
				b.Fatalf("read %d pods before the end bookmark, want %d", got, n)
			}
			return
		}
		got++
	}
}
