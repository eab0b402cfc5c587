package typed_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/typed"
)

// BenchmarkStalledHandlerHeap reports the live heap a stalled handler
// costs: an informer of 10k pods whose one handler blocks from its first
// call while 200k updates (20 per pod, each a new object) are sent, under
// each buffer policy and with client-go's informer (whose handler buffer
// is unbounded) on the same stream. MB is the live heap once the stream
// has been sent (or, under Block, once it stopped moving: the rest waits
// in the sender, as it would in an API server's send buffer), minus the
// heap before the informer started.
func BenchmarkStalledHandlerHeap(b *testing.B) {
	const objects, events = 10000, 200000
	items := make([]corev1.Pod, objects)
	for i := range items {
		items[i] = *benchPod(i)
	}
	for _, impl := range []string{"Unbounded", "Block", "CoalesceByKey", "client-go"} {
		b.Run(impl, func(b *testing.B) {
			var mb float64
			for range b.N {
				mb = stalledHeap(b, impl, items, events)
			}
			b.ReportMetric(mb, "MB")
		})
	}
}

func stalledHeap(b *testing.B, impl string, items []corev1.Pod, events int) float64 {
	before := heapInUse()
	lw := &streamLW{list: items, w: watch.NewFakeWithChanSize(100, false)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	defer release()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	switch impl {
	case "client-go":
		inf := clientcache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, clientcache.Indexers{})
		_, _ = inf.AddEventHandler(clientcache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { <-gate },
			UpdateFunc: func(any, any) { <-gate },
		})
		wg.Go(func() { inf.RunWithContext(ctx) })
		clientcache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	default:
		policy := map[string]typed.BufferPolicy{"Unbounded": typed.Unbounded, "Block": typed.Block, "CoalesceByKey": typed.CoalesceByKey}[impl]
		inf := benchInformer(b, lw, typed.Options[*corev1.Pod]{NoWatchList: true})
		if _, err := inf.AddHandlerWithOptions(handler.Funcs[*corev1.Pod]{
			AddFunc:    func(*corev1.Pod, bool) { <-gate },
			UpdateFunc: func(_, _ *corev1.Pod) { <-gate },
		}, typed.HandlerOptions{Buffer: policy}); err != nil {
			b.Fatal(err)
		}
		wg.Go(func() { _ = inf.Run(ctx) })
		_ = inf.WaitForSync(ctx)
	}
	var sent atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range events {
			p := items[i%len(items)].DeepCopy()
			p.ResourceVersion = fmt.Sprint(100000 + i)
			lw.w.Modify(p)
			sent.Add(1)
		}
	}()
	// Wait until everything is sent, or nothing moves for a while (Block).
	for last := int64(-1); ; {
		select {
		case <-done:
		case <-time.After(300 * time.Millisecond):
			if n := sent.Load(); n != last {
				last = n
				continue
			}
		}
		break
	}
	mb := float64(int64(heapInUse())-int64(before)) / (1 << 20)
	b.Logf("%s: %d of %d events sent while stalled, %.1f MB", impl, sent.Load(), events, mb)
	release()
	<-done
	return mb
}
