package typed_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// benchPod is a pre-decoded pod of about 4 KB, like a real one without
// managedFields.
func benchPod(i int) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace:       fmt.Sprintf("ns-%d", i%50),
		Name:            fmt.Sprintf("pod-%d", i),
		UID:             "0000-1111-2222",
		ResourceVersion: fmt.Sprint(1000 + i),
		Labels:          map[string]string{"app": fmt.Sprintf("app-%d", i%20), "tier": "web", "pod-template-hash": "abcdef"},
		Annotations:     map[string]string{"note": strings.Repeat("x", 2500)},
	}}
	p.Spec.NodeName = fmt.Sprintf("node-%d", i%100)
	for c := range 3 {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
			Name: fmt.Sprintf("c%d", c), Image: "registry.example/team/image:v1.2.3",
			Args: []string{"--port=8080", "--verbose", "--config=/etc/app/config.yaml"},
			Env:  []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
		})
	}
	return p
}

// streamLW is a client-go ListerWatcher that lists nothing and then serves
// one watch fed from a channel; it refuses streaming lists so both
// informers take the LIST path. The same type feeds ours and client-go's.
type streamLW struct {
	list []corev1.Pod
	w    *watch.FakeWatcher
}

func (s *streamLW) List(metav1.ListOptions) (runtime.Object, error) {
	return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: s.list}, nil
}

func (s *streamLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		return nil, apierrors.NewBadRequest("streaming lists are off in this benchmark")
	}
	return s.w, nil
}

// benchInformer is NewInformer over lw, failing the benchmark on error.
func benchInformer(b *testing.B, lw clientcache.ListerWatcher, opts typed.Options[*corev1.Pod]) *typed.Informer[*corev1.Pod] {
	src, err := source.FromListerWatcher[*corev1.Pod](lw)
	if err != nil {
		b.Fatal(err)
	}
	inf, err := typed.NewInformer(src, opts)
	if err != nil {
		b.Fatal(err)
	}
	return inf
}

// counter counts handler calls and signals when a target is reached.
type counter struct {
	n      atomic.Int64
	target int64
	done   chan struct{}
	once   sync.Once
}

func (c *counter) hit() {
	if c.n.Add(1) == c.target {
		c.once.Do(func() { close(c.done) })
	}
}

// runPipeline pushes events through an informer with handlers and returns
// once every handler saw every event.
func benchmarkWatch(b *testing.B, handlers int, ours bool) {
	pods := make([]*corev1.Pod, 1000)
	for i := range pods {
		pods[i] = benchPod(i)
	}
	lw := &streamLW{w: watch.NewFakeWithChanSize(1024, false)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &counter{target: int64(b.N * handlers), done: make(chan struct{})}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	if ours {
		inf := benchInformer(b, lw, typed.Options[*corev1.Pod]{NoWatchList: true})
		for range handlers {
			_, _ = inf.AddHandler(handler.Funcs[*corev1.Pod]{
				AddFunc:    func(*corev1.Pod, bool) { c.hit() },
				UpdateFunc: func(_, _ *corev1.Pod) { c.hit() },
			})
		}
		wg.Go(func() { _ = inf.Run(ctx) })
		_ = inf.WaitForSync(ctx)
	} else {
		inf := clientcache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc})
		for range handlers {
			_, _ = inf.AddEventHandler(clientcache.ResourceEventHandlerFuncs{
				AddFunc:    func(any) { c.hit() },
				UpdateFunc: func(_, _ any) { c.hit() },
			})
		}
		wg.Go(func() { inf.RunWithContext(ctx) })
		clientcache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	}
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
	<-c.done
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkWatchEvents measures watch events per second through the whole
// pipeline (watch channel -> reflector -> queue -> cache -> every handler)
// for this library and client-go's SharedIndexInformer, fed the same
// pre-decoded ~4 KB pods by the same ListerWatcher.
func BenchmarkWatchEvents(b *testing.B) {
	for _, handlers := range []int{1, 10} {
		for _, impl := range []string{"typed", "client-go"} {
			b.Run(fmt.Sprintf("handlers=%d/%s", handlers, impl), func(b *testing.B) {
				benchmarkWatch(b, handlers, impl == "typed")
			})
		}
	}
}

// BenchmarkInitialSync measures the time and allocations from Run to a
// synced cache (and handler) over a list of 10k ~4 KB pods.
func BenchmarkInitialSync(b *testing.B) {
	const n = 10000
	items := make([]corev1.Pod, n)
	for i := range items {
		items[i] = *benchPod(i)
	}
	for _, impl := range []string{"typed", "client-go"} {
		b.Run(impl, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				lw := &streamLW{list: items, w: watch.NewFakeWithChanSize(1, false)}
				ctx, cancel := context.WithCancel(context.Background())
				c := &counter{target: n, done: make(chan struct{})}
				var wg sync.WaitGroup
				if impl == "typed" {
					inf := benchInformer(b, lw, typed.Options[*corev1.Pod]{NoWatchList: true})
					_, _ = inf.AddHandler(handler.Funcs[*corev1.Pod]{AddFunc: func(*corev1.Pod, bool) { c.hit() }})
					wg.Go(func() { _ = inf.Run(ctx) })
				} else {
					inf := clientcache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc})
					_, _ = inf.AddEventHandler(clientcache.ResourceEventHandlerFuncs{AddFunc: func(any) { c.hit() }})
					wg.Go(func() { inf.RunWithContext(ctx) })
				}
				<-c.done
				cancel()
				wg.Wait()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "us/pod")
		})
	}
}
