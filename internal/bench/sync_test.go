package bench_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/internal/bench"
	"github.com/typedinformer/informer/typed"
)

// BenchmarkInitialSync measures the time and allocations from Run until
// a handler has seen every pod of the initial list, for 10k and 100k pods,
// through a paged-less LIST and through a streaming list
// (sendInitialEvents), both sides reading the same pre-built pods from the
// same ListerWatcher. The reported ns/pod and allocs/pod divide one op
// (one whole sync) by the pods.
func BenchmarkInitialSync(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		var pods []*corev1.Pod // built when a benchmark of n needs them
		for _, mode := range []string{"list", "stream"} {
			for _, impl := range impls {
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
						c := newCounter(n)
						before := mallocs()
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
