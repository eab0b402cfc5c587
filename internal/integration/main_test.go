//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/informertest"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/internal/testcluster"
	"github.com/typedinformer/informer/metrics"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// shared is a cluster for the scenarios that do not disturb each other
// (every one of them works in namespaces of its own). It is started on
// first use, so running a single test that brings its own cluster costs no
// extra start, and stopped by TestMain.
var shared struct {
	once sync.Once
	c    *testcluster.Cluster
	err  error
}

// TestMain runs the tests, stops the shared cluster, then fails the run if
// a goroutine is left behind (I5; pooled HTTP connections are client-go's
// and not counted). Each test also checks for leaks of its own
// (leakcheck.Check) once its cleanups, its own cluster's included, ran.
func TestMain(m *testing.M) {
	if id := os.Getenv(replicaEnv); id != "" {
		os.Exit(replicaProcess(id)) // the test binary run again as a replica (pause_test.go)
	}
	leakcheck.MainWithTeardown(m, func() {
		if shared.c != nil {
			if err := shared.c.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}
	})
}

// sharedCluster returns the shared cluster, starting it if needed. Call it
// before leakcheck.Check: the cluster's goroutines outlive the test.
func sharedCluster(t *testing.T) *testcluster.Cluster {
	t.Helper()
	shared.once.Do(func() {
		start := time.Now()
		shared.c, shared.err = testcluster.Launch(context.Background(), testcluster.Options{})
		if shared.err == nil {
			t.Logf("testcluster: shared cluster ready in %v at %s", time.Since(start).Round(time.Millisecond), shared.c.Host())
		}
	})
	if shared.err != nil {
		t.Fatalf("testcluster: shared cluster: %v", shared.err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("testcluster: test failed; shared cluster logs:\n%s", shared.c.LogTails(40))
		}
	})
	return shared.c
}

var nameSeq atomic.Int64

// uniqueName returns prefix with a suffix unique in the test process, so
// that namespaces and cluster-scoped objects of the shared cluster (which
// lives as long as the process) never collide, also with -count > 1.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, nameSeq.Add(1))
}

// testSeed returns the seed of the test's random choices, derived from its
// name, and logs it so a run can be told apart from another.
func testSeed(t *testing.T) uint64 {
	seed := uint64(42)
	for _, c := range t.Name() {
		seed = seed*31 + uint64(c)
	}
	t.Logf("random seed %d", seed)
	return seed
}

// clientset returns a clientset for cfg with limits high enough for
// seeding.
func clientset(t *testing.T, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 5000, 10000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// protobufClientset is a clientset that talks protobuf, cheaper for the
// API server and the test than JSON: for seeding and checking, not for the
// informers under test, which use the clientset defaults.
func protobufClientset(t *testing.T, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return clientset(t, cfg)
}

// podSource is the source of the pods of ns (metav1.NamespaceAll: all).
func podSource(t *testing.T, cs kubernetes.Interface, ns string) source.Source[*corev1.Pod] {
	t.Helper()
	src, err := source.FromClient[*corev1.Pod](cs.CoreV1().Pods(ns))
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// newInformer is typed.NewInformer, failing the test on error.
func newInformer[T cache.Object](t *testing.T, src source.Source[T], opts typed.Options[T]) *typed.Informer[T] {
	t.Helper()
	inf, err := typed.NewInformer(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	return inf
}

// podsCollection matches the paths of the pods collection, cluster-wide or
// in one namespace (not a single pod).
var podsCollection = regexp.MustCompile(`^/api/v1/(namespaces/[^/]+/)?pods$`)

// requestCounter counts the requests made through a rest.Config it wraps:
// all of them, by status code, and the GETs of one collection split into
// LIST, watch and streaming list (watch with sendInitialEvents=true).
type requestCounter struct {
	collection *regexp.Regexp

	mu         sync.Mutex
	all        int
	byCode     map[int]int
	lists      int
	watches    int
	watchLists int
	watchLog   []watchReq // each plain watch, in order
	listLog    []listReq  // each LIST request, in order
	listCodes  map[int]int
}

// listReq is one LIST request: its resourceVersion, limit and whether it
// continued a list, and the status code of its answer.
type listReq struct {
	RV       string
	Limit    string
	Continue bool
	Code     int
}

func (l listReq) String() string {
	s := fmt.Sprintf("list rv=%q", l.RV)
	if l.Limit != "" {
		s += " limit=" + l.Limit
	}
	if l.Continue {
		s += " continue"
	}
	return s + fmt.Sprintf(" -> %d", l.Code)
}

// watchReq is one plain watch request: its resourceVersion and the
// status code of its answer (0 while pending or for a transport error).
type watchReq struct {
	RV   string
	Code int
}

// counts is a snapshot of a requestCounter.
type counts struct {
	All, Lists, Watches, WatchLists int
	ByCode                          map[int]int
	ListCodes                       map[int]int // status codes of the LIST requests
}

func (c counts) String() string {
	codes := slices.Sorted(maps.Keys(c.ByCode))
	var b strings.Builder
	for _, k := range codes {
		fmt.Fprintf(&b, " %d:%d", k, c.ByCode[k])
	}
	return fmt.Sprintf("requests=%d LIST=%d watch=%d streaming-list=%d by-status={%s }",
		c.All, c.Lists, c.Watches, c.WatchLists, b.String())
}

func (c counts) sub(o counts) counts {
	d := counts{All: c.All - o.All, Lists: c.Lists - o.Lists, Watches: c.Watches - o.Watches,
		WatchLists: c.WatchLists - o.WatchLists, ByCode: map[int]int{}}
	for k, v := range c.ByCode {
		if n := v - o.ByCode[k]; n != 0 {
			d.ByCode[k] = n
		}
	}
	return d
}

func newCounter(collection *regexp.Regexp) *requestCounter {
	return &requestCounter{collection: collection, byCode: map[int]int{}, listCodes: map[int]int{}}
}

// wrap returns a copy of cfg whose requests are counted.
func (c *requestCounter) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return countingTransport{rt: rt, c: c}
	}
	return cfg
}

func (c *requestCounter) snapshot() counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return counts{All: c.all, Lists: c.lists, Watches: c.watches, WatchLists: c.watchLists,
		ByCode: maps.Clone(c.byCode), ListCodes: maps.Clone(c.listCodes)}
}

