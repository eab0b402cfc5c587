//go:build integration

package integration

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/internal/shardtest"
	"github.com/typedinformer/informer/internal/testcluster"
	"github.com/typedinformer/informer/sharding"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// The environment of a replica process (replicaProcess): this test binary
// run again, as one replica of a sharded pod informer.
const (
	replicaEnv           = "TYPEDINFORMER_TEST_REPLICA" // its identity
	replicaKubeconfigEnv = "TYPEDINFORMER_TEST_REPLICA_KUBECONFIG"
	replicaNamespaceEnv  = "TYPEDINFORMER_TEST_REPLICA_NAMESPACE"
)

// replicaProcess runs one replica until its stdin closes, writing to
// stdout a line per handler call, at the call's start ("call <unix nanos>
// <ns>/<name> <rv> <moved out>"), its status every 50ms ("status <active>
// <synced> <objects> <range start> <range end>") and its errors ("error
// <text>"). After a SIGUSR1 its handler sticks in its next call for good.
// It returns the process's exit code.
func replicaProcess(id string) int {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv(replicaKubeconfigEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ns := os.Getenv(replicaNamespaceEnv)
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	emit := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
	onErr := func(err error) { emit("error %s", strings.ReplaceAll(err.Error(), "\n", " ")) }
	m, err := sharding.NewMembership(cs.CoordinationV1(), sharding.Options{
		Namespace: ns, Group: "pods", Identity: id, LeaseDuration: shardLease, RenewInterval: time.Second, ErrorHandler: onErr,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	src, err := source.FromClient[*corev1.Pod](cs.CoreV1().Pods(ns))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	inf, err := sharding.NewInformer(src, m, sharding.InformerOptions[*corev1.Pod]{
		Informer: typed.Options[*corev1.Pod]{Name: "pods-" + id, ErrorHandler: onErr}, ErrorHandler: onErr,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	stick := make(chan os.Signal, 1)
	signal.Notify(stick, syscall.SIGUSR1)
	var stuck atomic.Bool
	go func() {
		<-stick
		stuck.Store(true)
	}()
	call := func(p *corev1.Pod, moved bool) {
		emit("call %d %s/%s %s %v", time.Now().UnixNano(), p.Namespace, p.Name, p.ResourceVersion, moved)
		time.Sleep(time.Millisecond) // a handler's work: updates queue behind it
		if stuck.Load() {
			emit("stuck %s/%s", p.Namespace, p.Name)
			select {} // for good: the process ends with it
		}
	}
	if _, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{
		AddFunc:    func(p *corev1.Pod, _ bool) { call(p, false) },
		UpdateFunc: func(_, p *corev1.Pod) { call(p, false) },
		DeleteFunc: func(d handler.Deleted[*corev1.Pod]) {
			if d.Object != nil {
				call(d.Object, d.MovedOut)
			}
		},
	}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	go func() {
		for ctx.Err() == nil {
			st := inf.Status()
			emit("status %v %v %d %d %d", st.Active, st.Synced, st.Objects, st.RangeStart, st.RangeEnd)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	if err := inf.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// replicaProc is a replica process as the test sees it.
type replicaProc struct {
	id    string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed once its stdout ended

	mu      sync.Mutex
	status  [3]int // active, synced, objects
	rng     sharding.Range
	stuck   bool
	errors  []string
	stopped bool
}

// timedCall is a handler call and when it began, in Unix nanoseconds by
// the clock the replica processes share.
type timedCall struct {
	at int64
	shardtest.Call
}

// callLog gathers the handler calls of replica processes.
type callLog struct {
	mu    sync.Mutex
	calls []timedCall
}

func (l *callLog) add(c timedCall) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, c)
}

// ordered returns the calls in the order they began.
func (l *callLog) ordered() *shardtest.Calls {
	l.mu.Lock()
	calls := slices.Clone(l.calls)
	l.mu.Unlock()
	slices.SortStableFunc(calls, func(a, b timedCall) int { return cmp.Compare(a.at, b.at) })
	var out shardtest.Calls
	for _, c := range calls {
		out.AddCall(c.Call)
	}
	return &out
}

// handled counts the keys of want that a replica other than skip handled
// at want's version or later.
func (l *callLog) handled(want map[cache.Key]int, skip string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[cache.Key]bool{}
	for _, c := range l.calls {
		if rv, ok := want[c.Key]; ok && c.Replica != skip && !c.MovedOut && c.RV >= rv {
			seen[c.Key] = true
		}
	}
	return len(seen)
}

// startReplicaProc starts replica id of the pod informer of ns, adding its
// calls to log.
func startReplicaProc(t *testing.T, kubeconfig, ns, id string, log *callLog) *replicaProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), replicaEnv+"="+id, replicaKubeconfigEnv+"="+kubeconfig, replicaNamespaceEnv+"="+ns)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &replicaProc{id: id, cmd: cmd, stdin: stdin, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.line(sc.Text(), log)
		}
	}()
	t.Cleanup(func() { p.stop(t) })
	return p
}

func (p *replicaProc) line(s string, log *callLog) {
	kind, rest, _ := strings.Cut(s, " ")
	f := strings.Fields(rest)
	switch {
	case kind == "call" && len(f) == 4:
		at, _ := strconv.ParseInt(f[0], 10, 64)
		ns, name, _ := strings.Cut(f[1], "/")
		rv, _ := strconv.Atoi(f[2])
		log.add(timedCall{at, shardtest.Call{Replica: p.id, Key: cache.Key{Namespace: ns, Name: name}, RV: rv, MovedOut: f[3] == "true"}})
	case kind == "status" && len(f) == 5:
		n, _ := strconv.Atoi(f[2])
		start, _ := strconv.ParseUint(f[3], 10, 64)
		end, _ := strconv.ParseUint(f[4], 10, 64)
		p.mu.Lock()
		p.status = [3]int{b2i(f[0] == "true"), b2i(f[1] == "true"), n}
		p.rng = sharding.Range{Start: start, End: end}
		p.mu.Unlock()
	case kind == "stuck":
		p.mu.Lock()
		p.stuck = true
		p.mu.Unlock()
	case kind == "error":
		p.mu.Lock()
		p.errors = append(p.errors, rest)
		p.mu.Unlock()
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// holds returns the objects of an active replica with a listed range, or
// -1.
func (p *replicaProc) holds() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.status[0] == 0 || p.status[1] == 0 {
		return -1
	}
	return p.status[2]
}

func (p *replicaProc) errs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.errors)
}

// signal sends sig to the process.
func (p *replicaProc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%s: %v: %v", p.id, sig, err)
	}
}

