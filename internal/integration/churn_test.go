//go:build integration

package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/internal/testcluster"
	"github.com/typedinformer/informer/typed"
)

// churner creates, updates (label patches) and deletes pods with a few
// workers, each on pods of its own, so that no two requests race on one
// pod.
type churner struct {
	cs       kubernetes.Interface
	prefix   string // of the names of created pods
	nss      []string
	limit    int64  // stop after this many operations started (0: until stopped)
	tolerate bool   // count failures instead of failing the test
	seed     uint64 // of the workers' random choices

	started                                 atomic.Int64
	ok, creates, updates, deletes, failures atomic.Int64

	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []string
}

// startChurn starts workers; the pods in owned (already created) are shared
// out among them. Their random choices come from the test's seed (logged).
func startChurn(t *testing.T, cs kubernetes.Interface, prefix string, nss []string, owned []*corev1.Pod, workers int, limit int64, tolerate bool) *churner {
	ctx, cancel := context.WithCancel(context.Background())
	c := &churner{cs: cs, prefix: prefix, nss: nss, limit: limit, tolerate: tolerate, seed: testSeed(t), cancel: cancel}
	for w := range workers {
		var mine []*corev1.Pod
		for i, p := range owned {
			if i%workers == w {
				mine = append(mine, p)
			}
		}
		c.wg.Go(func() { c.work(ctx, t, w, mine) })
	}
	t.Cleanup(c.stop)
	return c
}

func (c *churner) fail(t *testing.T, format string, args ...any) {
	c.failures.Add(1)
	msg := fmt.Sprintf(format, args...)
	c.mu.Lock()
	if len(c.errs) < 5 {
		c.errs = append(c.errs, msg)
	}
	c.mu.Unlock()
	if !c.tolerate {
		t.Errorf("churn: %s", msg)
	}
}

func (c *churner) work(ctx context.Context, t *testing.T, w int, mine []*corev1.Pod) {
	cw := &churnWorker{w: w, rng: rand.New(rand.NewPCG(c.seed, uint64(w)))}
	for _, p := range mine {
		cw.refs = append(cw.refs, churnRef{p.Namespace, p.Name})
	}
	for ctx.Err() == nil {
		if n := c.started.Add(1); c.limit > 0 && n > c.limit {
			return
		}
		if !c.tolerate && c.failures.Load() > 0 {
			return
		}
		// Stopping does not cancel an operation under way: a write the
		// client gave up on may still be committed by the server after
		// stop returned, and after the test read the server's state.
		opCtx, opCancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
		err := c.op(opCtx, cw)
		opCancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.fail(t, "%v", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		c.ok.Add(1)
	}
}

// opTimeout bounds one operation of the churn.
const opTimeout = time.Minute

// churnRef names a pod a worker created or was given.
type churnRef struct{ ns, name string }

// churnWorker is what one worker of the churn keeps between operations.
type churnWorker struct {
	w    int
	rng  *rand.Rand
	next int        // the number in the name of the last pod it created
	refs []churnRef // the pods it may update or delete
}

// op is one random operation of cw: a create, a patch or a delete.
func (c *churner) op(ctx context.Context, cw *churnWorker) error {
	rng, w := cw.rng, cw.w
	var err error
	switch r := rng.IntN(100); {
	case r < 35 || len(cw.refs) == 0:
		cw.next++
		p := newPod(c.nss[rng.IntN(len(c.nss))], fmt.Sprintf("%sw%d-%d", c.prefix, w, cw.next), map[string]string{"worker": fmt.Sprint(w)})
		_, err = c.cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		// After a failure the pod may or may not exist: keep it, a
		// later update or delete finds out.
		if err == nil || c.tolerate {
			cw.refs = append(cw.refs, churnRef{p.Namespace, p.Name})
		}
		if err == nil {
			c.creates.Add(1)
		}
	case r < 70:
		i := rng.IntN(len(cw.refs))
		patch := fmt.Appendf(nil, `{"metadata":{"labels":{"op":"%d-%d"}}}`, w, rng.IntN(1000000))
		_, err = c.cs.CoreV1().Pods(cw.refs[i].ns).Patch(ctx, cw.refs[i].name, types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) && c.tolerate {
			cw.refs = append(cw.refs[:i], cw.refs[i+1:]...)
			err = nil
		} else if err == nil {
			c.updates.Add(1)
		}
	default:
		i := rng.IntN(len(cw.refs))
		err = c.cs.CoreV1().Pods(cw.refs[i].ns).Delete(ctx, cw.refs[i].name, metav1.DeleteOptions{})
		if err == nil || apierrors.IsNotFound(err) && c.tolerate {
			cw.refs = append(cw.refs[:i], cw.refs[i+1:]...)
		}
		if err == nil {
			c.deletes.Add(1)
		} else if apierrors.IsNotFound(err) && c.tolerate {
			err = nil
		}
	}
	return err
}

// wait waits until the workers have started limit operations.
func (c *churner) wait() { c.wg.Wait() }

// stop stops the workers and waits for them.
func (c *churner) stop() {
	c.cancel()
	c.wg.Wait()
}

func (c *churner) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("%d ok (%d creates, %d updates, %d deletes), %d failed %q",
		c.ok.Load(), c.creates.Load(), c.updates.Load(), c.deletes.Load(), c.failures.Load(), c.errs)
}

