package bench_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/internal/bench"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

var (
	scalePods   = flag.Int("scale.pods", 100000, "BenchmarkScale: pods the server sends")
	scaleFormat = flag.String("scale.format", "", "BenchmarkScale: json or protobuf; empty runs both")
	scaleMaxRSS = flag.Uint64("scale.maxrss", 0, "BenchmarkScale: give up a side whose RSS passes this many bytes, saying how far it got, before the machine runs out (0: no bound)")
)

// scalePool is how many distinct server pods the scale server encodes; pod
// i is pool pod i mod scalePool under a name and UID of its own. With the
// Deployment layout that is 1,000 label sets (ReplicaSets of 20 pods).
const scalePool = 20000

// BenchmarkScale syncs an informer, with one handler that counts what it
// is handed, from a server of -scale.pods pods (in another process,
// answering every LIST whole, in JSON or protobuf as the client asks, as
// kube-apiserver's watch cache does, and a watch with nothing until it
// expires it); then has the server expire the watch with a 410 so that
// the informer lists again, every pod unchanged; then has the watch send
// MODIFIED events of full pods (a tenth of them, up to 100,000). It
// reports the settled live heap per pod (after sync, once the handler has
// had every pod, after GC), the peak live heap (as the GC marked it,
// sampled every 10ms: a GC that ran at the peak marked it, so it is a
// lower bound, below the settled heap when no GC ran near the end) and
// the peak growth of the RSS (over the process's before the informer
// started) during the initial sync and during the relist, each over the
// settled heap; the time to sync (the cache synced), to relist (the
// handler had every pod's update), and the watch's events a second at
// that many cached (until the handler had the last). Sides: ours with its
// defaults (managedFields dropped from the bytes), ours caching
// bench.PodSummary (a projection), client-go with a SetTransform that
// drops managedFields, as its users configure it; and the floor under
// their sync time, the LIST read and dropped (scaleFloor). One op is one
// sync.
func BenchmarkScale(b *testing.B) {
	srv := startScaleServer(b, *scalePods)
	defer srv.stop()
	for _, format := range []string{"json", "protobuf"} {
		if *scaleFormat != "" && format != *scaleFormat {
			continue
		}
		for _, impl := range []string{"floor", "ours", "ours-summary", "client-go"} {
			if *implFlag != "" && impl != *implFlag {
				continue // each side alone in its process: RSS is the process's
			}
			b.Run(fmt.Sprintf("pods=%d/format=%s/impl=%s", *scalePods, format, impl), func(b *testing.B) {
				for range b.N {
					scaleRun(b, impl, format == "protobuf", srv)
				}
			})
		}
	}
}

// scaleInformer is what scaleRun needs of either side's informer.
type scaleInformer struct {
	run    func(ctx context.Context)
	synced func() bool
	len    func() int
	rv     func() string
	counts *scaleCounts // of the one handler, added before the informer runs
}

