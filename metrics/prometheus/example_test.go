package prometheus_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"

	promadapter "github.com/typedinformer/informer/metrics/prometheus"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// printMetrics prints the samples of reg named in names, one a line.
func printMetrics(reg *prometheus.Registry, names ...string) {
	mfs, err := reg.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, mf := range mfs {
		for _, name := range names {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				var ls []string
				for _, l := range m.GetLabel() {
					ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
				}
				v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
				fmt.Printf("%s{%s} %g\n", name, strings.Join(ls, ","), v)
			}
		}
	}
}

// An informer whose metrics go to a Prometheus registry: serve the
// registry with promhttp.HandlerFor on a private port.
func ExampleNew() {
	reg := prometheus.NewRegistry()
	m, err := promadapter.New(reg, promadapter.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{
		Resource: schema.GroupResource{Resource: "pods"},
		Objects: []*corev1.Pod{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-2"}},
		},
	})
	inf, err := typed.NewInformer(fake, typed.Options[*corev1.Pod]{Metrics: m})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	if err := inf.WaitForSync(ctx); err != nil {
		fmt.Println(err)
	}
	printMetrics(reg, "informer_synced", "informer_lists_total", "informer_watch_lists_total", "informer_last_sync_error")
	cancel()
	if err := <-done; err != nil {
		fmt.Println(err)
	}
	// Output:
	// informer_last_sync_error{group="",name="pods",resource="pods",version=""} 0
	// informer_lists_total{group="",name="pods",resource="pods",version=""} 0
	// informer_synced{group="",name="pods",resource="pods",version=""} 1
	// informer_watch_lists_total{group="",name="pods",resource="pods",version=""} 1
}

// A client-go workqueue exporting its workqueue_* metrics through the same
// registry. Only a queue with a name has metrics.
func ExampleMetrics_WorkqueueProvider() {
	reg := prometheus.NewRegistry()
	m, err := promadapter.New(reg, promadapter.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "pods", MetricsProvider: m.WorkqueueProvider()})
	defer q.ShutDown()
	q.Add("shop/web-1")
	q.Add("shop/web-2")
	printMetrics(reg, "workqueue_adds_total", "workqueue_depth")
	// Output:
	// workqueue_adds_total{name="pods"} 2
	// workqueue_depth{name="pods"} 2
}
