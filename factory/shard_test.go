package factory_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/factory"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/sharding"
	"github.com/typedinformer/informer/source/sourcetest"
)

// TestScopeShard: a Scope with a Shard gets an informer of the shard's
// objects only; the same shard shares it, another shard and no shard get
// informers of their own.
func TestScopeShard(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 5))
	defer func() {
		if t.Failed() {
			t.Logf("seed %d", seed)
		}
	}()
	fs := newFakes(sourcetest.FakeOptions[*corev1.Pod]{})
	for i := range 40 {
		p := it.Pod("shop", fmt.Sprintf("web-%d", i), nil)
		p.UID = types.UID(fmt.Sprintf("%016x-%d", rng.Uint64(), i))
		if _, err := fs.of("shop").Create(p); err != nil {
			t.Fatal(err)
		}
	}
	f := newFactory(t, fs, factory.Options{})
	halves, err := sharding.Split(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	lower := sharding.Shard{Key: sharding.ByUID, Range: halves[0]}
	upper := sharding.Shard{Key: sharding.ByUID, Range: halves[1]}
	a, _ := informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: "shop", Shard: lower})
	again, _ := informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: "shop", Shard: sharding.Shard{Key: sharding.ByUID, Range: halves[0]}})
	b, _ := informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: "shop", Shard: upper})
	all, _ := informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: "shop"})
	if a != again {
		t.Error("two scopes with the same shard got two informers")
	}
	if a == b || a == all {
		t.Error("scopes with different shards share an informer")
	}
	start(t, f)
	waitSynced(t, f)
	want := map[string][]cache.Key{}
	for _, p := range all.Store().List() {
		half := "upper"
		if lower.Contains(p) {
			half = "lower"
		}
		want[half] = append(want[half], cache.KeyOf(p))
	}
	got := map[string][]cache.Key{"lower": a.Store().ListKeys(), "upper": b.Store().ListKeys()}
	sortKeys := cmp.Transformer("sort", func(ks []cache.Key) []string {
		out := make([]string, len(ks))
		for i, k := range ks {
			out[i] = k.String()
		}
		slices.Sort(out)
		return out
	})
	if diff := cmp.Diff(want, got, sortKeys); diff != "" {
		t.Errorf("shards (-want +got):\n%s", diff)
	}
	if len(want["lower"]) == 0 || len(want["upper"]) == 0 {
		t.Errorf("a half is empty: %v", want)
	}
	if !a.Status().Shard.ClientFiltering {
		t.Error("the fake ignores shard selectors, yet the informer does not filter on the client")
	}
}
