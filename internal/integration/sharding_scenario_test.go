//go:build integration

package integration

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/testcluster"
	"github.com/typedinformer/informer/typed"
)

// shardScenario is the sharded informers' scenario on c, whose API server
// filters shards if gateOn and ignores the selectors otherwise.
func shardScenario(t *testing.T, c *testcluster.Cluster, gateOn bool) {
	ctx := t.Context()
	admin := protobufClientset(t, c.AdminConfig())
	ns := uniqueName("shards")
	createNamespaces(ctx, t, admin, ns)
	took := seed(ctx, t, admin, seedPods([]string{ns}, shardPods), 16)
	want := serverPodUIDs(ctx, t, admin, ns)
	t.Logf("seeded %d pods in %v", len(want), took.Round(time.Millisecond))
	if len(want) != shardPods {
		t.Fatalf("the server lists %d pods, want %d", len(want), shardPods)
	}

	cs := clientset(t, c.AdminConfig())
	// An unsharded informer: what one replica would receive alone.
	base := newInformer(t, podSource(t, cs, ns), typed.Options[*corev1.Pod]{Name: "unsharded"})
	it.Run(t, base)
	if err := base.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}

	rs := make([]*shardReplica, shardReplicas)
	for i := range rs {
		rs[i] = startShardReplica(t, cs, ns, fmt.Sprintf("replica-%d", i), i == 1)
	}
	d := waitCoverage(t, "three replicas", time.Minute, want, rs...)
	t.Logf("three replicas cover the %d pods, union = LIST and intersection empty, %v after their start", len(want), d.Round(time.Millisecond))
	checkShares(t, "at rest", len(want), rs...)
	for _, r := range rs {
		sh := r.inf.Status().Informer.Shard
		if sh.ClientFiltering == gateOn {
			t.Errorf("%s: client filtering %v with the gate on=%v (selector %q)", r.id, sh.ClientFiltering, gateOn, sh.Selector)
		}
		if gateOn && sh.Filtered != 0 {
			t.Errorf("%s: %d objects filtered on the client although the server filters", r.id, sh.Filtered)
		}
	}

	// Events: every pod updated once; each replica is told exactly the
	// updates of its pods, and takes from the wire only those if the
	// server filters.
	type before struct{ updates, wire int }
	was := make([]before, len(rs))
	for i, r := range rs {
		u, _, _ := r.counts()
		st := r.inf.Status().Informer
		was[i] = before{u, st.Stats.Events + st.Shard.Filtered}
	}
	baseWas := base.Status().Stats.Events
	touchPods(ctx, t, admin, ns, slices.Collect(maps.Keys(want)), 16)
	it.Eventually(t, "the unsharded informer to see every update", func() bool {
		return base.Status().Stats.Events-baseWas >= len(want)
	})
	baseEvents := base.Status().Stats.Events - baseWas
	for i, r := range rs {
		mine := len(r.keys())
		it.Eventually(t, r.id+" to be told the updates of its pods", func() bool {
			u, _, _ := r.counts()
			return u-was[i].updates >= mine
		})
		u, _, _ := r.counts()
		st := r.inf.Status().Informer
		wire := st.Stats.Events + st.Shard.Filtered - was[i].wire
		t.Logf("events: %s told %d updates (%.1f%% of %d), took %d events from its watch (unsharded: %d); %.1f events/s",
			r.id, u-was[i].updates, 100*float64(u-was[i].updates)/float64(len(want)), len(want), wire, baseEvents, r.inf.Status().EventsPerSecond)
		if u-was[i].updates != mine {
			t.Errorf("%s was told %d updates, want %d (one per pod it holds)", r.id, u-was[i].updates, mine)
		}
		share := float64(u-was[i].updates) / float64(len(want))
		if share < 0.9/3 || share > 1.1/3 {
			t.Errorf("%s got %.1f%% of the events, want 33.3%% +- 10%%", r.id, 100*share)
		}
	}

	// Kill replica-1: it stops renewing, its Lease stays until it expires.
	s := startSampler(rs...)
	rs[1].stop()
	s.set(rs[0], rs[2])
	d = waitCoverage(t, "two replicas after the kill", shardLease+30*time.Second, want, rs[0], rs[2])
	s0, s2 := rs[0].inf.Status(), rs[2].inf.Status()
	t.Logf("kill: replica-0 and replica-2 cover all %d pods %v after replica-1 stopped renewing (lease %v); handoff gap after the claim ended: replica-0 %v (known %v), replica-2 %v (known %v); ranges %v %v",
		len(want), d.Round(time.Millisecond), shardLease, s0.HandoffGap.Round(time.Millisecond), s0.HandoffGapKnown,
		s2.HandoffGap.Round(time.Millisecond), s2.HandoffGapKnown, s0.Range(), s2.Range())
	checkShares(t, "after the kill", len(want), rs[0], rs[2])

	// Add it back: the ranges rebalance to thirds.
	back := startShardReplica(t, cs, ns, "replica-1", false)
	s.set(rs[0], back, rs[2])
	d = waitCoverage(t, "three replicas after the add", time.Minute, want, rs[0], back, rs[2])
	s.finish(t)
	sb := back.inf.Status()
	t.Logf("add back: three replicas cover all pods again %v after replica-1 restarted; its handoff gap %v (known %v)",
		d.Round(time.Millisecond), sb.HandoffGap.Round(time.Millisecond), sb.HandoffGapKnown)
	checkShares(t, "rebalanced", len(want), rs[0], back, rs[2])
	for _, r := range []*shardReplica{rs[0], rs[2]} {
		_, moved, deleted := r.counts()
		if deleted != 0 {
			t.Errorf("%s was told of %d deletions; nothing was deleted", r.id, deleted)
		}
		if moved == 0 {
			t.Errorf("%s was told of no pod moving out at the rebalance", r.id)
		}
	}
	for _, r := range []*shardReplica{rs[0], back, rs[2]} {
		r.stop()
	}
}
