//go:build integration

package integration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/internal/testcluster"
	"github.com/typedinformer/informer/sharding"
	"github.com/typedinformer/informer/typed"
)

// shardGate is the API server flag of sharded list and watch.
const shardGate = "--feature-gates=ShardedListAndWatch=true"

const (
	shardPods     = 3000
	shardReplicas = 3
	shardLease    = 3 * time.Second
)

// TestShardedInformersGateOn: three replicas of a sharded pod informer in
// one process against an API server with ShardedListAndWatch: the server
// filters (ShardInfo echoes each selector), the three caches split the
// pods (union = LIST, intersection empty, 1/3 +- 10% each) and the events
// (each gets exactly those of its pods); one killed (stops renewing), the
// two others cover everything once its Lease expired, no key held twice at
// any sampled moment; added back, the ranges rebalance.
func TestShardedInformersGateOn(t *testing.T) {
	leakcheck.Check(t)
	c := testcluster.Start(t, testcluster.Options{APIServerFlags: []string{shardGate}})
	shardScenario(t, c, true)
}

// TestShardedInformersGateOff is the same against the shared cluster,
// without the feature: the server ignores the selectors, and every replica
// filters on the client and says so in its status.
func TestShardedInformersGateOff(t *testing.T) {
	c := sharedCluster(t)
	leakcheck.Check(t)
	shardScenario(t, c, false)
}

// shardReplica is one replica: its sharded informer and what its handler
// holds and was told.
type shardReplica struct {
	id     string
	inf    *sharding.Informer[*corev1.Pod]
	cancel context.CancelFunc
	done   chan error

	mu       sync.Mutex
	held     map[cache.Key]types.UID
	updates  int // live updates told
	movedOut int
	deleted  int
}

func (r *shardReplica) keys() map[cache.Key]types.UID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.held)
}

func (r *shardReplica) counts() (updates, movedOut, deleted int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.updates, r.movedOut, r.deleted
}