func seedPods(nss []string, n int) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range n {
		pods = append(pods, newPod(nss[i%len(nss)], fmt.Sprintf("seed-%04d", i), map[string]string{"seed": "true"}))
	}
	return pods
}

// TestChurn: 2,000 creates, updates and deletes while the informer runs
// with two handlers, one added before Run and one after sync. Afterwards
// the cache equals the server (I1), each handler's replayed events equal
// the server (I2), with no time travel (I3) and no phantom or duplicate
// Add (I4); no relist was needed (I8).
func TestChurn(t *testing.T) {
	const (
		seeded  = 300
		ops     = 2000
		workers = 8
	)
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	admin := protobufClientset(t, c.AdminConfig())
	nss := []string{uniqueName("churn-a"), uniqueName("churn-b"), uniqueName("churn-c"), uniqueName("churn-d")}
	createNamespaces(ctx, t, admin, nss...)
	pods := seedPods(nss, seeded)
	seed(ctx, t, admin, pods, 16)

	counter := newCounter(podsCollection)
	cs := clientset(t, counter.wrap(c.AdminConfig()))
	var errs it.ErrSink
	inf := newInformer(t, podSource(t, cs, metav1.NamespaceAll), typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle})
	a, b := it.NewRecorder(), it.NewRecorder()
	regA, err := inf.AddHandler(a)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	it.Run(t, inf)
	monitorRV(t, inf)
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := inf.WaitForSync(waitCtx); err != nil {
		t.Fatalf("WaitForSync: %v", err)
	}
	syncTook := time.Since(start)
	initial := len(inf.Store().List())

	churn := startChurn(t, admin, "", nss, pods, workers, ops, false)
	// b joins while the churn runs: it gets the cache's content, then
	// every later change, each once.
	time.Sleep(200 * time.Millisecond)
	regB, err := inf.AddHandler(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := typed.WaitForCacheSync(waitCtx, regA, regB); err != nil {
		t.Fatalf("handlers did not sync: %v", err)
	}
	churnStart := time.Now()
	churn.wait()
	churnTook := time.Since(churnStart)
	if t.Failed() {
		t.FailNow()
	}

	want := serverState(ctx, t, admin, metav1.NamespaceAll)
	quiet := time.Now()
	it.ConvergeTo(t, want, inf.Store(), a, b)
	convergeTook := time.Since(quiet)
	if n := it.Kinds(b)["add(initial)"]; n == 0 {
		t.Errorf("handler b (added after sync) got no initial Add")
	}

	st := inf.Status().Stats
	reqs := counter.snapshot()
	t.Logf("figures: churn: initial sync of %d pods in %v; churn %s in %v; converged %v after the last write; "+
		"handler a %v, b %v; stats %s; pods %s; %s",
		initial, syncTook.Round(time.Millisecond), churn, churnTook.Round(time.Millisecond), convergeTook.Round(time.Millisecond),
		it.Kinds(a), it.Kinds(b), statsString(st), reqs, errSummary(&errs))
	// I8: no fault, so no relist expected; allow one in case the server
	// closes a slow watcher and its resourceVersion has left the window.
	if st.Relists > 1 || reqs.Lists+reqs.WatchLists > 2 {
		t.Errorf("I8: %s, %s: want no relist", statsString(st), reqs)
	}
}

