package bench_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/internal/bench"
	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// relistN is 20k by default: the peak is sampled with GOGC=1, so a row's
// time grows with the heap, and at 100k the 21 rows of one side take
// well over ten minutes on two cores; the ratios measured at 100k and at
// 20k agree within their noise.
var relistN = flag.Int("relist.pods", 20000, "BenchmarkRelistPeakHeap: pods in the relist")

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
// relists N pods, divided by the steady heap its cache holds: 1 means the
// relist needed nothing beyond the cache, 2 a second full copy. While no
// watch sees it, changed=0 creates one pod, changed=5pct modifies 1 pod in
// 20 and changed=100pct every pod; then the fake server's history is
// compacted past the informer's resourceVersion and its watch cut, so the
// informer must list again, as after a 410. mode=stream is a streaming
// list, mode=list-paged a LIST in pages of 500, both from the fake in
// process; mode=list-whole a LIST the server answers whole, as
// kube-apiserver's watch cache does, in JSON over HTTP (podserver), so
// that decoding the body is part of it. The fake's own copy is in the
// baseline; the floor is the same stream, LIST or response read and
// dropped beside a synced informer: what the source's own copies hold.
func BenchmarkRelistPeakHeap(b *testing.B) {
	n := *relistN
	for _, changed := range []string{"0", "5pct", "100pct"} {
		for _, mode := range []string{"stream", "list-paged", "list-whole"} {
			impls := []string{"ours", "client-go"}
			if changed == "0" {
				impls = append(impls, "floor") // the floor changes nothing
			}
			for _, impl := range sides(impls...) {
				b.Run(fmt.Sprintf("pods=%dk/changed=%s/mode=%s/impl=%s", n/1000, changed, mode, impl), func(b *testing.B) {
					var ratio float64
					for range b.N {
						ratio = relistPeak(b, n, changes(n, changed), mode, impl)
					}
					b.ReportMetric(ratio, "peak/steady")
				})
			}
		}
	}
}

// changes is how many pods of n a changed= setting modifies; -1 for
// none, but one pod created.
func changes(n int, changed string) int {
	switch changed {
	case "5pct":
		return n / 20
	case "100pct":
		return n
	}
	return -1
}

func relistPeak(b *testing.B, n, changed int, mode, impl string) float64 {
	stream := mode == "stream"
	var pods []*corev1.Pod
	if mode != "list-whole" {
		pods = relistPods(n)
	}
	var (
		fake *sourcetest.Fake[*corev1.Pod]
		srv  *relistServer
	)
	if mode == "list-whole" {
		srv = startRelistServer(b, n)
		defer srv.stop()
	} else {
		fake = sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: pods, Window: 10, NoWatchList: !stream})
		srv = &relistServer{fake: fake}
	}
	pods = nil
	base := liveHeap()
	var updates atomic.Int64
	r := startRelist(b, fake, srv.url, stream, impl, func() { updates.Add(1) })
	defer r.stop()
	if !r.synced(context.Background()) {
		b.Fatal("not synced")
	}
	for updates.Load() < int64(n) {
		time.Sleep(time.Millisecond)
	}
	steady := liveHeap()
	if impl == "floor" {
		s := startPeak()
		switch mode {
		case "stream":
			drainStream(b, fake)
		case "list-paged":
			drainPages(b, fake, n)
		default:
			drainWhole(b, srv.url)
		}
		peak := s.end()
		return float64(int64(peak)-int64(base)) / float64(int64(steady)-int64(base))
	}
	// Changes no watch sees, then compaction: the informer's
	// resourceVersion is gone and it must list again.
	want := n
	if changed < 0 {
		want++
	}
	srv.change(b, changed)
	liveHeap() // the changes' garbage is not the relist's
	s := startPeak()
	srv.relist(b)
	for updates.Load() < int64(n+want) {
		time.Sleep(time.Millisecond)
	}
	peak := s.end()
	if got := r.len(); got != want {
		b.Fatalf("cached %d pods, want %d", got, want)
	}
	b.ReportMetric(float64(int64(steady)-int64(base))/float64(n), "B/pod-steady")
	return float64(int64(peak)-int64(base)) / float64(int64(steady)-int64(base))
}

// relistPods are the n pods of a relist, without resourceVersions.
func relistPods(n int) []*corev1.Pod {
	pods := bench.Pods(n, bench.PodOptions{})
	for _, p := range pods {
		p.ResourceVersion = ""
	}
	return pods
}

// change makes the changes of a relist in fake while no watch sees them:
// one pod created if k < 0, else k pods modified.
func change(fake *sourcetest.Fake[*corev1.Pod], n, k int) error {
	if k < 0 {
		fake.DropEvents(1)
		_, err := fake.Create(bench.Pod(n, bench.PodOptions{}))
		return err
	}
	return modify(fake, k)
}