func startShardReplica(t *testing.T, cs kubernetes.Interface, ns, id string, kill bool) *shardReplica {
	t.Helper()
	m, err := sharding.NewMembership(cs.CoordinationV1(), sharding.Options{
		Namespace: ns, Group: "pods", Identity: id,
		LeaseDuration: shardLease, RenewInterval: time.Second,
		KeepLeaseOnStop: kill,
	})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := sharding.NewInformer(podSource(t, cs, ns), m, sharding.InformerOptions[*corev1.Pod]{
		Informer: typed.Options[*corev1.Pod]{Name: "pods-" + id},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &shardReplica{id: id, inf: inf, held: map[cache.Key]types.UID{}, done: make(chan error, 1)}
	_, err = inf.AddHandler(handler.Funcs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, _ bool) {
			r.mu.Lock()
			r.held[cache.KeyOf(p)] = p.UID
			r.mu.Unlock()
		},
		UpdateFunc: func(o, p *corev1.Pod) {
			r.mu.Lock()
			r.held[cache.KeyOf(p)] = p.UID
			if o.ResourceVersion != p.ResourceVersion {
				r.updates++
			}
			r.mu.Unlock()
		},
		DeleteFunc: func(d handler.Deleted[*corev1.Pod]) {
			r.mu.Lock()
			delete(r.held, d.Key)
			if d.MovedOut {
				r.movedOut++
			} else {
				r.deleted++
			}
			r.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- inf.Run(ctx) }()
	t.Cleanup(r.stop)
	return r
}

// stop stops the replica; with a kept Lease, that is a crash as the others
// see it: it stops renewing.
func (r *shardReplica) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	if err := <-r.done; err != nil {
		panic(fmt.Sprintf("replica %s: Run: %v", r.id, err))
	}
	r.cancel = nil
}

// coverage checks the replicas against want: the union of what their
// handlers hold equals want and no key is held twice. It returns "" or
// what is wrong.
func coverage(want map[cache.Key]types.UID, rs ...*shardReplica) string {
	seen := map[cache.Key]string{}
	for _, r := range rs {
		for k, uid := range r.keys() {
			if other, ok := seen[k]; ok {
				return fmt.Sprintf("%v held by %s and %s", k, other, r.id)
			}
			if want[k] != uid {
				return fmt.Sprintf("%v held by %s is not on the server", k, r.id)
			}
			seen[k] = r.id
		}
	}
	if len(seen) != len(want) {
		return fmt.Sprintf("%d of %d pods held", len(seen), len(want))
	}
	return ""
}

// waitCoverage waits until coverage holds and every replica is active
// and has listed its range, within bound.
func waitCoverage(t *testing.T, what string, bound time.Duration, want map[cache.Key]types.UID, rs ...*shardReplica) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(bound)
	for {
		bad := coverage(want, rs...)
		if bad == "" {
			for _, r := range rs {
				if st := r.inf.Status(); !st.Active || !st.Synced {
					bad = r.id + " not active on a listed range"
				}
			}
		}
		if bad == "" {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not covered after %v: %s", what, bound, bad)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// sampler checks, every few milliseconds while it runs, that no pod is
// held by two of the live replicas.
type sampler struct {
	mu      sync.Mutex
	live    []*shardReplica
	samples atomic.Int64
	bad     atomic.Value // string
	stop    chan struct{}
	done    chan struct{}
}

func startSampler(live ...*shardReplica) *sampler {
	s := &sampler{live: live, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			s.mu.Lock()
			rs := slices.Clone(s.live)
			s.mu.Unlock()
			seen := map[cache.Key]string{}
			for _, r := range rs {
				for k := range r.keys() {
					if other, ok := seen[k]; ok && s.bad.Load() == nil {
						s.bad.Store(fmt.Sprintf("%v held by %s and %s", k, other, r.id))
					}
					seen[k] = r.id
				}
			}
			s.samples.Add(1)
		}
	}()
	return s
}

func (s *sampler) set(live ...*shardReplica) {
	s.mu.Lock()
	s.live = live
	s.mu.Unlock()
}

func (s *sampler) finish(t *testing.T) {
	t.Helper()
	close(s.stop)
	<-s.done
	if bad, _ := s.bad.Load().(string); bad != "" {
		t.Errorf("sampled double ownership: %s", bad)
	}
	t.Logf("ownership sampled %d times, never twice", s.samples.Load())
}

// serverPodUIDs lists ns's pods directly: key to UID.
func serverPodUIDs(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) map[cache.Key]types.UID {
	t.Helper()
	l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[cache.Key]types.UID, len(l.Items))
	for i := range l.Items {
		out[cache.KeyOf(&l.Items[i])] = l.Items[i].UID
	}
	return out
}

// touchPods updates every pod once (a label), with workers.
func touchPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, keys []cache.Key, workers int) {
	t.Helper()
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	patch := []byte(`{"metadata":{"labels":{"touched":"yes"}}}`)
	for _, k := range keys {
		g.Go(func() error {
			_, err := cs.CoreV1().Pods(ns).Patch(ctx, k.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// checkShares checks that each replica holds 1/3 +- 10% of n and logs the
// shares.
func checkShares(t *testing.T, what string, n int, rs ...*shardReplica) {
	t.Helper()
	for _, r := range rs {
		got := len(r.keys())
		share := float64(got) / float64(n)
		want := 1 / float64(len(rs))
		t.Logf("%s: %s holds %d of %d pods (%.1f%%), range %v", what, r.id, got, n, 100*share, r.inf.Status().Range())
		if share < want*0.9 || share > want*1.1 {
			t.Errorf("%s: %s holds %.1f%% of the pods, want %.1f%% +- 10%%", what, r.id, 100*share, 100*want)
		}
		// The handlers hear of the range's objects as the cache takes
		// them: once the range's list is in, both hold the same.
		var cached int
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			cached = r.inf.Informer().Store().Len()
			if cached == got || time.Now().After(deadline) {
				break
			}
		}
		if cached != got {
			t.Errorf("%s: %s's handlers hold %d pods, its cache %d", what, r.id, got, cached)
		}
	}
}
