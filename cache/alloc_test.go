package cache_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/typedinformer/informer/cache"
)

// TestIterationAllocations measures one full iteration written as a caller
// writes it, a range loop over the iterator, after a warm-up run that fills
// the cache's free buffers. The count must not depend on the number of
// items.
func TestIterationAllocations(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts are measured without -short and without -race")
	}
	pods := manyPods(1000, 10)
	plain := mustWriter(t, podOptions{})
	indexed := mustWriter(t, podOptions{LabelIndexes: []string{"app"}, Indexers: podIndexes{"app": byLabel("app")}})
	for _, w := range []*podWriter{plain, indexed} {
		if _, err := w.Replace(entries(pods...)); err != nil {
			t.Fatal(err)
		}
	}
	plainStore, indexedStore := plain.Store(), indexed.Store()
	plainLister, indexedLister := plainStore.Lister(), indexedStore.Lister()
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
	webOrDB := mustSelector(t, "app in (web,db),n!=3")
	var n int
	tests := []struct {
		name string
		want int
		run  func()
	}{
		{"Store.All", 1000, func() {
			for range plainStore.All() {
				n++
			}
		}},
		{"Store.ByIndexSeq(namespace)", countMatches("ns-1", true, everything), func() {
			for range plainStore.ByIndexSeq(cache.NamespaceIndex, "ns-1") {
				n++
			}
		}},
		{"Store.ByIndexSeq(custom)", countMatches("", false, web), func() {
			for range indexedStore.ByIndexSeq("app", "web") {
				n++
			}
		}},
		{"Lister.ListSeq(everything)", 1000, func() {
			for range plainLister.ListSeq(everything) {
				n++
			}
		}},
		{"Lister.ListSeq(app=web) scan", countMatches("", false, web), func() {
			for range plainLister.ListSeq(web) {
				n++
			}
		}},
		{"Lister.ListSeq(app=web) label index", countMatches("", false, web), func() {
			for range indexedLister.ListSeq(web) {
				n++
			}
		}},
		{"Lister.ListSeq(app in (web,db),n!=3) label index", countMatches("", false, webOrDB), func() {
			for range indexedLister.ListSeq(webOrDB) {
				n++
			}
		}},
		{"Namespace.ListSeq(everything)", countMatches("ns-1", true, everything), func() {
			for range plainLister.Namespace("ns-1").ListSeq(everything) {
				n++
			}
		}},
		{"Namespace.ListSeq(app=web) label index", countMatches("ns-2", true, web), func() {
			for range indexedLister.Namespace("ns-2").ListSeq(web) {
				n++
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n = 0
			tt.run() // warm-up: fills the free buffers
			if n != tt.want || n == 0 {
				t.Fatalf("iteration yielded %d items, want %d", n, tt.want)
			}
			allocs := testing.AllocsPerRun(100, tt.run)
			t.Logf("%.1f allocs per full iteration over %d items", allocs, tt.want)
			if allocs >= 8 {
				t.Errorf("%.1f allocs per full iteration over %d items, want < 8", allocs, tt.want)
			}
		})
	}
}

func TestGetByKeyAllocations(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts are measured without -short and without -race")
	}
	w := mustWriter(t, podOptions{})
	if _, err := w.Replace(entries(manyPods(1000, 10)...)); err != nil {
		t.Fatal(err)
	}
	st := w.Store()
	present := cache.KeyOf(st.List()[0])
	absent := cache.Key{Namespace: "nope", Name: "nope"}
	for name, k := range map[string]cache.Key{"present": present, "absent": absent} {
		allocs := testing.AllocsPerRun(1000, func() {
			_, _ = st.GetByKey(k)
		})
		if allocs != 0 {
			t.Errorf("GetByKey(%s key): %.1f allocs, want 0", name, allocs)
		}
	}
}

// TestApplyPreparedAllocations checks that a write of a prepared entry over
// an object with the same index values, the common update, allocates
// nothing per write beyond a constant, and that re-applying the stored
// object costs nothing at all.
func TestApplyPreparedAllocations(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts are measured without -short and without -race")
	}
	w := mustWriter(t, podOptions{LabelIndexes: []string{"app"}, Indexers: podIndexes{"app": byLabel("app")}})
	versions := [2]*podEntry{}
	for i := range versions {
		e, err := w.Prepare(newPod("ns", "p", "v"+string(rune('0'+i)), "app", "web"))
		if err != nil {
			t.Fatal(err)
		}
		versions[i] = &e
	}
	changes := make([]podChange, 1)
	i := 0
	update := func() {
		changes[0] = podChange{Entry: *versions[i%2]}
		i++
		if _, err := w.Apply(changes); err != nil {
			t.Fatal(err)
		}
	}
	update()
	if allocs := testing.AllocsPerRun(100, update); allocs != 0 {
		t.Errorf("Apply of a prepared update: %.1f allocs, want 0", allocs)
	}
	same := func() {
		changes[0] = podChange{Entry: *versions[(i+1)%2]}
		if _, err := w.Apply(changes); err != nil {
			t.Fatal(err)
		}
	}
	if allocs := testing.AllocsPerRun(100, same); allocs != 0 {
		t.Errorf("Apply of the stored object again: %.1f allocs, want 0", allocs)
	}
}
