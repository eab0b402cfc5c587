package bench_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	goruntime "runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/bench"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

var scalePods = flag.Int("scale.pods", 100000, "BenchmarkScale: pods the server sends")

// scalePool is how many distinct server pods the scale server encodes; pod
// i is pool pod i mod scalePool under a name and UID of its own. With the
// Deployment layout that is 1,000 label sets (ReplicaSets of 20 pods).
const scalePool = 20000

// BenchmarkScale syncs an informer from a server of -scale.pods pods (in
// another process, answering every LIST whole in JSON as kube-apiserver's
// watch cache does, and a watch with nothing until it expires it), then
// has the server expire the watch with a 410 so that the informer lists
// again, every pod unchanged. It reports the settled live heap per pod
// (after sync, after GC), the peak live heap (as the GC marked it, sampled
// every 10ms: a GC that ran at the peak marked it, so it is a lower bound,
// below the settled heap when no GC ran near the end) and the peak growth
// of the RSS (over the process's before the informer started) during the
// initial sync and during the relist, each over the settled heap, and the
// time to sync and to relist. Sides: ours
// with its defaults (managedFields dropped from the bytes), ours caching
// bench.PodSummary (a projection), client-go with a SetTransform that
// drops managedFields, as its users configure it. One op is one sync.
func BenchmarkScale(b *testing.B) {
	srv := startScaleServer(b, *scalePods)
	defer srv.stop()
	for _, impl := range []string{"ours", "ours-summary", "client-go"} {
		if *implFlag != "" && impl != *implFlag {
			continue // each side alone in its process: RSS is the process's
		}
		b.Run(fmt.Sprintf("pods=%d/format=json/impl=%s", *scalePods, impl), func(b *testing.B) {
			for range b.N {
				scaleRun(b, impl, srv)
			}
		})
	}
}

// scaleInformer is what scaleRun needs of either side's informer.
type scaleInformer struct {
	run    func(ctx context.Context)
	synced func() bool
	len    func() int
	rv     func() string
}

func scaleRun(b *testing.B, impl string, srv *scaleServer) {
	srv.post(b, "/reset")
	cfg := &rest.Config{Host: srv.url, QPS: -1}
	var inf scaleInformer
	switch impl {
	case "ours":
		inf = oursScale(b, cfg, func(c *rest.Config) (source.Source[*corev1.Pod], error) {
			return source.FromConfig[*corev1.Pod](c, source.RESTOptions{Mapper: bench.Mapper()})
		})
	case "ours-summary":
		inf = oursScale(b, cfg, func(c *rest.Config) (source.Source[*bench.PodSummary], error) {
			return source.FromConfig[*bench.PodSummary](c, source.RESTOptions{Mapper: bench.Mapper()})
		})
	default:
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		lw := listWatchNoStream{clientcache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", "", fields.Everything())}
		ci := clientcache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc})
		if err := ci.SetTransform(dropManagedFields); err != nil {
			b.Fatal(err)
		}
		inf = scaleInformer{run: ci.RunWithContext, synced: ci.HasSynced, len: func() int { return len(ci.GetStore().ListKeys()) }, rv: ci.LastSyncResourceVersion}
	}
	n := *scalePods
	before := liveHeap()
	rssBefore := residentBytes()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	peak := startMemPeak()
	start := time.Now()
	wg.Go(func() { inf.run(ctx) })
	waitFor(b, "sync", func() bool { return inf.synced() })
	syncTook := time.Since(start)
	syncHeap, syncRSS := peak.end()
	if got := inf.len(); got != n {
		b.Fatalf("cached %d pods, want %d", got, n)
	}
	settled := float64(int64(liveHeap()) - int64(before))
	peak = startMemPeak()
	start = time.Now()
	srv.post(b, "/expire")
	waitFor(b, "the relist", func() bool { return inf.rv() == "2" })
	relistTook := time.Since(start)
	relistHeap, relistRSS := peak.end()
	if got := inf.len(); got != n {
		b.Fatalf("cached %d pods after the relist, want %d", got, n)
	}
	b.ReportMetric(settled/float64(n), "settled-B/pod")
	b.ReportMetric(float64(int64(syncHeap)-int64(before))/settled, "sync-peak-heap/settled")
	b.ReportMetric(float64(int64(syncRSS)-int64(rssBefore))/settled, "sync-peak-rss/settled")
	b.ReportMetric(float64(int64(relistHeap)-int64(before))/settled, "relist-peak-heap/settled")
	b.ReportMetric(float64(int64(relistRSS)-int64(rssBefore))/settled, "relist-peak-rss/settled")
	b.ReportMetric(syncTook.Seconds(), "sync-s")
	b.ReportMetric(relistTook.Seconds(), "relist-s")
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
	return scaleInformer{run: func(ctx context.Context) { _ = inf.Run(ctx) }, synced: inf.HasSynced, len: inf.Store().Len, rv: inf.LastSyncResourceVersion}
}

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
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			heap = max(heap, sample[0].Value.Uint64())
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