// TestAPIServerRestart: kube-apiserver is restarted (same etcd) while pods
// churn. The informer reconnects, relists at most a few times, and
// converges (I1, I2); LIST and watch requests on the pods collection are
// counted with a wrapping transport (I8).
func TestAPIServerRestart(t *testing.T) {
	const (
		seeded   = 300
		workers  = 4
		opsAhead = 300 // successful operations before and after the restart
	)
	leakcheck.Check(t)
	c := testcluster.Start(t, testcluster.Options{})
	ctx := t.Context()
	admin := protobufClientset(t, c.AdminConfig())
	nss := []string{"restart-a", "restart-b", "restart-c"}
	createNamespaces(ctx, t, admin, nss...)
	pods := seedPods(nss, seeded)
	seed(ctx, t, admin, pods, 16)

	counter := newCounter(podsCollection)
	cs := clientset(t, counter.wrap(c.AdminConfig()))
	var errs it.ErrSink
	inf := newInformer(t, podSource(t, cs, metav1.NamespaceAll), typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle})
	a, b := it.NewRecorder(), it.NewRecorder()
	if _, err := inf.AddHandler(a); err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)
	monitorRV(t, inf)
	t.Cleanup(func() {
		// A failure (this test failed once in a full run, and passed when
		// run again) says what the informer went through.
		if t.Failed() {
			t.Logf("on failure: last synced resourceVersion %s; status %+v; stats %s; pods requests %s; handler a %v, b %v; %s",
				inf.LastSyncResourceVersion(), inf.Status(), statsString(inf.Status().Stats), counter.snapshot(),
				it.Kinds(a), it.Kinds(b), errSummary(&errs))
		}
	})
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := inf.WaitForSync(waitCtx); err != nil {
		t.Fatalf("WaitForSync: %v", err)
	}
	if _, err := inf.AddHandler(b); err != nil {
		t.Fatal(err)
	}

	churn := startChurn(t, admin, "", nss, pods, workers, 0, true)
	it.Eventually(t, "churn before the restart", func() bool { return churn.ok.Load() >= opsAhead })
	before := counter.snapshot()
	statsBefore := inf.Status().Stats
	rvBefore := inf.LastSyncResourceVersion()
	restartStart := time.Now()
	c.RestartAPIServer(t)
	restartTook := time.Since(restartStart)
	okAfterRestart := churn.ok.Load()
	it.Eventually(t, "churn after the restart", func() bool { return churn.ok.Load() >= okAfterRestart+opsAhead })
	churn.stop()

	want := serverState(ctx, t, admin, metav1.NamespaceAll)
	it.ConvergeTo(t, want, inf.Store(), a, b)
	convergedAfter := time.Since(restartStart)
	if rvNum(inf.LastSyncResourceVersion()) < rvNum(rvBefore) {
		t.Errorf("I3: LastSyncResourceVersion went back from %s to %s", rvBefore, inf.LastSyncResourceVersion())
	}
	// Converged with no fault left: the watch is established again.
	if st := inf.Status(); !inf.HasSynced() || st.LastError != nil {
		t.Errorf("after the restart: HasSynced %v, Status %+v; want synced and healthy", inf.HasSynced(), st)
	}

	st := inf.Status().Stats
	reqs := counter.snapshot()
	delta := reqs.sub(before)
	relists := st.Relists - statsBefore.Relists
	t.Logf("figures: API server restart: restart took %v; converged %v after the restart began; churn %s; "+
		"pods requests before the restart: %s; since the restart: %s; stats %s (relists since the restart: %d); "+
		"handler a %v, b %v; %s",
		restartTook.Round(time.Millisecond), convergedAfter.Round(time.Millisecond), churn, before, delta,
		statsString(st), relists, it.Kinds(a), it.Kinds(b), errSummary(&errs))
	// I8: the watch cache of the new API server starts past the informer's
	// resourceVersion, so one relist is expected (410 Gone). Watch errors
	// while the server is down or starting (connection refused, 503, 429)
	// are retried from the same resourceVersion and cause no relist (they
	// did before the reflector's redesign); a relist attempt that fails
	// for such a reason and is retried counts once more.
	if relists > 3 || delta.Lists+delta.WatchLists > 3 {
		t.Errorf("I8: %d relists, %d LIST and %d streaming-list requests after the restart; want at most 3",
			relists, delta.Lists, delta.WatchLists)
	}
	if relists < 1 {
		t.Logf("note: no relist after the restart: the new API server's watch cache started at or before the informer's resourceVersion, so the re-watch went on from it")
	}

	// Phase 2: stop the API server, compact etcd, start it again. The new
	// watch cache starts past every earlier resourceVersion, so the
	// re-watch is refused with 410 Gone for sure: exactly the case of an API
	// server that restarts after its periodic compaction. The informer must
	// relist (at least once, at most a few times) and converge.
	t.Run("stop, compact, start", func(t *testing.T) {
		before := counter.snapshot()
		statsBefore := inf.Status().Stats
		start := time.Now()
		c.StopAPIServer(t)
		rev := c.CompactEtcd(t)
		c.StartAPIServer(t)
		churn := startChurn(t, admin, "p2-", nss, nil, workers, 200, true)
		churn.wait()
		want := serverState(ctx, t, admin, metav1.NamespaceAll)
		it.ConvergeTo(t, want, inf.Store(), a, b)
		took := time.Since(start)
		st := inf.Status().Stats
		delta := counter.snapshot().sub(before)
		relists := st.Relists - statsBefore.Relists
		t.Logf("figures: API server stopped, etcd compacted at %d, started: converged %v after the stop; churn %s; "+
			"pods requests since the stop: %s; stats %s (relists: %d); %s",
			rev, took.Round(time.Millisecond), churn, delta, statsString(st), relists, errSummary(&errs))
		if relists < 1 {
			t.Errorf("no relist although the informer's resourceVersion was compacted away (stats %s)", statsString(st))
		}
		if relists > 3 || delta.Lists+delta.WatchLists > 3 {
			t.Errorf("I8: %d relists, %d LIST and %d streaming-list requests after the 410; want at most 3",
				relists, delta.Lists, delta.WatchLists)
		}
	})
}
