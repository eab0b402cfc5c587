package typed_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/source"
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
					inf := typed.NewInformer(source.FromListerWatcher[*corev1.Pod](lw), typed.Options[*corev1.Pod]{
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
