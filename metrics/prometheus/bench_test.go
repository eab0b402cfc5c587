package prometheus_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/metrics"
	promadapter "github.com/typedinformer/informer/metrics/prometheus"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// watchLW lists nothing and serves one watch fed by the benchmark.
type watchLW struct{ w *watch.FakeWatcher }

func (s *watchLW) List(metav1.ListOptions) (runtime.Object, error) {
	return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
}

func (s *watchLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		return nil, apierrors.NewBadRequest("no streaming lists here")
	}
	return s.w, nil
}

// BenchmarkWatchEventsMetrics measures watch events through an informer
// with one handler, without metrics, with this adapter, and with this
// adapter while the registry is gathered in a loop (the gathering's
// allocations count too): what the metrics cost per event.
func BenchmarkWatchEventsMetrics(b *testing.B) {
	pods := make([]*corev1.Pod, 1000)
	for i := range pods {
		pods[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: fmt.Sprintf("pod-%d", i), UID: "u", ResourceVersion: fmt.Sprint(1000 + i),
		}}
	}
	for _, name := range []string{"nil", "prometheus", "prometheus+gather"} {
		b.Run(name, func(b *testing.B) {
			var m metrics.Metrics
			reg := prometheus.NewRegistry()
			if name != "nil" {
				pm, err := promadapter.New(reg, promadapter.Options{})
				if err != nil {
					b.Fatal(err)
				}
				m = pm
			}
			lw := &watchLW{w: watch.NewFakeWithChanSize(1024, false)}
			src, err := source.FromListerWatcher[*corev1.Pod](lw)
			if err != nil {
				b.Fatal(err)
			}
			inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{Name: "bench", NoWatchList: true, Metrics: m})
			if err != nil {
				b.Fatal(err)
			}
			var seen atomic.Int64
			target := int64(b.N)
			done := make(chan struct{})
			hit := func() {
				if seen.Add(1) == target {
					close(done)
				}
			}
			if _, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{
				AddFunc:    func(*corev1.Pod, bool) { hit() },
				UpdateFunc: func(_, _ *corev1.Pod) { hit() },
			}); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer wg.Wait()
			defer cancel()
			wg.Go(func() { _ = inf.Run(ctx) })
			if err := inf.WaitForSync(ctx); err != nil {
				b.Fatal(err)
			}
			gathered := make(chan struct{})
			wg.Go(func() { // a scraper, gathering as fast as it can
				defer close(gathered)
				for name == "prometheus+gather" && ctx.Err() == nil {
					if _, err := reg.Gather(); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				p := pods[i%len(pods)]
				if i < len(pods) {
					lw.w.Add(p)
				} else {
					lw.w.Modify(p)
				}
			}
			<-done
			b.StopTimer()
			cancel()
			<-gathered
		})
	}
}
