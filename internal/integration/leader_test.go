//go:build integration

package integration

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/factory"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/manager"
	"github.com/typedinformer/informer/reconcile"
	"github.com/typedinformer/informer/typed"
)

// leReplica is one replica of a ConfigMap controller under leader
// election, with its own request counter.
type leReplica struct {
	m       *manager.Manager
	inf     *typed.Informer[*corev1.ConfigMap]
	counter *requestCounter
	seen    sync.Map // keys reconciled
	n       atomic.Int64
	first   atomic.Int64 // unix nanos of the first reconcile
	cancel  context.CancelFunc
	done    chan error
	once    sync.Once
}

func newLeReplica(t *testing.T, cfgNS string, id string, cold bool, mk func(*requestCounter) (*factory.Factory, *manager.LeaderElection)) *leReplica {
	t.Helper()
	r := &leReplica{counter: newCounter(regexp.MustCompile(`^/api/v1/namespaces/[^/]+/configmaps$`)), done: make(chan error, 1)}
	f, le := mk(r.counter)
	le.Identity, le.ColdStandby = id, cold
	m, err := manager.New(manager.Options{Factory: f, LeaderElection: le})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := manager.InformerFor[*corev1.ConfigMap](m, factory.Scope{Namespace: cfgNS})
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := reconcile.New(inf, reconcile.Func(func(_ context.Context, k cache.Key) error {
		r.first.CompareAndSwap(0, time.Now().UnixNano())
		if _, dup := r.seen.LoadOrStore(k, true); !dup {
			r.n.Add(1)
		}
		return nil
	}), reconcile.Options[*corev1.ConfigMap]{Name: "configmaps-" + id, Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AddController(ctrl); err != nil {
		t.Fatal(err)
	}
	r.m, r.inf = m, inf
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- m.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *leReplica) stop(t *testing.T) {
	r.once.Do(func() {
		r.cancel()
		if err := <-r.done; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	})
}

// promotion waits for r to lead and to reconcile all n objects, and
// returns how long after acquiring the Lease its first reconcile and its
// last came, and its list requests (LIST and streaming) since before.
func (r *leReplica) promotion(t *testing.T, n int, before counts) (first, all time.Duration, lists int) {
	t.Helper()
	it.Eventually(t, "the follower leads", func() bool { lead, _ := r.m.Leader(); return lead })
	it.Eventually(t, "the new leader reconciles every object", func() bool { return r.n.Load() == int64(n) })
	done := time.Now()
	_, since := r.m.Leader()
	d := r.counter.snapshot().sub(before)
	return time.Unix(0, r.first.Load()).Sub(since), done.Sub(since), d.Lists + d.WatchLists
}

// TestLeaderElectionRealServer: three replicas of a controller of 2,000
// ConfigMaps under one Lease on kube-apiserver. A warm follower, whose
// informer listed and watched while it waited, reconciles as soon as it
// takes the Lease, with no LIST; a cold follower lists first. Both times
// are logged (docs/reconcile.md shows them); the warm promotion must make
// 0 LIST requests.
func TestLeaderElectionRealServer(t *testing.T) {
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	admin := protobufClientset(t, c.AdminConfig())
	ns := uniqueName("leader")
	createNamespaces(ctx, t, admin, ns)
	const n = 2000
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			_, err := admin.CoreV1().ConfigMaps(ns).Create(gctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i)},
				Data: map[string]string{"k": fmt.Sprint(i)}}, metav1.CreateOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded %d ConfigMaps in %v", n, time.Since(start).Round(time.Millisecond))

	mk := func(counter *requestCounter) (*factory.Factory, *manager.LeaderElection) {
		f, err := factory.New(counter.wrap(c.AdminConfig()), factory.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return f, &manager.LeaderElection{
			Client: admin, Namespace: ns, Name: "configmap-controller",
			LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 200 * time.Millisecond,
		}
	}
	first := newLeReplica(t, ns, "first", false, mk)
	it.Eventually(t, "the first replica reconciles everything", func() bool { return first.n.Load() == n })

	warm := newLeReplica(t, ns, "warm", false, mk)
	if err := warm.inf.WaitForSync(waitCtxFor(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	if warm.n.Load() != 0 {
		t.Fatalf("the follower reconciled %d objects while the first replica led", warm.n.Load())
	}
	warmBefore := warm.counter.snapshot()
	first.stop(t)
	wFirst, wAll, wLists := warm.promotion(t, n, warmBefore)
	if wLists != 0 {
		t.Errorf("warm promotion made %d list requests (LIST or streaming), want 0", wLists)
	}

	cold := newLeReplica(t, ns, "cold", true, mk)
	time.Sleep(time.Second) // retry periods: a cold follower lists nothing
	if got := cold.counter.snapshot(); got.Lists+got.WatchLists != 0 {
		t.Errorf("a cold follower listed before it led: %s", got)
	}
	warm.stop(t)
	cFirst, cAll, cLists := cold.promotion(t, n, counts{})
	if cLists == 0 {
		t.Error("the cold follower reconciled without a list")
	}
	t.Logf("promotion after the leader stopped, %d ConfigMaps: warm standby: first reconcile %v after the Lease, all %v, %d lists; "+
		"cold standby: first reconcile %v, all %v, %d lists",
		n, wFirst.Round(time.Millisecond), wAll.Round(time.Millisecond), wLists,
		cFirst.Round(time.Millisecond), cAll.Round(time.Millisecond), cLists)
}
