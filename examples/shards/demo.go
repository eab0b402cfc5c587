package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/sharding"
	"github.com/typedinformer/informer/source"
)

// shard is one running shard and the pods its handler holds.
type shard struct {
	id     string
	inf    *sharding.Informer[*corev1.Pod]
	cancel context.CancelFunc
	done   chan error

	mu      sync.Mutex
	held    map[cache.Key]bool
	updates int
}

func (s *shard) count() (held, updates int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held), s.updates
}

func (s *shard) stop() error {
	if s.cancel == nil {
		return nil
	}
	s.cancel()
	s.cancel = nil
	return <-s.done
}

// run seeds the pods, runs the shards and prints their shares.
func run(ctx context.Context, cs kubernetes.Interface, cfg config, out io.Writer) error {
	if err := seed(ctx, cs, cfg); err != nil {
		return err
	}
	fmt.Fprintf(out, "%d pods in namespace %s\n", cfg.pods, cfg.namespace)
	shards := make([]*shard, cfg.replicas)
	defer func() {
		for _, s := range shards {
			if s != nil {
				_ = s.stop()
			}
		}
	}()
	for i := range shards {
		s, err := startShard(ctx, cs, cfg, fmt.Sprintf("shard-%d", i), i == 1)
		if err != nil {
			return err
		}
		shards[i] = s
	}
	start := time.Now()
	if err := waitCovered(ctx, cfg.pods, shards...); err != nil {
		return err
	}
	fmt.Fprintf(out, "\n%d shards cover all pods %v after start:\n", len(shards), time.Since(start).Round(time.Millisecond))
	printShares(out, cfg.pods, shards...)

	// Every pod updated once: each shard hears of its own pods only.
	before, wire, filtered := make([]int, len(shards)), make([]int, len(shards)), make([]int, len(shards))
	for i, s := range shards {
		_, before[i] = s.count()
		st := s.inf.Status().Informer
		wire[i] = st.Stats.Events + st.Shard.Filtered
		filtered[i] = st.Shard.Filtered
	}
	if err := touch(ctx, cs, cfg); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nevery pod updated once (%d events unsharded):\n", cfg.pods)
	for i, s := range shards {
		if err := waitFor(ctx, func() bool { h, u := s.count(); return u-before[i] >= h }); err != nil {
			return err
		}
		_, u := s.count()
		st := s.inf.Status().Informer
		fmt.Fprintf(out, "  %s: %d events (%.1f%%); its watch delivered %d, %d dropped on the client\n",
			s.id, u-before[i], 100*float64(u-before[i])/float64(cfg.pods), st.Stats.Events+st.Shard.Filtered-wire[i], st.Shard.Filtered-filtered[i])
	}

	if len(shards) > 1 {
		victim := shards[1]
		fmt.Fprintf(out, "\n%s stops renewing its Lease (lease %v)...\n", victim.id, cfg.lease)
		killed := time.Now()
		if err := victim.stop(); err != nil {
			return err
		}
		rest := slices.Delete(slices.Clone(shards), 1, 2)
		if err := waitCovered(ctx, cfg.pods, rest...); err != nil {
			return err
		}
		fmt.Fprintf(out, "the other shards cover all pods %v later:\n", time.Since(killed).Round(time.Millisecond))
		printShares(out, cfg.pods, rest...)

		fmt.Fprintf(out, "\n%s comes back...\n", victim.id)
		back, err := startShard(ctx, cs, cfg, victim.id, false)
		if err != nil {
			return err
		}
		shards[1] = back
		restarted := time.Now()
		if err := waitCovered(ctx, cfg.pods, shards...); err != nil {
			return err
		}
		fmt.Fprintf(out, "rebalanced %v later:\n", time.Since(restarted).Round(time.Millisecond))
		printShares(out, cfg.pods, shards...)
	}
	return nil
}

