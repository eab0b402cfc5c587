package cache_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/typedinformer/informer/cache"
)

// TestIterationAllocations measures one full iteration written as a caller
// writes it, a range loop over the iterator, after a warm-up run that fills
// the snapshot pool. The count must not depend on the number of items.
func TestIterationAllocations(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts are measured without -short and without -race")
	}
	pods := manyPods(1000, 10)
	plain := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{})
	indexed := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{Indexers: cache.Indexers[*corev1.Pod]{
		cache.LabelIndexName("app"): cache.IndexByLabel[*corev1.Pod]("app"),
	}})
	mustAdd(t, plain, pods...)
	mustAdd(t, indexed, pods...)
	plainLister := cache.NewLister(plain, podsResource)
	indexedLister := cache.NewLister(indexed, podsResource)
	nsLister := plainLister.Namespace("ns-1")
	countMatches := func(ns string, scoped bool, sel labels.Selector) int {
		n := 0
		for _, p := range pods {
			if (!scoped || p.Namespace == ns) && sel.Matches(labels.Set(p.Labels)) {
				n++
			}
		}
		return n
	}
	everything := labels.Everything()
	web := mustSelector(t, "app=web")
	var n int
	tests := []struct {
		name string
		want int
		run  func()
	}{
		{"Indexer.Values", 1000, func() {
			for range plain.Values() {
				n++
			}
		}},
		{"Indexer.Keys", 1000, func() {
			for range plain.Keys() {
				n++
			}
		}},
		{"Indexer.All", 1000, func() {
			for range plain.All() {
				n++
			}
		}},
		{"Indexer.ByIndexValues", countMatches("ns-1", true, everything), func() {
			for range plain.ByIndexValues(cache.NamespaceIndex, "ns-1") {
				n++
			}
		}},
		{"Lister.Seq(everything)", 1000, func() {
			for range plainLister.Seq(everything) {
				n++
			}
		}},
		{"Lister.Seq(app=web) scan", countMatches("", false, web), func() {
			for range plainLister.Seq(web) {
				n++
			}
		}},
		{"Lister.Seq(app=web) label index", countMatches("", false, web), func() {
			for range indexedLister.Seq(web) {
				n++
			}
		}},
		{"Namespace.Seq(everything)", countMatches("ns-1", true, everything), func() {
			for range nsLister.Seq(everything) {
				n++
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n = 0
			tt.run() // warm-up: fills the snapshot pool
			if n != tt.want {
				t.Fatalf("iteration yielded %d items, want %d", n, tt.want)
			}
			allocs := testing.AllocsPerRun(100, tt.run)
			t.Logf("%.1f allocs per full iteration over %d items", allocs, tt.want)
			if allocs >= 5 {
				t.Errorf("%.1f allocs per full iteration over %d items, want < 5", allocs, tt.want)
			}
		})
	}
}

func TestGetByKeyAllocations(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts are measured without -short and without -race")
	}
	x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{})
	mustAdd(t, x, manyPods(1000, 10)...)
	present := cache.KeyOf(x.List()[0])
	absent := cache.Key{Namespace: "nope", Name: "nope"}
	for name, k := range map[string]cache.Key{"present": present, "absent": absent} {
		allocs := testing.AllocsPerRun(1000, func() {
			_, _, _ = x.GetByKey(k)
		})
		if allocs != 0 {
			t.Errorf("GetByKey(%s key): %.1f allocs, want 0", name, allocs)
		}
	}
}
