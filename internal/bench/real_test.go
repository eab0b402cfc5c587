package bench_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/bench"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

var (
	realKubeconfig = flag.String("bench.kubeconfig", "", "BenchmarkRealServer*: kubeconfig of the API server to measure against, seeded with the fixture's pods (hack/bench-real.sh starts and seeds one); without it they are skipped")
	realEtcd       = flag.String("bench.etcd", "", "BenchmarkRealServerRelist: client URL of that server's etcd, compacted to make the informers' resourceVersion expire; without it the benchmark is skipped")
)

// realServer is the API server of -bench.kubeconfig.
type realServer struct {
	cfg   *rest.Config
	admin kubernetes.Interface // for the benchmark's own writes, never an informer's
	pods  int                  // the pods it holds, in every namespace
	pod   cache.Key            // one of them, which the relist benchmark changes
	touch atomic.Int64         // distinguishes the writes of one process
}

// realServerOnce reads the kubeconfig and counts the server's pods once
// per process.
var realServerOnce = sync.OnceValues(func() (*realServer, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", *realKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("read -bench.kubeconfig: %w", err)
	}
	// Neither side is throttled by the client's rate limiter, which
	// would otherwise space the pages of a LIST (5 requests per second
	// by default).
	cfg.QPS, cfg.Burst = 1000, 2000
	admin, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("clientset: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := admin.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("count the server's pods: %w", err)
	}
	n := len(l.Items)
	if l.RemainingItemCount != nil {
		n += int(*l.RemainingItemCount)
	}
	if n == 0 {
		return nil, fmt.Errorf("the server at %s holds no pods: seed it first (go run ./internal/bench/cmd/seedbench)", cfg.Host)
	}
	return &realServer{cfg: cfg, admin: admin, pods: n, pod: cache.KeyOf(&l.Items[0])}, nil
})

// podsLabel is the server's pod count as a benchmark name shows it: 10k,
// or 2500 when it is not whole thousands.
func (s *realServer) podsLabel() string {
	if s.pods%1000 == 0 {
		return fmt.Sprintf("%dk", s.pods/1000)
	}
	return fmt.Sprint(s.pods)
}

// realServerOf returns the server of -bench.kubeconfig, or skips b
// without a kubeconfig (a skipped benchmark prints no result line).
func realServerOf(b *testing.B) *realServer {
	b.Helper()
	if *realKubeconfig == "" {
		b.Skip("no -bench.kubeconfig: the real-server benchmarks need a seeded API server (make bench-real)")
	}
	srv, err := realServerOnce()
	if err != nil {
		b.Fatal(err)
	}
	return srv
}

// config is a client config for one informer, protobuf or JSON on the
// wire, with gate, if not nil, between the client and the server. The
// content type is set either way: client-go's typed clients ask for
// protobuf when it is not (ours asks for what RESTOptions.Protobuf says).
func (s *realServer) config(protobuf bool, gate *watchGate) *rest.Config {
	cfg := rest.CopyConfig(s.cfg)
	cfg.ContentType = runtime.ContentTypeJSON
	if protobuf {
		cfg.ContentType = runtime.ContentTypeProtobuf
		cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	}
	if gate != nil {
		cfg.Wrap(gate.wrap)
	}
	return cfg
}

// realRunning is an informer of either side against the real server.
type realRunning struct {
	*running
	// version is the resourceVersion of the cached object under key, ""
	// if none is cached.
	version func(key cache.Key) string
}

// startReal runs an informer of impl over every pod of the server behind
// cfg, by streaming list or by LIST, with one handler calling hit for
// every add and update. Ours is a REST source (source.FromConfig) and
// typed.NewInformer; client-go is a SharedIndexInformer (namespace
// index) over a ListWatch of the typed clientset, as its informer
// factory builds it, with the transform that drops managedFields (ours
// drops them by default). For mode=list client-go's ListWatch says it
// cannot stream, as ours is told by NoWatchList.
func startReal(b *testing.B, impl string, cfg *rest.Config, protobuf, stream bool, hit func()) *realRunning {
	b.Helper()
	if impl == "ours" {
		src, err := source.FromConfig[*corev1.Pod](cfg, source.RESTOptions{Mapper: bench.Mapper(), Protobuf: protobuf})
		if err != nil {
			b.Fatal(err)
		}
		base, inf := runOurs(b, src, typed.Options[*corev1.Pod]{NoWatchList: !stream}, 1, hit)
		r := &realRunning{running: base}
		r.version = func(key cache.Key) string {
			if p, ok := inf.Store().GetByKey(key); ok {
				return p.ResourceVersion
			}
			return ""
		}
		return r
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	pods := cs.CoreV1().Pods(metav1.NamespaceAll)
	lw := &clientcache.ListWatch{
		ListWithContextFunc:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return pods.List(ctx, o) },
		WatchFuncWithContext: pods.Watch,
	}
	var l clientcache.ListerWatcher = lw
	if !stream {
		l = listWatchNoStream{lw}
	}
	base, inf := runClientGo(b, l, true, 1, hit)
	r := &realRunning{running: base}
	r.version = func(key cache.Key) string {
		if obj, ok, err := inf.GetStore().GetByKey(key.Namespace + "/" + key.Name); err == nil && ok {
			if p, ok := obj.(*corev1.Pod); ok {
				return p.ResourceVersion
			}
		}
		return ""
	}
	return r
}

