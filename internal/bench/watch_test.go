package bench_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/internal/bench"
	"github.com/typedinformer/informer/typed"
)

// BenchmarkWatch measures watch events per second through the whole
// pipeline (watch channel -> reflector -> queue -> cache -> every handler),
// fed the same pre-decoded pods by the same ListerWatcher. One op is one
// event; allocs/op are allocations per event. Each update brings another
// object than the one cached, as a decoded watch event does: two sets of
// equal pods take turns. neighbour=cpu runs a CPU-bound process beside
// it, one busy thread per core, as controllers share their nodes: the
// handlers then fall behind the events, and their buffers hold the
// backlog.
func BenchmarkWatch(b *testing.B) {
	sets := [2][]*corev1.Pod{bench.Pods(1000, bench.PodOptions{}), bench.Pods(1000, bench.PodOptions{})}
	pods := sets[0]
	for _, row := range []struct {
		handlers  int
		neighbour bool
	}{{1, false}, {10, false}, {10, true}} {
		name := fmt.Sprintf("handlers=%d", row.handlers)
		if row.neighbour {
			name += "/neighbour=cpu"
		}
		handlers := row.handlers
		for _, impl := range sides(impls...) {
			b.Run(name+"/impl="+impl, func(b *testing.B) {
				if row.neighbour {
					defer startNeighbour(b)()
				}
				lw := newMemLW(nil, false, 1024)
				c := newCounter(b.N * handlers)
				r := start(b, impl, lw, handlers, c.hit, typed.Options[*corev1.Pod]{NoWatchList: true})
				defer r.stop()
				if !r.synced(context.Background()) {
					b.Fatal("not synced")
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					p := sets[i/len(pods)%2][i%len(pods)]
					if i < len(pods) {
						lw.events.Add(p)
					} else {
						lw.events.Modify(p)
					}
				}
				<-c.done
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}
