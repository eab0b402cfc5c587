package manager_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/factory"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/manager"
	"github.com/typedinformer/informer/reconcile"
)

// fastLease is a Lease that changes hands in well under a second.
func fastLease(cs *fake.Clientset, id string, cold bool) *manager.LeaderElection {
	return &manager.LeaderElection{
		Client: cs, Namespace: "kube-system", Name: "pods-controller", Identity: id,
		LeaseDuration: time.Second, RenewDeadline: 800 * time.Millisecond, RetryPeriod: 50 * time.Millisecond,
		ColdStandby: cold,
	}
}

// replica is one manager of a controller of pods over the shared fake
// clientset, counting its reconciles and its LIST requests of pods.
type replica struct {
	m          *manager.Manager
	inf        interface{ HasSynced() bool }
	reconciles atomic.Int64
	done       chan error
	cancel     context.CancelFunc
	once       sync.Once
}

func newReplica(t *testing.T, cs *fake.Clientset, le *manager.LeaderElection) *replica {
	t.Helper()
	f, err := factory.NewForClientsets([]any{cs}, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := manager.New(manager.Options{Factory: f, LeaderElection: le})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := manager.InformerFor[*corev1.Pod](m, factory.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{m: m, inf: pods, done: make(chan error, 1)}
	ctrl, err := reconcile.New(pods, reconcile.Func(func(context.Context, cache.Key) error {
		r.reconciles.Add(1)
		return nil
	}), reconcile.Options[*corev1.Pod]{Name: "pods-" + le.Identity})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AddController(ctrl); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- m.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *replica) stop(t *testing.T) {
	t.Helper()
	r.once.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("Run = %v, want nil", err)
			}
		case <-time.After(time.Minute):
			t.Error("Run did not return after cancel")
		}
	})
}

// countLists counts the clientset's LIST requests of pods.
func countLists(cs *fake.Clientset) *atomic.Int64 {
	var n atomic.Int64
	cs.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		n.Add(1)
		return false, nil, nil
	})
	return &n
}

// Warm standby: the follower syncs its cache but does not reconcile;
// when the leader stops (and releases the Lease), the follower takes it
// and reconciles from its synced cache without one more LIST.
func TestLeaderElectionWarmStandby(t *testing.T) {
	leakcheck.Check(t)
	cs := fake.NewClientset(it.Pod("ns", "a", nil), it.Pod("ns", "b", nil))
	lists := countLists(cs)
	first := newReplica(t, cs, fastLease(cs, "first", false))
	it.Eventually(t, "the first replica leads and reconciles", func() bool { return first.reconciles.Load() == 2 })
	second := newReplica(t, cs, fastLease(cs, "second", false))
	it.Eventually(t, "the follower's cache syncs", second.inf.HasSynced)
	if lead, _ := second.m.Leader(); lead {
		t.Fatal("two leaders")
	}
	if n := second.reconciles.Load(); n != 0 {
		t.Errorf("the follower reconciled %d times", n)
	}
	listsBefore := lists.Load()
	first.stop(t)
	it.Eventually(t, "the follower leads and reconciles", func() bool { return second.reconciles.Load() == 2 })
	if n := lists.Load() - listsBefore; n != 0 {
		t.Errorf("%d LIST requests at the promotion, want 0: the follower's cache was warm", n)
	}
	if lead, since := second.m.Leader(); !lead || since.IsZero() {
		t.Errorf("Leader() = %v, %v after the promotion", lead, since)
	}
}

// Cold standby: the follower lists nothing until it leads.
func TestLeaderElectionColdStandby(t *testing.T) {
	leakcheck.Check(t)
	cs := fake.NewClientset(it.Pod("ns", "a", nil))
	lists := countLists(cs)
	first := newReplica(t, cs, fastLease(cs, "first", false))
	it.Eventually(t, "the first replica reconciles", func() bool { return first.reconciles.Load() == 1 })
	listsBefore := lists.Load()
	second := newReplica(t, cs, fastLease(cs, "second", true))
	time.Sleep(300 * time.Millisecond) // a few retry periods: the follower must stay idle
	if second.inf.HasSynced() || lists.Load() != listsBefore {
		t.Errorf("a cold follower synced %v, listed %d times", second.inf.HasSynced(), lists.Load()-listsBefore)
	}
	first.stop(t)
	it.Eventually(t, "the cold follower leads, lists and reconciles", func() bool { return second.reconciles.Load() == 1 })
	if lists.Load() == listsBefore {
		t.Error("the cold follower reconciled without listing")
	}
}

// Without permission on Leases, Run fails at once with the Forbidden
// answer and what to grant, instead of waiting to lead forever.
func TestLeaderElectionForbidden(t *testing.T) {
	leakcheck.Check(t)
	cs := fake.NewClientset()
	cs.PrependReactor("*", "leases", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "pods-controller", errors.New("RBAC: access denied"))
	})
	m, err := manager.New(manager.Options{LeaderElection: fastLease(cs, "lonely", false)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(t.Context()) }()
	select {
	case err := <-done:
		if !apierrors.IsForbidden(err) {
			t.Errorf("Run = %v, want a Forbidden error", err)
		}
		t.Log(err)
	case <-time.After(time.Minute):
		t.Fatal("Run waited for a Lease it may not read")
	}
}

// A LeaderElection without a client or a Lease name is refused by New.
func TestLeaderElectionRefused(t *testing.T) {
	cs := fake.NewClientset()
	for name, le := range map[string]*manager.LeaderElection{
		"no client":      {Namespace: "ns", Name: "x"},
		"no name":        {Client: cs, Namespace: "ns"},
		"no ns":          {Client: cs, Name: "x"},
		"renew >= lease": {Client: cs, Namespace: "ns", Name: "x", LeaseDuration: time.Second, RenewDeadline: time.Second},
	} {
		if _, err := manager.New(manager.Options{LeaderElection: le}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