// listRequests returns the LIST requests so far, in order.
func (c *requestCounter) listRequests() []listReq {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.listLog)
}

// plainWatches returns the plain watch requests so far, in order.
func (c *requestCounter) plainWatches() []watchReq {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.watchLog)
}

func (c *requestCounter) plainWatchRVs() []string {
	var rvs []string
	for _, w := range c.plainWatches() {
		rvs = append(rvs, w.RV)
	}
	return rvs
}

type countingTransport struct {
	rt http.RoundTripper
	c  *requestCounter
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := t.c
	c.mu.Lock()
	c.all++
	isList, watchIdx, listIdx := false, -1, -1
	if req.Method == http.MethodGet && c.collection != nil && c.collection.MatchString(req.URL.Path) {
		q := req.URL.Query()
		switch {
		case q.Get("watch") != "true" && q.Get("watch") != "1":
			c.lists++
			isList = true
			listIdx = len(c.listLog)
			c.listLog = append(c.listLog, listReq{RV: q.Get("resourceVersion"), Limit: q.Get("limit"), Continue: q.Get("continue") != ""})
		case q.Get("sendInitialEvents") == "true":
			c.watchLists++
		default:
			c.watches++
			watchIdx = len(c.watchLog)
			c.watchLog = append(c.watchLog, watchReq{RV: q.Get("resourceVersion")})
		}
	}
	c.mu.Unlock()
	resp, err := t.rt.RoundTrip(req)
	code := 0 // transport error
	if err == nil {
		code = resp.StatusCode
	}
	c.mu.Lock()
	c.byCode[code]++
	if isList {
		c.listCodes[code]++
		c.listLog[listIdx].Code = code
	}
	if watchIdx >= 0 {
		c.watchLog[watchIdx].Code = code
	}
	c.mu.Unlock()
	return resp, err
}

// newPod is the minimal pod the suite creates: one container, no node.
func newPod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	}
}

func createNamespaces(ctx context.Context, t *testing.T, cs kubernetes.Interface, names ...string) {
	t.Helper()
	for _, ns := range names {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create namespace %s: %v", ns, err)
		}
	}
}

// seed creates pods with workers concurrent requests.
func seed(ctx context.Context, t *testing.T, cs kubernetes.Interface, pods []*corev1.Pod, workers int) time.Duration {
	t.Helper()
	start := time.Now()
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for _, p := range pods {
		g.Go(func() error {
			if _, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create pod %s/%s: %w", p.Namespace, p.Name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("seed: %v", err)
	}
	return time.Since(start)
}

func podPtrs(items []corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// serverPods lists pods straight from the server (a quorum read) in ns, or
// in every namespace for metav1.NamespaceAll.
func serverPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, opts metav1.ListOptions) []*corev1.Pod {
	t.Helper()
	l, err := cs.CoreV1().Pods(ns).List(ctx, opts)
	if err != nil {
		t.Fatalf("list pods from the server: %v", err)
	}
	return podPtrs(l.Items)
}

// serverState is the server's pods of ns (all namespaces for
// metav1.NamespaceAll) as the invariants compare them.
func serverState(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) informertest.State {
	t.Helper()
	return informertest.StateOf(serverPods(ctx, t, cs, ns, metav1.ListOptions{}))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("\n... (%d more bytes)", len(s)-n)
}

// errSummary is the number of errors an informer reported and the first
// few distinct messages, for the test log.
func errSummary(s *it.ErrSink) string {
	errs := s.All()
	seen := map[string]bool{}
	var first []string
	for _, err := range errs {
		msg := err.Error()
		if len(msg) > 200 {
			msg = msg[:200] + "..."
		}
		// A refusal of something older than the cache is always shown: it
		// says the informer dropped what the server sent.
		if !seen[msg] && (len(first) < 5 || errors.Is(err, typed.ErrWentBack)) {
			seen[msg] = true
			first = append(first, msg)
		}
	}
	return fmt.Sprintf("%d reported errors %q", len(errs), first)
}

// statsString formats informer stats for the figures.
func statsString(s metrics.Stats) string {
	return fmt.Sprintf("Lists=%d WatchLists=%d Relists=%d Watches=%d Events=%d Bookmarks=%d Errors=%d",
		s.Lists, s.WatchLists, s.Relists, s.Watches, s.Events, s.Bookmarks, s.Errors)
}

func rvNum(rv string) int64 {
	n, _ := strconv.ParseInt(rv, 10, 64)
	return n
}

// monitorRV samples inf's LastSyncResourceVersion every 5ms until the test
// ends and fails the test if it ever goes back (I3: the informer's last
// synced resourceVersion never decreases).
func monitorRV[T cache.Object](t *testing.T, inf *typed.Informer[T]) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		var last int64
		var lastRV string
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			rv := inf.LastSyncResourceVersion()
			n := rvNum(rv)
			if n < last {
				t.Errorf("I3: LastSyncResourceVersion went back from %s to %s", lastRV, rv)
				return
			}
			last, lastRV = n, rv
		}
	}()
	t.Cleanup(func() {
		close(done)
		<-stopped
	})
}

// waitCtxFor returns a context that ends after d or with the test.
func waitCtxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