// realWait is how long a sync or a relist of the real server may take
// before the benchmark fails.
const realWait = 5 * time.Minute

// awaitSync waits until r has synced and its handler has seen n pods
// (done closed), or fails b.
func awaitSync(b *testing.B, r *realRunning, done <-chan struct{}, n int) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), realWait)
	defer cancel()
	select {
	case <-done:
	case <-ctx.Done():
		b.Fatalf("the handler did not see %d pods in %v (%d cached)", n, realWait, r.len())
	}
	if !r.synced(ctx) {
		b.Fatalf("not synced in %v", realWait)
	}
}

// BenchmarkRealServerSync measures an informer's initial sync of every pod
// of a real kube-apiserver (-bench.kubeconfig, seeded by cmd/seedbench
// with 10k+ fixture pods laid out as Deployments make them, each with the
// managedFields of its two writers), from Run until
// the handler has seen every pod and the informer says it has synced:
// by streaming list (mode=stream, sendInitialEvents) and by LIST in pages
// of 500 (mode=list), in JSON and in protobuf. One op is one sync, so
// ns/op is its total time and ns/pod that divided by the pods; the
// server's own time (on the same machine) is in both. allocs/pod counts
// the process's allocations. A last, untimed sync is sampled for the
// live heap (GOGC=1, /gc/heap/live:bytes every 2ms, as
// BenchmarkRelistPeakHeap does): peak/settled is the peak over the heap
// the synced informer holds, and B/pod that settled heap per pod, both
// over the heap before the informer started. At equal settings: client-go
// gets the managedFields-dropping transform its users set, since ours
// drops them by default, and both are told the format (client-go's typed
// clients default to protobuf, ours to JSON).
func BenchmarkRealServerSync(b *testing.B) {
	srv := realServerOf(b)
	for _, format := range []string{"json", "protobuf"} {
		for _, mode := range []string{"stream", "list"} {
			names := impls
			if mode == "list" {
				names = []string{"ours", "client-go", "floor"}
			}
			for _, impl := range sides(names...) {
				b.Run(fmt.Sprintf("pods=%s/format=%s/mode=%s/impl=%s", srv.podsLabel(), format, mode, impl), func(b *testing.B) {
					if impl == "floor" {
						realListFloor(b, srv, format == "protobuf")
						return
					}
					realSync(b, srv, impl, format == "protobuf", mode == "stream")
				})
			}
		}
	}
}

// realListFloor is the time the server takes to answer a LIST of every
// pod, whole, read to its end and dropped with nothing decoded: the floor
// under a sync by LIST, whichever client makes it.
func realListFloor(b *testing.B, srv *realServer, protobuf bool) {
	cfg := srv.config(protobuf, nil)
	cfg.GroupVersion = &schema.GroupVersion{Version: "v1"}
	cfg.APIPath = "/api"
	cfg.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	client, err := rest.RESTClientFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		body, err := client.Get().Resource("pods").Stream(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		_, err = io.Copy(io.Discard, body)
		body.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*srv.pods), "ns/pod")
}

func realSync(b *testing.B, srv *realServer, impl string, protobuf, stream bool) {
	n := srv.pods
	var allocs uint64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c := newCounter(n)
		before := mallocs()
		r := startReal(b, impl, srv.config(protobuf, nil), protobuf, stream, c.hit)
		awaitSync(b, r, c.done, n)
		allocs += mallocs() - before
		b.StopTimer()
		r.stop()
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/pod")
	b.ReportMetric(float64(allocs)/float64(b.N*n), "allocs/pod")

	base := liveHeap()
	s := startPeak()
	c := newCounter(n)
	r := startReal(b, impl, srv.config(protobuf, nil), protobuf, stream, c.hit)
	awaitSync(b, r, c.done, n)
	peak := s.end()
	settled := liveHeap()
	if got := r.len(); got != n {
		b.Fatalf("cached %d pods, want %d", got, n)
	}
	r.stop()
	b.ReportMetric(float64(int64(peak)-int64(base))/float64(int64(settled)-int64(base)), "peak/settled")
	b.ReportMetric(float64(int64(peak)-int64(base))/float64(n), "peak-B/pod")
	b.ReportMetric(float64(int64(settled)-int64(base))/float64(n), "B/pod")
}

