package typed_test

import (
	"context"
	"flag"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// withManagedFields adds managedFields like those of a controller-created
// pod as the API server returns it (an entry for the creating controller and
// one for the kubelet, ~2.8 KB), about a quarter of the object.
func withManagedFields(p *corev1.Pod) *corev1.Pod {
	now := metav1.NewTime(time.Unix(1700000000, 0))
	raw := `{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{},"f:tier":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"0000-1111-2222\"}":{}}},` +
		`"f:spec":{"f:containers":{"k:{\"name\":\"c0\"}":{".":{},"f:args":{},"f:env":{".":{},"k:{\"name\":\"A\"}":{".":{},"f:name":{},"f:value":{}},"k:{\"name\":\"B\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}},` +
		`"k:{\"name\":\"c1\"}":{".":{},"f:args":{},"f:image":{},"f:name":{}},"k:{\"name\":\"c2\"}":{".":{},"f:args":{},"f:image":{},"f:name":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}},` +
		`"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{},"f:startTime":{}}}`
	for _, m := range []string{"kube-controller-manager", "kubelet"} {
		p.ManagedFields = append(p.ManagedFields, metav1.ManagedFieldsEntry{
			Manager: m, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now,
			FieldsType: "FieldsV1",
			FieldsV1:   &metav1.FieldsV1{Raw: []byte(raw)},
		})
	}
	return p
}

func heapInUse() uint64 {
	var m runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkHeapPerPod reports the heap an informer holds per cached pod,
// for objects with managedFields as the API server sends them, for this
// library (managedFields dropped by default, and kept) and client-go. The
// list objects are built fresh for each informer and only the informer
// keeps them (both informers copy list items out of the list), so the
// figure is the object plus the informer's overhead.
func BenchmarkHeapPerPod(b *testing.B) {
	const n = 5000
	for _, impl := range []string{"typed", "typed-keep-managedFields", "client-go"} {
		b.Run(impl, func(b *testing.B) {
			var perPod float64
			for range b.N {
				before := heapInUse()
				items := make([]corev1.Pod, n)
				for i := range items {
					items[i] = *withManagedFields(benchPod(i))
				}
				lw := &streamLW{list: items, w: watch.NewFakeWithChanSize(1, false)}
				ctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				var count func() int
				switch impl {
				case "client-go":
					inf := clientcache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc})
					wg.Go(func() { inf.RunWithContext(ctx) })
					clientcache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
					count = func() int { return len(inf.GetStore().ListKeys()) }
				default:
					inf := benchInformer(b, lw, typed.Options[*corev1.Pod]{
						NoWatchList: true, KeepManagedFields: impl == "typed-keep-managedFields",
					})
					wg.Go(func() { _ = inf.Run(ctx) })
					_ = inf.WaitForSync(ctx)
					count = inf.Store().Len
				}
				lw.list, items = nil, nil // only the informer holds the pods now
				after := heapInUse()
				if c := count(); c != n {
					b.Fatalf("cached %d pods, want %d", c, n)
				}
				perPod = float64(int64(after)-int64(before)) / n
				cancel()
				wg.Wait()
			}
			b.ReportMetric(perPod, "B/pod")
		})
	}
}

var relistPods = flag.Int("relist.pods", 100000, "BenchmarkRelistPeakHeap: objects in the relist")

// peakSampler samples the live heap (as the last GC marked it) every 2ms
// until stopped, with the GC made eager (GOGC=1) so that it marks often.
type peakSampler struct {
	stop chan struct{}
	done chan uint64
}

func startPeak() *peakSampler {
	s := &peakSampler{stop: make(chan struct{}), done: make(chan uint64, 1)}
	old := debug.SetGCPercent(1)
	go func() {
		defer debug.SetGCPercent(old)
		var peak uint64
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-s.stop:
				s.done <- peak
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *peakSampler) end() uint64 { close(s.stop); return <-s.done }

// BenchmarkRelistPeakHeap reports the heap an informer needs while it
// applies a relist of N unchanged pods and one new one (the fake server's
// watch history is compacted past the informer's resourceVersion and the
// watch cut, so the informer must list again), as the
// peak above the heap before the relist, divided by the steady heap the
// cache holds: 0 means the relist needed nothing beyond the cache; 1 means
// a second full copy. Streaming lists (the default against servers that
// have them) and paged LIST, for this library and client-go, on the same
// fake. The fake's own copy of the objects is in the baseline. The live
// heap is sampled every 2ms with GOGC=1 (runtime/metrics
// /gc/heap/live:bytes), so garbage not yet collected does not count.
func BenchmarkRelistPeakHeap(b *testing.B) {
	n := *relistPods
	for _, mode := range []string{"stream", "list"} {
		for _, impl := range []string{"typed", "client-go"} {
			b.Run(mode+"/"+impl, func(b *testing.B) {
				var extra float64
				for range b.N {
					pods := make([]*corev1.Pod, n)
					for i := range pods {
						pods[i] = benchPod(i)
						pods[i].ResourceVersion = ""
					}
					fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: pods, Window: 10, NoWatchList: mode == "list"})
					pods = nil
					base := heapInUse()
					ctx, cancel := context.WithCancel(context.Background())
					var wg sync.WaitGroup
					var relists func() int
					var count func() int
					switch impl {
					case "client-go":
						inf := clientcache.NewSharedIndexInformer(fake.ListerWatcher(), &corev1.Pod{}, 0, clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc})
						var adds atomic.Int64
						_, _ = inf.AddEventHandler(clientcache.ResourceEventHandlerFuncs{UpdateFunc: func(_, _ any) { adds.Add(1) }})
						wg.Go(func() { inf.RunWithContext(ctx) })
						clientcache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
						relists = func() int { return int(adds.Load()) / n }
						count = func() int { return len(inf.GetStore().ListKeys()) }
					default:
						inf, err := typed.NewInformer(fake, typed.Options[*corev1.Pod]{NoWatchList: mode == "list"})
						if err != nil {
							b.Fatal(err)
						}
						var updates atomic.Int64
						_, _ = inf.AddHandler(handler.Funcs[*corev1.Pod]{UpdateFunc: func(_, _ *corev1.Pod) { updates.Add(1) }})
						wg.Go(func() { _ = inf.Run(ctx) })
						_ = inf.WaitForSync(ctx)
						relists = func() int { return int(updates.Load()) / n }
						count = inf.Store().Len
					}
					steady := heapInUse()
					s := startPeak()
					t0 := time.Now()
					// One change no watch sees, then compaction: the
					// informer's resourceVersion is gone and it must list.
					fake.DropEvents(1)
					if _, err := fake.Create(benchPod(n)); err != nil {
						b.Fatal(err)
					}
					fake.Compact()
					fake.CutWatches()
					for relists() < 1 {
						time.Sleep(time.Millisecond)
					}
					took := time.Since(t0)
					peak := s.end()
					b.ReportMetric(float64(took.Milliseconds()), "relist-ms")
					if c := count(); c != n+1 {
						b.Fatalf("cached %d pods, want %d", c, n+1)
					}
					extra = float64(int64(peak)-int64(steady)) / float64(int64(steady)-int64(base))
					b.ReportMetric(float64(int64(steady)-int64(base))/float64(n), "B/pod-steady")
					cancel()
					wg.Wait()
				}
				b.ReportMetric(1+extra, "peak/steady")
			})
		}
	}
}