func printShares(out io.Writer, n int, shards ...*shard) {
	for _, s := range shards {
		st := s.inf.Status()
		held, _ := s.count()
		filter := "server-side"
		if st.Informer.Shard.ClientFiltering {
			filter = "client-side (the server ignored the selector)"
		}
		gap := "no handoff"
		if st.HandoffGapKnown {
			gap = "handoff gap " + st.HandoffGap.Round(time.Millisecond).String()
		}
		fmt.Fprintf(out, "  %s: %5d pods (%5.1f%%) range %v %s, %s\n", s.id, held, 100*float64(held)/float64(n), st.Range(), filter, gap)
	}
}

// startShard starts one shard; kill makes its stop look like a crash.
func startShard(ctx context.Context, cs kubernetes.Interface, cfg config, id string, kill bool) (*shard, error) {
	m, err := sharding.NewMembership(cs.CoordinationV1(), sharding.Options{
		Namespace: cfg.namespace, Group: "pods", Identity: id,
		LeaseDuration: cfg.lease, RenewInterval: cfg.lease / 3, KeepLeaseOnStop: kill,
	})
	if err != nil {
		return nil, err
	}
	src, err := source.FromClient[*corev1.Pod](cs.CoreV1().Pods(cfg.namespace))
	if err != nil {
		return nil, err
	}
	inf, err := sharding.NewInformer(src, m, sharding.InformerOptions[*corev1.Pod]{})
	if err != nil {
		return nil, err
	}
	s := &shard{id: id, inf: inf, held: map[cache.Key]bool{}, done: make(chan error, 1)}
	_, err = inf.AddHandler(handler.Funcs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, _ bool) { s.mu.Lock(); s.held[cache.KeyOf(p)] = true; s.mu.Unlock() },
		UpdateFunc: func(o, p *corev1.Pod) {
			s.mu.Lock()
			if o.Labels["touched"] != p.Labels["touched"] {
				s.updates++ // an update of touch, not a relist's
			}
			s.mu.Unlock()
		},
		DeleteFunc: func(d handler.Deleted[*corev1.Pod]) { s.mu.Lock(); delete(s.held, d.Key); s.mu.Unlock() },
	})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	go func() { s.done <- inf.Run(rctx) }()
	return s, nil
}

// waitCovered waits until the shards hold n pods between them, each once,
// and all are active.
func waitCovered(ctx context.Context, n int, shards ...*shard) error {
	return waitFor(ctx, func() bool {
		seen := map[cache.Key]bool{}
		for _, s := range shards {
			// Active, and the informer has the range's list: only then
			// does its status say whether the server applied the shard
			// selector.
			if st := s.inf.Status(); !st.Active || !st.Synced {
				return false
			}
			s.mu.Lock()
			keys := slices.Collect(maps.Keys(s.held))
			s.mu.Unlock()
			for _, k := range keys {
				if seen[k] {
					return false
				}
				seen[k] = true
			}
		}
		return len(seen) == n
	})
}

// waitFor polls cond until it holds, for at most two minutes.
func waitFor(ctx context.Context, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// seed creates the namespace and the pods (with UIDs, which an API server
// replaces by its own and a fake keeps).
func seed(ctx context.Context, cs kubernetes.Interface, cfg config) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cfg.namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.workers)
	for i := range cfg.pods {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: cfg.namespace, Name: fmt.Sprintf("pod-%04d", i),
				UID: types.UID(fmt.Sprintf("%016x%016x", rng.Uint64(), rng.Uint64()))},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
		}
		g.Go(func() error {
			_, err := cs.CoreV1().Pods(cfg.namespace).Create(gctx, p, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
	}
	return g.Wait()
}

// touch updates every pod once.
func touch(ctx context.Context, cs kubernetes.Interface, cfg config) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.workers)
	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{"touched":"%d"}}}`, time.Now().UnixNano()))
	for i := range cfg.pods {
		g.Go(func() error {
			_, err := cs.CoreV1().Pods(cfg.namespace).Patch(gctx, fmt.Sprintf("pod-%04d", i), types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		})
	}
	return g.Wait()
}
