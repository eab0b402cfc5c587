package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/typedinformer/informer/internal/bench"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// BenchmarkHeapPerPodProjection reports the heap our informer holds per
// cached pod when it caches a projection (bench.PodSummary: metadata,
// nodeName, phase, conditions) of the same 5,000 server pods as
// BenchmarkHeapPerPod, decoded from the same JSON list, managedFields
// dropped; with ann=drop, kubectl's last-applied annotation (2 KB a pod
// here) dropped as well. It has no client-go side: client-go cannot
// decode less than the whole object.
func BenchmarkHeapPerPodProjection(b *testing.B) {
	if !runs("ours") {
		b.Skip("ours only")
	}
	const n = 5000
	for _, layout := range []bench.Labels{bench.LabelsDeployment, bench.LabelsStatefulSet} {
		for _, ann := range []string{"keep", "drop"} {
			pods := bench.Pods(n, bench.PodOptions{ManagedFields: true, Labels: layout, LastApplied: true})
			list, err := bench.JSONList("1", pods)
			if err != nil {
				b.Fatal(err)
			}
			b.Run("labels="+layout.String()+"/ann="+ann+"/type=summary", func(b *testing.B) {
				opts := source.RESTOptions{Mapper: bench.Mapper()}
				if ann == "drop" {
					opts.DropAnnotations = []string{"kubectl.kubernetes.io/last-applied-configuration"}
				}
				var perPod float64
				for range b.N {
					replay := &bench.Replay{List: list, WatchType: "application/json"}
					src, err := source.FromConfig[*bench.PodSummary](replay.Config(false), opts)
					if err != nil {
						b.Fatal(err)
					}
					inf, err := typed.NewInformer(src, typed.Options[*bench.PodSummary]{NoWatchList: true})
					if err != nil {
						b.Fatal(err)
					}
					before := liveHeap()
					ctx, cancel := context.WithCancel(context.Background())
					done := make(chan error, 1)
					go func() { done <- inf.Run(ctx) }()
					wctx, wcancel := context.WithTimeout(ctx, time.Minute)
					err = inf.WaitForSync(wctx)
					wcancel()
					if err != nil || inf.Store().Len() != n {
						b.Fatalf("synced %d of %d: %v", inf.Store().Len(), n, err)
					}
					after := liveHeap()
					perPod = float64(int64(after)-int64(before)) / n
					b.ReportMetric(float64(inf.Status().Size.BytesPerObject), "est-B/pod")
					cancel()
					<-done
				}
				b.ReportMetric(perPod, "B/pod")
			})
		}
	}
}