// scaleFloor is the floor under both sides' sync time: one LIST of every
// pod, read and dropped, nothing decoded (the server's encoding and the
// transfer); it reports its time and the bytes a pod on the wire.
func scaleFloor(b *testing.B, protobuf bool, srv *scaleServer) {
	req, err := http.NewRequest(http.MethodGet, srv.url+"/api/v1/pods", nil)
	if err != nil {
		b.Fatal(err)
	}
	if protobuf {
		req.Header.Set("Accept", protoContentType+",application/json")
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(time.Since(start).Seconds(), "sync-s")
	b.ReportMetric(float64(n)/float64(*scalePods), "wire-B/pod")
}

// scaleCounts are what the benchmark's handler has been handed: adds,
// updates of the relist (at the pool pods' versions) and updates of the
// churn (from churnFirstRV up).
type scaleCounts struct{ adds, relisted, churned atomic.Int64 }

func (c *scaleCounts) update(obj interface{ GetResourceVersion() string }) {
	if rv, err := strconv.Atoi(obj.GetResourceVersion()); err == nil && rv >= churnFirstRV {
		c.churned.Add(1)
		return
	}
	c.relisted.Add(1)
}

func scaleRun(b *testing.B, impl string, protobuf bool, srv *scaleServer) {
	srv.post(b, "/reset")
	if impl == "floor" {
		scaleFloor(b, protobuf, srv)
		return
	}
	cfg := &rest.Config{Host: srv.url, QPS: -1}
	var inf scaleInformer
	switch impl {
	case "ours":
		inf = oursScale(b, cfg, func(c *rest.Config) (source.Source[*corev1.Pod], error) {
			return source.FromConfig[*corev1.Pod](c, source.RESTOptions{Mapper: bench.Mapper(), Protobuf: protobuf})
		})
	case "ours-summary":
		inf = oursScale(b, cfg, func(c *rest.Config) (source.Source[*bench.PodSummary], error) {
			return source.FromConfig[*bench.PodSummary](c, source.RESTOptions{Mapper: bench.Mapper(), Protobuf: protobuf})
		})
	default:
		if protobuf { // as kube-controller-manager and kubectl configure it
			cfg.ContentType = "application/vnd.kubernetes.protobuf"
			cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		lw := listWatchNoStream{clientcache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", "", fields.Everything())}
		ci := clientcache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc})
		if err := ci.SetTransform(dropManagedFields); err != nil {
			b.Fatal(err)
		}
		counts := &scaleCounts{}
		_, err = ci.AddEventHandler(clientcache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { counts.adds.Add(1) },
			UpdateFunc: func(_, obj any) {
				if p, ok := obj.(*corev1.Pod); ok {
					counts.update(p)
				}
			},
		})
		if err != nil {
			b.Fatal(err)
		}
		inf = scaleInformer{run: ci.RunWithContext, synced: ci.HasSynced, len: func() int { return len(ci.GetStore().ListKeys()) }, rv: ci.LastSyncResourceVersion, counts: counts}
	}
	n := *scalePods
	before := liveHeap()
	rssBefore := residentBytes()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	peak := startMemPeak()
	start := time.Now()
	wg.Go(func() { inf.run(ctx) })
	waitFor(b, "sync", func() bool {
		if rss := residentBytes(); *scaleMaxRSS > 0 && rss > *scaleMaxRSS {
			b.Fatalf("%s: RSS %.1f GiB after %.0f s of the initial sync, past -scale.maxrss (live heap %.1f GiB, %d of %d pods cached); gave up",
				impl, float64(rss)/(1<<30), time.Since(start).Seconds(), float64(markedLive())/(1<<30), inf.len(), n)
		}
		return inf.synced()
	})
	syncTook := time.Since(start)
	syncHeap, syncRSS := peak.end()
	if got := inf.len(); got != n {
		b.Fatalf("cached %d pods, want %d", got, n)
	}
	// The handler has had every pod before the heap settles: no
	// notification is held in a buffer on either side.
	waitFor(b, "the handler's adds", func() bool { return inf.counts.adds.Load() == int64(n) })
	settled := float64(int64(liveHeap()) - int64(before))
	peak = startMemPeak()
	start = time.Now()
	srv.post(b, "/expire")
	waitFor(b, "the relist", func() bool { return inf.counts.relisted.Load() == int64(n) })
	relistTook := time.Since(start)
	relistHeap, relistRSS := peak.end()
	if got, rv := inf.len(), inf.rv(); got != n || rv != "2" {
		b.Fatalf("cached %d pods at %q after the relist, want %d at 2", got, rv, n)
	}
	// Watch throughput at n cached: k MODIFIED events of full pods, until
	// the handler has had the last.
	k := scaleChurn(n)
	start = time.Now()
	srv.post(b, fmt.Sprintf("/churn?events=%d", k))
	waitFor(b, "the churn", func() bool { return inf.counts.churned.Load() == int64(k) })
	churnTook := time.Since(start)
	b.ReportMetric(settled/float64(n), "settled-B/pod")
	b.ReportMetric(float64(int64(syncHeap)-int64(before))/settled, "sync-peak-heap/settled")
	b.ReportMetric(float64(int64(syncRSS)-int64(rssBefore))/settled, "sync-peak-rss/settled")
	b.ReportMetric(float64(int64(relistHeap)-int64(before))/settled, "relist-peak-heap/settled")
	b.ReportMetric(float64(int64(relistRSS)-int64(rssBefore))/settled, "relist-peak-rss/settled")
	b.ReportMetric(syncTook.Seconds(), "sync-s")
	b.ReportMetric(relistTook.Seconds(), "relist-s")
	b.ReportMetric(float64(k)/churnTook.Seconds(), "watch-events/s")
	cancel()
	wg.Wait()
}

func oursScale[T cache.Object](b *testing.B, cfg *rest.Config, newSource func(*rest.Config) (source.Source[T], error)) scaleInformer {
	b.Helper()
	src, err := newSource(cfg)
	if err != nil {
		b.Fatal(err)
	}
	inf, err := typed.NewInformer(src, typed.Options[T]{NoWatchList: true})
	if err != nil {
		b.Fatal(err)
	}
	counts := &scaleCounts{}
	_, err = inf.AddHandler(handler.Funcs[T]{
		AddFunc:    func(T, bool) { counts.adds.Add(1) },
		UpdateFunc: func(_, obj T) { counts.update(obj) },
	})
	if err != nil {
		b.Fatal(err)
	}
	return scaleInformer{run: func(ctx context.Context) { _ = inf.Run(ctx) }, synced: inf.HasSynced, len: inf.Store().Len, rv: inf.LastSyncResourceVersion, counts: counts}
}

// scaleChurn is how many watch events the throughput run sends for n
// cached pods: a tenth, from 1,000 to 100,000, and no more than n.
func scaleChurn(n int) int { return min(max(n/10, 1000), 100000, n) }

// waitFor polls cond until it holds; a hang guard of 30 minutes, not a
// performance bound.
func waitFor(b *testing.B, what string, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// memPeak samples the live heap as the last GC marked it and the RSS
// every 10ms, with the GC left at its default pace.
type memPeak struct {
	stop chan struct{}
	done chan [2]uint64
}

func startMemPeak() *memPeak {
	p := &memPeak{stop: make(chan struct{}), done: make(chan [2]uint64, 1)}
	go func() {
		var heap, rss uint64
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			heap = max(heap, markedLive())
			rss = max(rss, residentBytes())
			select {
			case <-p.stop:
				p.done <- [2]uint64{heap, rss}
				return
			case <-t.C:
			}
		}
	}()
	return p
}

// markedLive is the live heap as the last GC marked it.
func markedLive() uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

func (p *memPeak) end() (heap, rss uint64) {
	close(p.stop)
	r := <-p.done
	return r[0], r[1]
}

// residentBytes is the process's resident set, from /proc (0 elsewhere).
func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}