// relistServer is the fake a relist lists: in this process, or served
// over HTTP by another (url set), as an API server is.
type relistServer struct {
	fake    *sourcetest.Fake[*corev1.Pod] // in this process
	url     string                        // the pods' server, in the other process
	control string                        // the other process's control server
	cmd     *exec.Cmd
	stdin   io.Closer
}

// relistServerEnv, set in the environment of the test binary with a pod
// count, makes TestRelistServer serve that many pods.
const relistServerEnv = "BENCH_RELIST_SERVER_PODS"

// startRelistServer starts a process serving a fake of n pods over HTTP,
// with every LIST answered whole (podserver.Server.Whole), so that its
// heap is not this one's.
func startRelistServer(b *testing.B, n int) *relistServer {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRelistServer$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", relistServerEnv, n))
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
		b.Fatalf("start the server process: %v", err)
	}
	s := &relistServer{cmd: cmd, stdin: stdin}
	if _, err := fmt.Fscan(stdout, &s.url, &s.control); err != nil {
		s.stop()
		b.Fatalf("the server process's URLs: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return s
}

// stop ends the server process.
func (s *relistServer) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.stdin.Close()
	_ = s.cmd.Wait()
}

// change makes change's changes, while no watch sees them.
func (s *relistServer) change(b *testing.B, k int) {
	b.Helper()
	if s.cmd == nil {
		if err := change(s.fake, s.fake.Len(), k); err != nil {
			b.Fatal(err)
		}
		return
	}
	s.post(b, fmt.Sprintf("/change?k=%d", k))
}

// relist compacts the history and cuts the watches: a relist follows.
func (s *relistServer) relist(b *testing.B) {
	b.Helper()
	if s.cmd == nil {
		s.fake.Compact()
		s.fake.CutWatches()
		return
	}
	s.post(b, "/relist")
}

func (s *relistServer) post(b *testing.B, path string) {
	resp, err := http.Post(s.control+path, "", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: %s: %s", path, resp.Status, msg)
	}
}

// TestRelistServer is the server process of startRelistServer; without
// its environment variable it does nothing. It prints the pods' URL and
// its control URL, and serves until its standard input is closed.
func TestRelistServer(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv(relistServerEnv))
	if err != nil {
		t.Skip("not a relist server process")
	}
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: relistPods(n), Window: 10, NoWatchList: true})
	srv := podserver.Start(fake)
	defer srv.Close()
	srv.Whole = true
	var mu sync.Mutex // one control request at a time
	control := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/change":
			k, err := strconv.Atoi(r.URL.Query().Get("k"))
			if err == nil {
				err = change(fake, n, k)
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
			}
		case "/relist":
			fake.Compact()
			fake.CutWatches()
		default:
			http.NotFound(w, r)
		}
	}))
	defer control.Close()
	fmt.Println(srv.URL, control.URL)
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// modify changes a label of k of fake's pods, spread over them, while
// no watch sees it.
func modify(fake *sourcetest.Fake[*corev1.Pod], k int) error {
	items := fake.Items()
	fake.DropEvents(k)
	step := len(items) / k
	for i := range k {
		p := items[i*step]
		items[i*step] = nil
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels["relisted"] = "changed"
		if _, err := fake.Update(p); err != nil {
			return err
		}
	}
	return nil
}

// startRelist runs impl's informer over fake (in process), or over the
// server at url if not empty; the floor's is ours.
func startRelist(b *testing.B, fake *sourcetest.Fake[*corev1.Pod], url string, stream bool, impl string, hit func()) *running {
	b.Helper()
	cfg := &rest.Config{Host: url}
	if impl == "client-go" {
		if url == "" {
			return start(b, impl, fake.ListerWatcher(), 1, hit, typed.Options[*corev1.Pod]{})
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		lw := listWatchNoStream{clientcache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", "", fields.Everything())}
		return start(b, impl, lw, 1, hit, typed.Options[*corev1.Pod]{})
	}
	var src source.Source[*corev1.Pod] = fake
	if url != "" {
		var err error
		if src, err = source.FromConfig[*corev1.Pod](cfg, source.RESTOptions{Mapper: podserver.Mapper()}); err != nil {
			b.Fatal(err)
		}
	}
	r, _ := runOurs(b, src, typed.Options[*corev1.Pod]{NoWatchList: !stream}, 1, hit)
	return r
}

// drainWhole reads the answer of the server at url to a LIST, whole as a
// relist gets it, with our REST source, decoding every item and dropping
// it: the garbage the source's decoding makes while the collector marks.
func drainWhole(b *testing.B, url string) {
	src, err := source.FromConfig[*corev1.Pod](&rest.Config{Host: url}, source.RESTOptions{Mapper: podserver.Mapper()})
	if err != nil {
		b.Fatal(err)
	}
	items, ok := src.(source.ItemLister[*corev1.Pod])
	if !ok {
		b.Fatal("the REST source lists no items one by one")
	}
	if _, err := items.ListItems(context.Background(), metav1.ListOptions{Limit: 500}, func(*corev1.Pod) error { return nil }); err != nil {
		b.Fatal(err)
	}
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