// scaleServerEnv, set in the environment of the test binary with a pod
// count, makes TestScaleServer serve that many pods.
const scaleServerEnv = "BENCH_SCALE_SERVER_PODS"

type scaleServer struct {
	url   string
	cmd   *exec.Cmd
	stdin io.Closer
}

func startScaleServer(b *testing.B, n int) *scaleServer {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestScaleServer$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", scaleServerEnv, n))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	s := &scaleServer{cmd: cmd, stdin: stdin}
	if _, err := fmt.Fscan(stdout, &s.url); err != nil {
		s.stop()
		b.Fatalf("the scale server's URL: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return s
}

func (s *scaleServer) stop() {
	_ = s.stdin.Close()
	_ = s.cmd.Wait()
}

func (s *scaleServer) post(b *testing.B, path string) {
	b.Helper()
	resp, err := http.Post(s.url+"/control"+path, "", nil)
	if err != nil {
		b.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: %s", path, resp.Status)
	}
}

// TestScaleServer is the server process of startScaleServer; without its
// environment variable it does nothing. It encodes scalePool server pods
// once and serves n of them, each a pool pod under a name and UID of its
// own, as one whole JSON list at resourceVersion 1 (2 after /expire); a
// watch at the current version waits until /expire, then sends a 410, and
// one at any other version gets the 410 at once; a streaming list is
// refused, as by a server without the feature.
func TestScaleServer(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv(scaleServerEnv))
	if err != nil {
		t.Skip("not a scale server process")
	}
	pool := make([]scaleItem, min(n, scalePool))
	for i := range pool {
		p := bench.Pod(i, bench.PodOptions{ManagedFields: true, Labels: bench.LabelsDeployment})
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		pool[i] = splitItem(t, raw, p)
	}
	var (
		mu      sync.Mutex
		epoch   = 1
		expired = make(chan struct{})
	)
	current := func() (int, chan struct{}) {
		mu.Lock()
		defer mu.Unlock()
		return epoch, expired
	}
	gone := []byte(`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version","reason":"Expired","code":410}}` + "\n")
	mux := http.NewServeMux()
	mux.HandleFunc("POST /control/reset", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		epoch, expired = 1, make(chan struct{})
		mu.Unlock()
	})
	mux.HandleFunc("POST /control/expire", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		epoch++
		close(expired)
		expired = make(chan struct{})
		mu.Unlock()
	})
	mux.HandleFunc("GET /api/v1/pods", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		ep, exp := current()
		if q.Get("watch") == "true" || q.Get("watch") == "1" {
			if q.Get("sendInitialEvents") == "true" {
				http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Invalid","code":422}`, http.StatusUnprocessableEntity)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			if q.Get("resourceVersion") == strconv.Itoa(ep) {
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush()
				select {
				case <-exp:
				case <-r.Context().Done():
					return
				}
			}
			_, _ = w.Write(gone)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		bw := bufio.NewWriterSize(w, 256<<10)
		fmt.Fprintf(bw, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"%d"},"items":[`, ep)
		var name, uid []byte
		for i := range n {
			if i > 0 {
				_ = bw.WriteByte(',')
			}
			it := &pool[i%len(pool)]
			name = fmt.Appendf(name[:0], "%s-%d", it.name, i/len(pool))
			uid = fmt.Appendf(uid[:0], "6f1c2d3e-%04x-4000-8000-%012x", i%0xffff, i)
			it.write(bw, name, uid)
		}
		_, _ = bw.WriteString("]}")
		_ = bw.Flush()
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mux}
	go func() { _ = hs.Serve(l) }()
	fmt.Printf("http://%s\n", l.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes it
	_ = hs.Close()
	goruntime.KeepAlive(pool)
}

// scaleItem is a pool pod's JSON cut around its name and UID.
type scaleItem struct {
	name             string // the pool pod's name
	before, mid, end []byte // raw = before name mid uid end
}

func splitItem(t *testing.T, raw []byte, p *corev1.Pod) scaleItem {
	n := bytes.Index(raw, []byte(`"name":"`+p.Name+`"`))
	u := bytes.Index(raw, []byte(`"uid":"`+string(p.UID)+`"`))
	if n < 0 || u < 0 || u < n {
		t.Fatalf("pod JSON without its name before its uid: %s", raw[:200])
	}
	ns, us := n+len(`"name":"`), u+len(`"uid":"`)
	return scaleItem{name: p.Name, before: raw[:ns], mid: raw[ns+len(p.Name) : us], end: raw[us+len(p.UID):]}
}

func (it *scaleItem) write(w *bufio.Writer, name, uid []byte) {
	_, _ = w.Write(it.before)
	_, _ = w.Write(name)
	_, _ = w.Write(it.mid)
	_, _ = w.Write(uid)
	_, _ = w.Write(it.end)
}
