package bench_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/internal/bench"
	"github.com/typedinformer/informer/typed"
)

// BenchmarkHeapPerPodIntern is BenchmarkHeapPerPod for our side only,
// with shared strings on (the default) and off (typed.Options.NoIntern),
// in the same run: the difference is what sharing saves per cached pod.
func BenchmarkHeapPerPodIntern(b *testing.B) {
	const n = 5000
	list, err := bench.JSONList("1", bench.Pods(n, bench.PodOptions{ManagedFields: true}))
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"on", "off"} {
		b.Run("intern="+mode, func(b *testing.B) {
			heapPerPod(b, "ours", list, n, settings{ours: typed.Options[*corev1.Pod]{NoIntern: mode == "off"}})
		})
	}
}

// BenchmarkWireIntern is BenchmarkWire for our side with shared strings
// on (the default) and off. One op is one event.
func BenchmarkWireIntern(b *testing.B) {
	for _, format := range []string{"json", "protobuf"} {
		data, contentType := wireStream(b, format)
		for _, mode := range []string{"on", "off"} {
			b.Run("format="+format+"/intern="+mode, func(b *testing.B) {
				replay := &bench.Replay{List: emptyList, Watch: data, WatchType: contentType, Repeat: (b.N + streamEvents - 1) / streamEvents}
				c := newCounter(b.N)
				b.ReportAllocs()
				b.ResetTimer()
				r := startWire(b, "ours", replay, format == "protobuf", 0, c.hit, typed.Options[*corev1.Pod]{NoIntern: mode == "off"})
				<-c.done
				b.StopTimer()
				r.stop()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}
