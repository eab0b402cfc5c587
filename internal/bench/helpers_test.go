package bench_test

import (
	"context"
	"flag"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// The two sides of every benchmark, named in the sub-benchmark as
// impl=ours and impl=client-go.
var impls = []string{"ours", "client-go"}

// implFlag picks one side, so that a round of hack/bench.sh runs each side
// in a process of its own, the two in alternating order.
var implFlag = flag.String("bench.impl", "", "run only this side's sub-benchmarks: ours (with the floor lines and the benchmarks of no side) or client-go; empty runs both")

// runs reports whether the sub-benchmark of impl runs under -bench.impl:
// "" is a benchmark of no side, "floor" one of our source alone.
func runs(impl string) bool {
	switch *implFlag {
	case "":
		return true
	case "ours":
		return impl != "client-go"
	}
	return impl == *implFlag
}

// sides is names without the sides -bench.impl leaves out.
func sides(names ...string) []string {
	var out []string
	for _, n := range names {
		if runs(n) {
			out = append(out, n)
		}
	}
	return out
}

// memLW is a client-go ListerWatcher over pre-built pods, feeding both
// sides the same objects. In list mode it lists them (the same list every
// time: both sides copy the items out) and refuses streaming lists; in
// stream mode it streams them, then the initial-events-end bookmark, on a
// watch that then carries live events.
type memLW struct {
	list   *corev1.PodList
	stream bool
	live   int

	mu     sync.Mutex
	events *watch.FakeWatcher // the live events, once a watch is open in stream mode
}

func newMemLW(pods []*corev1.Pod, stream bool, live int) *memLW {
	l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: make([]corev1.Pod, len(pods))}
	for i, p := range pods {
		l.Items[i] = *p
	}
	m := &memLW{list: l, stream: stream, live: live}
	if !stream {
		m.events = watch.NewFakeWithChanSize(live, false)
	}
	return m
}

func (m *memLW) List(metav1.ListOptions) (runtime.Object, error) { return m.list, nil }

func (m *memLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case initial && !m.stream:
		return nil, apierrors.NewBadRequest("streaming lists are off in this benchmark")
	case !initial:
		return m.events, nil
	}
	w := watch.NewFakeWithChanSize(len(m.list.Items)+1+m.live, false)
	for i := range m.list.Items {
		w.Add(&m.list.Items[i])
	}
	end := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "1",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	w.Action(watch.Bookmark, end)
	m.events = w
	return w, nil
}

// fresh returns a lister-watcher over the same list with no watch open.
func (m *memLW) fresh() *memLW {
	f := &memLW{list: m.list, stream: m.stream, live: m.live}
	if !m.stream {
		f.events = watch.NewFakeWithChanSize(m.live, false)
	}
	return f
}

// IsWatchListSemanticsUnSupported tells client-go's reflector which mode
// to use.
func (m *memLW) IsWatchListSemanticsUnSupported() bool { return !m.stream }

// counter counts handler calls and closes done at target.
type counter struct {
	n      atomic.Int64
	target int64
	done   chan struct{}
}

func newCounter(target int) *counter {
	c := &counter{target: int64(target), done: make(chan struct{})}
	if target == 0 {
		close(c.done)
	}
	return c
}

func (c *counter) hit() {
	if c.n.Add(1) == c.target {
		close(c.done)
	}
}

// running is an informer of either side, started.
type running struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	synced func(ctx context.Context) bool
	len    func() int
}

func (r *running) stop() { r.cancel(); r.wg.Wait() }

// settings configure a benchmark's two sides beyond their defaults.
type settings struct {
	// ours are our informer's options.
	ours typed.Options[*corev1.Pod]
	// keepManagedFields makes our REST source keep managedFields
	// (source.RESTOptions.KeepManagedFields), as client-go does unless
	// told otherwise.
	keepManagedFields bool
	// dropManagedFields gives client-go's informer a transform that
	// clears managedFields, as its users configure it to save memory
	// (controller-runtime's cache offers the same transform); ours drops
	// them by default.
	dropManagedFields bool
}

// dropManagedFields is the transform client-go's users set to keep
// managedFields out of the cache.
func dropManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}

// start runs an informer of impl over lw with handlers handlers, each
// calling hit for every add and update.
func start(b *testing.B, impl string, lw clientcache.ListerWatcher, handlers int, hit func(), opts typed.Options[*corev1.Pod]) *running {
	return startWith(b, impl, lw, handlers, hit, settings{ours: opts})
}

// startWith is start with settings for both sides.
func startWith(b *testing.B, impl string, lw clientcache.ListerWatcher, handlers int, hit func(), set settings) *running {
	b.Helper()
	if impl == "ours" {
		src, err := source.FromListerWatcher[*corev1.Pod](lw)
		if err != nil {
			b.Fatal(err)
		}
		r, _ := runOurs(b, src, set.ours, handlers, hit)
		return r
	}
	r, _ := runClientGo(b, lw, set.dropManagedFields, handlers, hit)
	return r
}

// runClientGo runs client-go's SharedIndexInformer (namespace index) over
// lw, with the managedFields-dropping transform if dropMF, and handlers
// handlers, each calling hit for every add and update.
func runClientGo(b *testing.B, lw clientcache.ListerWatcher, dropMF bool, handlers int, hit func()) (*running, clientcache.SharedIndexInformer) {
	b.Helper()
	inf := clientcache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0,
		clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc})
	if dropMF {
		if err := inf.SetTransform(dropManagedFields); err != nil {
			b.Fatal(err)
		}
	}
	for range handlers {
		if _, err := inf.AddEventHandler(clientcache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { hit() },
			UpdateFunc: func(_, _ any) { hit() },
		}); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel}
	r.wg.Go(func() { inf.RunWithContext(ctx) })
	r.synced = func(ctx context.Context) bool { return clientcache.WaitForCacheSync(ctx.Done(), inf.HasSynced) }
	r.len = func() int { return len(inf.GetStore().ListKeys()) }
	return r, inf
}

// runOurs runs our informer over src with opts, and handlers handlers,
// each calling hit for every add and update.
func runOurs(b *testing.B, src source.Source[*corev1.Pod], opts typed.Options[*corev1.Pod], handlers int, hit func()) (*running, *typed.Informer[*corev1.Pod]) {
	b.Helper()
	inf, err := typed.NewInformer(src, opts)
	if err != nil {
		b.Fatal(err)
	}
	for range handlers {
		if _, err := inf.AddHandler(handlerFuncs(hit)); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel}
	r.wg.Go(func() { _ = inf.Run(ctx) })
	r.synced = func(ctx context.Context) bool { return inf.WaitForSync(ctx) == nil }
	r.len = inf.Store().Len
	return r, inf
}

// mallocs is the process's allocation count so far.
func mallocs() uint64 {
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return m.Mallocs
}

// handlerFuncs calls hit for every add and update.
func handlerFuncs(hit func()) handler.Funcs[*corev1.Pod] {
	return handler.Funcs[*corev1.Pod]{
		AddFunc:    func(*corev1.Pod, bool) { hit() },
		UpdateFunc: func(_, _ *corev1.Pod) { hit() },
	}
}

// runSide runs f as the sub-benchmark impl=impl (under prefix, if
// given), if -bench.impl lets it.
func runSide(b *testing.B, impl string, f func(b *testing.B), prefix ...string) {
	if runs(impl) {
		b.Run(strings.Join(append(prefix, "impl="+impl), "/"), f)
	}
}