// BenchmarkRealServerRelist measures an informer's relist of every pod of
// a real kube-apiserver after its resourceVersion expired: with the
// informer synced, its watch is cut (the stream ends as when the server
// closes it) and the re-watch held back while one pod is changed and the
// server's etcd (-bench.etcd) is compacted past every version handed out;
// then the re-watch goes on, gets 410 Gone, and the informer lists again,
// by streaming list (mode=stream) or by LIST (mode=list), in JSON or in
// protobuf. The API server must serve watches from etcd (--watch-cache=false,
// as hack/bench-real.sh starts it): a watch cache would serve the
// re-watch from its own history, with no 410. ns/op is the time from the
// re-watch's release until the handler has seen every pod again (a side's
// wait before it lists is in it; client-go backs off about a second);
// ns/pod is the relist alone, from its first request to the handler's
// last call, per pod. A last relist is sampled for the live heap (GOGC=1,
// as BenchmarkRelistPeakHeap): peak/steady is its peak over the heap the
// synced informer holds, both over the heap before the informer started,
// so 1 means the relist needed nothing beyond the cache and 2 a second
// full copy; B/pod-steady is that steady heap per pod. client-go gets the
// managedFields-dropping transform, as in BenchmarkRealServerSync.
func BenchmarkRealServerRelist(b *testing.B) {
	srv := realServerOf(b)
	if *realEtcd == "" {
		b.Skip("no -bench.etcd: the relist benchmark compacts the server's etcd")
	}
	for _, format := range []string{"json", "protobuf"} {
		for _, mode := range []string{"stream", "list"} {
			for _, impl := range sides(impls...) {
				b.Run(fmt.Sprintf("pods=%s/format=%s/mode=%s/impl=%s", srv.podsLabel(), format, mode, impl), func(b *testing.B) {
					realRelist(b, srv, impl, format == "protobuf", mode == "stream")
				})
			}
		}
	}
}

func realRelist(b *testing.B, srv *realServer, impl string, protobuf, stream bool) {
	b.StopTimer()
	b.ResetTimer()
	n := srv.pods
	gate := newWatchGate()
	var hits atomic.Int64
	base := liveHeap()
	c := newCounter(n)
	r := startReal(b, impl, srv.config(protobuf, gate), protobuf, stream, func() { hits.Add(1); c.hit() })
	defer r.stop()
	awaitSync(b, r, c.done, n)

	var relists time.Duration
	for range b.N {
		relists += relistOnce(b, srv, gate, r, &hits, true)
	}
	b.ReportMetric(float64(relists.Nanoseconds())/float64(b.N*n), "ns/pod")

	steady := liveHeap()
	s := startPeak()
	relistOnce(b, srv, gate, r, &hits, false)
	peak := s.end()
	if got := r.len(); got != n {
		b.Fatalf("cached %d pods, want %d", got, n)
	}
	b.ReportMetric(float64(int64(peak)-int64(base))/float64(int64(steady)-int64(base)), "peak/steady")
	b.ReportMetric(float64(int64(steady)-int64(base))/float64(n), "B/pod-steady")
}

// relistOnce makes r's resourceVersion expire and waits for its relist:
// it cuts r's watch and holds the re-watch, changes one pod, compacts
// etcd and lets the re-watch go. With timed, b's timer runs from then
// until every pod reached the handler again. It returns the time from
// the relist's first request to that point.
func relistOnce(b *testing.B, srv *realServer, gate *watchGate, r *realRunning, hits *atomic.Int64, timed bool) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), realWait)
	defer cancel()
	want := hits.Load() + int64(srv.pods)
	// A watch that ends within a second of its start (or, after a
	// streaming list, of its last initial event) is reopened by both
	// sides only after a backoff; the one a server ends has lasted.
	time.Sleep(2 * time.Second)
	if err := gate.watchOpenFor(ctx, 2*time.Second); err != nil {
		b.Fatal(err)
	}
	gate.hold()
	key, rv := srv.change(ctx, b)
	if err := compactEtcd(ctx, *realEtcd); err != nil {
		b.Fatal(err)
	}
	if timed {
		b.StartTimer()
	}
	gate.release()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for hits.Load() < want || r.version(key) != rv {
		select {
		case <-ctx.Done():
			b.Fatalf("no relist within %v: the handler saw %d of %d pods again, %v holds %q (want %q), %d lists since the cut "+
				"(a server with a watch cache serves the re-watch without a 410: start it with --watch-cache=false)",
				realWait, hits.Load()-want+int64(srv.pods), srv.pods, key, r.version(key), rv, gate.listsSinceRelease())
		case <-tick.C:
		}
	}
	done := time.Now()
	if timed {
		b.StopTimer()
	}
	first, ok := gate.firstList()
	if !ok {
		b.Fatal("every pod reached the handler again with no list request after the cut")
	}
	return done.Sub(first)
}

// change patches a label of one pod and returns its key and new
// resourceVersion.
func (s *realServer) change(ctx context.Context, b *testing.B) (cache.Key, string) {
	b.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{"relist":"%d-%d"}}}`, time.Now().UnixNano(), s.touch.Add(1))
	got, err := s.admin.CoreV1().Pods(s.pod.Namespace).Patch(ctx, s.pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		b.Fatalf("change a pod: %v", err)
	}
	return cache.KeyOf(got), got.ResourceVersion
}
