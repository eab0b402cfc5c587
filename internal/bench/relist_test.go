package bench_test

import (
	"context"
	"flag"
	"fmt"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/internal/bench"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

var relistPods = flag.Int("relist.pods", 100000, "BenchmarkRelistPeakHeap: pods in the relist")

// peakSampler samples the live heap as the last GC marked it every 2ms,
// with GOGC=1 so that the GC marks often.
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

// BenchmarkRelistPeakHeap reports the peak live heap while an informer
// relists N unchanged pods and one new one, divided by the steady heap
// its cache holds: 1 means the relist needed nothing beyond the cache, 2
// a second full copy. The fake server's history is compacted past the
// informer's resourceVersion and its watch cut, so the informer must list
// again, as after a 410; mode=stream is a streaming list, mode=list a
// paged LIST. The fake's own copy is in the baseline.
func BenchmarkRelistPeakHeap(b *testing.B) {
	n := *relistPods
	for _, mode := range []string{"stream", "list"} {
		// The floor: the same stream, or the same LIST in the same
		// pages, read and dropped beside a synced informer: what the
		// source's own copies hold.
		for _, impl := range sides("ours", "client-go", "floor") {
			b.Run(fmt.Sprintf("pods=%dk/mode=%s/impl=%s", n/1000, mode, impl), func(b *testing.B) {
				var ratio float64
				for range b.N {
					ratio = relistPeak(b, n, mode == "stream", impl)
				}
				b.ReportMetric(ratio, "peak/steady")
			})
		}
	}
}

func relistPeak(b *testing.B, n int, stream bool, impl string) float64 {
	pods := bench.Pods(n, bench.PodOptions{})
	for _, p := range pods {
		p.ResourceVersion = ""
	}
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: pods, Window: 10, NoWatchList: !stream})
	pods = nil
	base := liveHeap()
	var updates atomic.Int64
	var r *running
	if impl == "ours" || impl == "floor" {
		ctx, cancel := context.WithCancel(context.Background())
		r = &running{cancel: cancel}
		inf, err := typed.NewInformer(fake, typed.Options[*corev1.Pod]{NoWatchList: !stream})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := inf.AddHandler(handlerFuncs(func() { updates.Add(1) })); err != nil {
			b.Fatal(err)
		}
		r.wg.Go(func() { _ = inf.Run(ctx) })
		r.synced = func(ctx context.Context) bool { return inf.WaitForSync(ctx) == nil }
		r.len = inf.Store().Len
	} else {
		r = start(b, impl, fake.ListerWatcher(), 1, func() { updates.Add(1) }, typed.Options[*corev1.Pod]{})
	}
	defer r.stop()
	if !r.synced(context.Background()) {
		b.Fatal("not synced")
	}
	for updates.Load() < int64(n) {
		time.Sleep(time.Millisecond)
	}
	steady := liveHeap()
	s := startPeak()
	if impl == "floor" {
		if stream {
			drainStream(b, fake)
		} else {
			drainPages(b, fake, n)
		}
		peak := s.end()
		return float64(int64(peak)-int64(base)) / float64(int64(steady)-int64(base))
	}
	// One change no watch sees, then compaction: the informer's
	// resourceVersion is gone and it must list again.
	fake.DropEvents(1)
	if _, err := fake.Create(bench.Pod(n, bench.PodOptions{})); err != nil {
		b.Fatal(err)
	}
	fake.Compact()
	fake.CutWatches()
	for updates.Load() < int64(2*n+1) {
		time.Sleep(time.Millisecond)
	}
	peak := s.end()
	if got := r.len(); got != n+1 {
		b.Fatalf("cached %d pods, want %d", got, n+1)
	}
	b.ReportMetric(float64(int64(steady)-int64(base))/float64(n), "B/pod-steady")
	return float64(int64(peak)-int64(base)) / float64(int64(steady)-int64(base))
}

// drainPages reads a LIST of fake in pages of the informer's default size,
// as its relist does, and drops every object.
func drainPages(b *testing.B, fake *sourcetest.Fake[*corev1.Pod], n int) {
	opts := metav1.ListOptions{ResourceVersion: fake.ResourceVersion(), Limit: 500}
	for got := 0; ; {
		l, err := fake.List(context.Background(), opts)
		if err != nil {
			b.Fatal(err)
		}
		got += len(l.Items)
		if l.Continue == "" {
			if got != n {
				b.Fatalf("listed %d pods, want %d", got, n)
			}
			return
		}
		opts = metav1.ListOptions{Limit: 500, Continue: l.Continue}
	}
}

// drainStream reads a streaming list of fake to its end bookmark and drops
// every object.
func drainStream(b *testing.B, fake *sourcetest.Fake[*corev1.Pod]) {
	ctx := context.Background()
	send := true
	w, err := fake.Watch(ctx, metav1.ListOptions{SendInitialEvents: &send, AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if ev.Type == watch.Bookmark && ev.Object.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
			return
		}
	}
}
