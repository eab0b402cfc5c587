package sharding_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	prom "github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/metrics/prometheus"
	"github.com/typedinformer/informer/sharding"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// echoing is a source that filters lists by their shard selector and
// echoes it, as an API server with the feature does; watches pass through
// unfiltered, which the informer must filter.
type echoing struct {
	source.Source[*corev1.Pod]
	shard sharding.Shard
}

func (e echoing) List(ctx context.Context, opts metav1.ListOptions) (source.List[*corev1.Pod], error) {
	l, err := e.Source.List(ctx, opts)
	if err != nil || opts.ShardSelector == "" {
		return l, err
	}
	if opts.ShardSelector != e.shard.Selector() {
		return l, fmt.Errorf("selector %q, want %q", opts.ShardSelector, e.shard.Selector())
	}
	l.Items = slices.DeleteFunc(l.Items, func(p *corev1.Pod) bool { return !e.shard.Contains(p) })
	l.ShardInfo = &metav1.ShardInfo{Selector: opts.ShardSelector}
	return l, nil
}

func randomPod(rng *rand.Rand, i int) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("pod-%d", i),
		UID: types.UID(fmt.Sprintf("%016x-%016x", rng.Uint64(), rng.Uint64()))}}
}

// TestOptionsShard runs a typed informer with Options.Shard over a server
// that ignores the selector and over one that applies it: either way the
// cache holds exactly the shard's pods, also of those created by watch
// events, and the status and the metrics say who filtered.
func TestOptionsShard(t *testing.T) {
	seed := rand.Uint64()
	defer func() {
		if t.Failed() {
			t.Logf("seed %d", seed)
		}
	}()
	shard := sharding.Shard{Key: sharding.ByUID, Range: sharding.Range{Start: 1 << 62, End: 3 << 62}}
	tests := []struct {
		name       string
		echo       bool
		wantClient float64
	}{
		{"server ignores the selector", false, 1},
		{"server applies the selector", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 3))
			fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
			want := map[cache.Key]bool{}
			add := func(i int) {
				p := randomPod(rng, i)
				if _, err := fake.Create(p); err != nil {
					t.Fatal(err)
				}
				if shard.Contains(p) {
					want[cache.KeyOf(p)] = true
				}
			}
			for i := range 300 {
				add(i)
			}
			var src source.Source[*corev1.Pod] = fake
			if tt.echo {
				src = echoing{Source: fake, shard: shard}
			}
			reg := prom.NewRegistry()
			m, err := prometheus.New(reg, prometheus.Options{})
			if err != nil {
				t.Fatal(err)
			}
			inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{Name: "sharded", Shard: shard, Metrics: m})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- inf.Run(ctx) }()
			defer func() { cancel(); <-done }()
			if err := inf.WaitForSync(ctx); err != nil {
				t.Fatal(err)
			}
			for i := 300; i < 400; i++ {
				add(i)
			}
			// Wait for the watch to bring the last pod (in the shard or
			// not: the resourceVersion moves either way).
			last, err := fake.Get(cache.Key{Namespace: "default", Name: "pod-399"})
			if err != nil {
				t.Fatal(err)
			}
			wctx, wcancel := context.WithTimeout(ctx, time.Minute)
			defer wcancel()
			if err := inf.WaitForResourceVersion(wctx, last.ResourceVersion); err != nil {
				t.Fatal(err)
			}
			got := map[cache.Key]bool{}
			for _, k := range inf.Store().ListKeys() {
				got[k] = true
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("cache (-want +got):\n%s", diff)
			}
			st := inf.Status().Shard
			if st.Selector != shard.Selector() {
				t.Errorf("status selector %q, want %q", st.Selector, shard.Selector())
			}
			if st.ClientFiltering == tt.echo {
				t.Errorf("ClientFiltering %v with a server that echoes %v", st.ClientFiltering, tt.echo)
			}
			if st.Filtered == 0 {
				t.Errorf("no watch event filtered on the client")
			}
			gotMetrics := gather(t, reg)
			if diff := cmp.Diff(tt.wantClient, gotMetrics["informer_shard_client_filtering"]); diff != "" {
				t.Errorf("informer_shard_client_filtering (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(float64(st.Filtered), gotMetrics["informer_shard_filtered_total"]); diff != "" {
				t.Errorf("informer_shard_filtered_total (-want +got):\n%s", diff)
			}
		})
	}
}

// gather returns the value of each metric of reg by name (the registry
// holds one informer, so each name has one series).
func gather(t *testing.T, reg *prom.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetGauge() != nil:
				out[mf.GetName()] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				out[mf.GetName()] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}