// stop closes the replica's stdin, so that it stops as a replica told to
// stop does, and waits for it, killing it after a minute.
func (p *replicaProc) stop(t *testing.T) {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	p.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.stdin.Close()
	timer := time.AfterFunc(time.Minute, func() { _ = p.cmd.Process.Kill() })
	defer timer.Stop()
	<-p.done
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("replica %s: %v", p.id, err)
	}
}

// waitHolds waits, up to bound, until the replicas given are active on a
// listed range and hold n objects together; it returns how long it took.
func waitHolds(t *testing.T, what string, bound time.Duration, n int, ps ...*replicaProc) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		sum := 0
		for _, p := range ps {
			h := p.holds()
			if h < 0 {
				sum = -1
				break
			}
			sum += h
		}
		if sum == n {
			return time.Since(start)
		}
		if time.Since(start) > bound {
			t.Fatalf("%s: not after %v (%d of %d held)", what, bound, sum, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// replicaCluster starts a cluster with ShardedListAndWatch, seeds pods
// pods in a namespace of its own named after prefix, and writes a
// kubeconfig for replica processes.
func replicaCluster(t *testing.T, prefix string, pods int) (admin kubernetes.Interface, ns, kubeconfig string) {
	t.Helper()
	c := testcluster.Start(t, testcluster.Options{APIServerFlags: []string{shardGate}})
	admin = protobufClientset(t, c.AdminConfig())
	ns = uniqueName(prefix)
	createNamespaces(t.Context(), t, admin, ns)
	seed(t.Context(), t, admin, seedPods([]string{ns}, pods), 16)
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := c.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	return admin, ns, kubeconfig
}

// TestPausedReplicaFencedRealServer: three replicas of a sharded pod
// informer, each a process of its own, against an API server with
// ShardedListAndWatch, while the pods change all the time. One replica is
// frozen (SIGSTOP) for twice its lease duration and more, with updates
// queued in it, then resumed (SIGCONT), three times. The two others take
// its range over while it is frozen; once resumed, it delivers none of
// what it had queued, says that its Lease lapsed, gives its range up and
// rejoins. No update is handled by a replica that no longer owned the
// object, over every cycle (the calls of the three, ordered by the clock
// they share).
func TestPausedReplicaFencedRealServer(t *testing.T) {
	const pods = 600
	admin, ns, kubeconfig := replicaCluster(t, "paused", pods)
	ctx := t.Context()
	var log callLog
	ps := make([]*replicaProc, 3)
	for i := range ps {
		ps[i] = startReplicaProc(t, kubeconfig, ns, fmt.Sprintf("replica-%d", i), &log)
	}
	d := waitHolds(t, "three replicas to split the pods", time.Minute, pods, ps...)
	t.Logf("three replica processes hold the %d pods %v after their start", pods, d.Round(time.Millisecond))

	// Churn: two writers update random pods throughout.
	seedN := rand.Uint64()
	t.Logf("churn seed %d", seedN)
	churnCtx, stopChurn := context.WithCancel(ctx)
	var churn sync.WaitGroup
	var writes [2]int
	for w := range 2 {
		churn.Go(func() {
			rng := rand.New(rand.NewPCG(seedN, uint64(w)))
			for churnCtx.Err() == nil {
				name := fmt.Sprintf("seed-%04d", rng.IntN(pods))
				patch := fmt.Appendf(nil, `{"metadata":{"labels":{"churn":"%d"}}}`, rng.IntN(1e6))
				if _, err := admin.CoreV1().Pods(ns).Patch(churnCtx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err == nil {
					writes[w]++
				}
			}
		})
	}
	defer func() { stopChurn(); churn.Wait() }()

	paused, others := ps[1], []*replicaProc{ps[0], ps[2]}
	const cycles = 3
	freeze := 2*shardLease + 2*time.Second
	for cycle := range cycles {
		before := len(paused.errs())
		paused.signal(t, syscall.SIGSTOP)
		start := time.Now()
		took := waitHolds(t, "the two others to take the frozen replica's range over", time.Minute, pods, others...)
		time.Sleep(freeze - time.Since(start))
		paused.signal(t, syscall.SIGCONT)
		back := waitHolds(t, "the three to split the pods again", time.Minute, pods, ps...)
		lapsed := 0
		for _, e := range paused.errs()[before:] {
			if strings.Contains(e, "lapsed") {
				lapsed++
			}
		}
		t.Logf("cycle %d: frozen %v; the others held everything %v after the freeze; after the resume the three split again in %v; lapse reported %d time(s)",
			cycle, freeze, took.Round(time.Millisecond), back.Round(time.Millisecond), lapsed)
		if lapsed == 0 {
			t.Errorf("cycle %d: the resumed replica did not report its Lease lapsed; its errors: %q", cycle, paused.errs()[before:])
		}
	}
	stopChurn()
	churn.Wait()
	for _, p := range ps {
		p.stop(t)
	}

	rec := log.ordered()
	stale := rec.Stale()
	t.Logf("%d pod writes, %d handler calls over %d freeze cycles; %d handled by a replica that no longer owned the object", writes[0]+writes[1], rec.Len(), cycles, len(stale))
	if len(stale) > 0 {
		t.Errorf("%d calls by a replica that no longer owned the object; the first: %v", len(stale), stale[:min(5, len(stale))])
	}
}

// touchAll updates every pod of ns once and returns the resourceVersion
// each update wrote.
func touchAll(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, pods []corev1.Pod, label string) map[cache.Key]int {
	t.Helper()
	var mu sync.Mutex
	out := map[cache.Key]int{}
	var g sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range pods {
		p := &pods[i]
		g.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			patch := fmt.Appendf(nil, `{"metadata":{"labels":{"touch":%q}}}`, label)
			got, err := cs.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			rv, _ := strconv.Atoi(got.ResourceVersion)
			mu.Lock()
			out[cache.KeyOf(got)] = rv
			mu.Unlock()
		})
	}
	g.Wait()
	return out
}

// handledOf counts the writes of want that some replica other than skip
// handled, waiting up to bound for them, and returns the count.
func handledOf(t *testing.T, bound time.Duration, want map[cache.Key]int, log *callLog, skip string) int {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		n := log.handled(want, skip)
		if n == len(want) || time.Now().After(deadline) {
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStuckReplicaRealServer: two replica processes split the pods; one's
// handler then sticks in a call for good, and a third replica joins. The
// stuck replica hands the part of its range that moves over within its
// HandoffTimeout, so every change of a pod outside the range it keeps is
// handled; told to stop, it returns within its StopTimeout (the call is
// left behind) and gives its range up, and the two others handle every
// change after.
func TestStuckReplicaRealServer(t *testing.T) {
	const pods = 300
	admin, ns, kubeconfig := replicaCluster(t, "stuck", pods)
	ctx := t.Context()
	list, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var log callLog
	r0 := startReplicaProc(t, kubeconfig, ns, "replica-0", &log)
	r1 := startReplicaProc(t, kubeconfig, ns, "replica-1", &log)
	waitHolds(t, "two replicas to split the pods", time.Minute, pods, r0, r1)

	r0.signal(t, syscall.SIGUSR1)
	touchAll(ctx, t, admin, ns, list.Items[:1], "stick") // a call for r0 to stick in, if the pod is its
	touchAll(ctx, t, admin, ns, list.Items, "stick")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		r0.mu.Lock()
		stuck := r0.stuck
		r0.mu.Unlock()
		if stuck {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("replica-0's handler did not stick")
		}
	}
	joined := time.Now()
	r2 := startReplicaProc(t, kubeconfig, ns, "replica-2", &log)
	took := waitHolds(t, "three replicas to split the pods with replica-0's handler stuck", time.Minute, pods, r0, r1, r2)
	t.Logf("replica-2 joined; the three hold their ranges %v later, replica-0's handler stuck", took.Round(time.Millisecond))

	r0.mu.Lock()
	kept := r0.rng
	r0.mu.Unlock()
	writes := touchAll(ctx, t, admin, ns, list.Items, "after-join")
	outside := map[cache.Key]int{}
	for i := range list.Items {
		p := &list.Items[i]
		if !kept.Contains(sharding.ByUID.Hash(p)) {
			outside[cache.KeyOf(p)] = writes[cache.KeyOf(p)]
		}
	}
	got := handledOf(t, time.Minute, outside, &log, "replica-0")
	t.Logf("%d pod changes after the join: %d outside replica-0's range %v, %d of them handled by the others", len(writes), len(outside), kept, got)
	if got != len(outside) {
		t.Errorf("%d of the %d changes outside the stuck replica's range were handled, want all", got, len(outside))
	}

	stopped := time.Now()
	r0.stop(t)
	t.Logf("replica-0 exited %v after it was told to stop (StopTimeout %v); %v after replica-2 joined", time.Since(stopped).Round(time.Millisecond), typed.DefaultStopTimeout, time.Since(joined).Round(time.Millisecond))
	waitHolds(t, "the two others to hold every pod", time.Minute, pods, r1, r2)
	writes = touchAll(ctx, t, admin, ns, list.Items, "after-stop")
	if got := handledOf(t, time.Minute, writes, &log, "replica-0"); got != len(writes) {
		t.Errorf("after the stuck replica stopped, %d of %d changes were handled, want all", got, len(writes))
	}
	if stuckErr := slices.ContainsFunc(r0.errs(), func(e string) bool {
		return strings.Contains(e, "handler stuck") || strings.Contains(e, typed.ErrHandlerStuck.Error())
	}); !stuckErr {
		t.Errorf("replica-0's errors do not name its stuck handler: %q", r0.errs())
	}
}
