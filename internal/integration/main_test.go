//go:build integration

package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/testcluster"
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

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.c != nil {
		if err := shared.c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}

// sharedCluster returns the shared cluster, starting it if needed.
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

// uniqueName returns prefix with a random suffix, so that namespaces and
// cluster-scoped objects of the shared cluster never collide, also with
// -count > 1.
func uniqueName(prefix string) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
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
	watchRVs   []string // resourceVersion of each plain watch, in order
	listCodes  map[int]int
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

func (c *requestCounter) plainWatchRVs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.watchRVs)
}

type countingTransport struct {
	rt http.RoundTripper
	c  *requestCounter
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := t.c
	c.mu.Lock()
	c.all++
	isList := false
	if req.Method == http.MethodGet && c.collection != nil && c.collection.MatchString(req.URL.Path) {
		q := req.URL.Query()
		switch {
		case q.Get("watch") != "true" && q.Get("watch") != "1":
			c.lists++
			isList = true
		case q.Get("sendInitialEvents") == "true":
			c.watchLists++
		default:
			c.watches++
			c.watchRVs = append(c.watchRVs, q.Get("resourceVersion"))
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

// state is key -> "rv/uid", what the invariants compare per object.
type state map[cache.Key]string

func stateOf[T cache.Object](objs []T) state {
	s := state{}
	for _, o := range objs {
		s[cache.KeyOf(o)] = o.GetResourceVersion() + "/" + string(o.GetUID())
	}
	return s
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

// eventually polls cond every 50ms until it holds. The bound only guards
// against a hang; it is not a performance assertion.
func eventually(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting: %s", bound, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// converge waits until the informer's cache equals want (I1), and fails
// with the difference if it never does.
func converge[T cache.Object](t *testing.T, inf *typed.Informer[T], want state, bound time.Duration) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		got := stateOf(inf.Store().List())
		if cmp.Equal(want, got) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("I1: cache did not converge within %v (-server +cache):\n%s", bound, truncate(cmp.Diff(want, got), 4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("\n... (%d more bytes)", len(s)-n)
}

// run runs inf until the returned stop is called or the test ends. stop
// checks that Run returns nil promptly (I6) and that no goroutine of the
// module is left behind (I5).
func run[T cache.Object](t *testing.T, inf *typed.Informer[T]) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run returned %v, want nil", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("I6: Run did not return within 30s of cancel")
				return
			}
			checkNoInformerGoroutines(t)
		})
	}
	t.Cleanup(stop)
	return stop
}

// ourPackages are the packages whose goroutines must all end with Run.
var ourPackages = []string{
	"github.com/typedinformer/informer/typed.",
	"github.com/typedinformer/informer/internal/reflector.",
	"github.com/typedinformer/informer/fifo.",
	"github.com/typedinformer/informer/source.",
	"github.com/typedinformer/informer/cache.",
	"github.com/typedinformer/informer/handler.",
}

// checkNoInformerGoroutines fails t if, a few seconds after Run returned, a
// goroutine still runs code of the informer's packages (I5). Pooled HTTP
// connections are client-go's and not checked.
func checkNoInformerGoroutines(t *testing.T) {
	t.Helper()
	var left []string
	for range 100 {
		left = left[:0]
		buf := make([]byte, 8<<20)
		buf = buf[:runtime.Stack(buf, true)]
		for _, g := range strings.Split(string(buf), "\n\n") {
			for _, p := range ourPackages {
				if strings.Contains(g, p) {
					left = append(left, g)
					break
				}
			}
		}
		if len(left) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("I5: %d goroutine(s) of the informer left after Run returned:\n\n%s", len(left), truncate(strings.Join(left, "\n\n"), 8000))
}

// errorLog collects the errors an informer reports, for the test log.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) handle(err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err)
	l.mu.Unlock()
}

func (l *errorLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.errs)
}

// summary is the number of errors and the first few distinct messages.
func (l *errorLog) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]bool{}
	var first []string
	for _, err := range l.errs {
		msg := err.Error()
		if len(msg) > 200 {
			msg = msg[:200] + "..."
		}
		if !seen[msg] && len(first) < 5 {
			seen[msg] = true
			first = append(first, msg)
		}
	}
	return fmt.Sprintf("%d reported errors %q", len(l.errs), first)
}

// statsString formats informer stats for the figures.
func statsString(s typed.Stats) string {
	return fmt.Sprintf("Lists=%d WatchLists=%d Relists=%d Watches=%d Events=%d Bookmarks=%d Errors=%d",
		s.Lists, s.WatchLists, s.Relists, s.Watches, s.Events, s.Bookmarks, s.Errors)
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
