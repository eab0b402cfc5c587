package cache_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/typedinformer/informer/cache"
)

// runReaders runs each reader in a loop on its own goroutine while write
// runs, and at least once each. It returns how many reads each made.
func runReaders(t *testing.T, write func(), readers ...func()) []int {
	t.Helper()
	var wg sync.WaitGroup
	var done atomic.Bool
	counts := make([]int, len(readers))
	for i, read := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				read()
				counts[i]++
				if done.Load() {
					return
				}
			}
		}()
	}
	write()
	done.Store(true)
	wg.Wait()
	return counts
}

// TestApplyIsAtomicForReaders moves n objects between app=a and app=b, all
// in one Apply each time. Every read sees them all under one label, and the
// label the revision says.
func TestApplyIsAtomicForReaders(t *testing.T) {
	const n, rounds, nss = 60, 300, 5
	w := mustWriter(t, podOptions{Indexers: podIndexes{"app": byLabel("app")}, LabelIndexes: []string{"app"}})
	st, l := w.Store(), w.Store().Lister()
	// Revision 1 has app=a; each later revision flips the label.
	labelAt := func(rev uint64) string { return []string{"b", "a"}[rev%2] }
	version := func(label string) []podChange {
		changes := make([]podChange, n)
		for i := range changes {
			// "copy" is not indexed: selectors on it are matched by scan.
			p := newPod("ns-"+strconv.Itoa(i%nss), "p"+strconv.Itoa(i), "", "app", label, "copy", label)
			if i%2 == 0 {
				e, err := w.Prepare(p)
				if err != nil {
					t.Error(err)
				}
				changes[i].Entry = e
			} else {
				changes[i] = put(p)
			}
		}
		return changes
	}
	mustApply(t, w, version("a")...)

	var mu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 10 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	// whole checks that got is all n objects with one label, or none.
	whole := func(what string, got []*corev1.Pod, of int) {
		seen := map[string]int{}
		for _, p := range got {
			seen[p.Labels["app"]]++
		}
		if len(got) != 0 && len(got) != of || len(seen) > 1 {
			fail("%s: %d objects, labels %v; want 0 or %d under one label", what, len(got), seen, of)
		}
	}
	sel := map[string]labels.Selector{}
	for _, s := range []string{"app=a", "app=b", "app in (a)", "copy=a", "copy=b", "app=a,copy=a"} {
		sel[s] = mustSelector(t, s)
	}
	readers := []func(){
		func() {
			objs, rev := st.Snapshot()
			whole("Snapshot", objs, n)
			for _, p := range objs {
				if p.Labels["app"] != labelAt(rev) {
					fail("Snapshot at revision %d holds %s with app=%s", rev, id(p), p.Labels["app"])
					return
				}
			}
		},
		func() { whole("List", st.List(), n) },
		func() {
			var all []*corev1.Pod
			for _, p := range st.All() {
				all = append(all, p)
			}
			whole("All", all, n)
		},
		func() {
			for _, s := range []string{"app=a", "app=b", "app in (a)", "copy=a", "copy=b", "app=a,copy=a"} {
				got, err := l.List(sel[s])
				if err != nil {
					fail("List(%s): %v", s, err)
				}
				whole("Lister.List("+s+")", got, n)
				whole("Lister.ListSeq("+s+")", collect(l.ListSeq(sel[s])), n)
				whole("Namespace.ListSeq("+s+")", collect(l.Namespace("ns-1").ListSeq(sel[s])), n/nss)
			}
		},
		func() {
			for _, v := range []string{"a", "b"} {
				got, err := st.ByIndex("app", v)
				if err != nil {
					fail("ByIndex: %v", err)
				}
				whole("ByIndex(app, "+v+")", got, n)
				whole("ByIndexSeq(app, "+v+")", collect(st.ByIndexSeq("app", v)), n)
			}
			vals, err := st.IndexValues("app")
			if err != nil || len(vals) != 1 {
				fail("IndexValues(app) = %v, %v; want one value", vals, err)
			}
		},
	}
	var revs []uint64
	counts := runReaders(t, func() {
		for i := range rounds {
			rev, err := w.Apply(version(labelAt(uint64(i + 2))))
			if err != nil {
				t.Error(err)
			}
			revs = append(revs, rev)
		}
	}, readers...)
	for _, f := range failures {
		t.Error(f)
	}
	for i, rev := range revs {
		if rev != uint64(i+2) {
			t.Fatalf("Apply %d returned revision %d, want %d", i, rev, i+2)
		}
	}
	t.Logf("reads per reader: %v", counts)
}

// TestReplaceIsAtomicForReaders alternates Replace between two sets of n
// objects with no key in common: every read sees one set, whole.
func TestReplaceIsAtomicForReaders(t *testing.T) {
	const n, rounds = 60, 300
	w := mustWriter(t, podOptions{Indexers: podIndexes{"set": byLabel("set")}, LabelIndexes: []string{"set"}})
	st, l := w.Store(), w.Store().Lister()
	sets := map[string][]podEntry{}
	for _, set := range []string{"A", "B"} {
		for i := range n {
			p := newPod("ns-"+strconv.Itoa(i%3), set+"-"+strconv.Itoa(i), "1", "set", set)
			e, err := w.Prepare(p)
			if err != nil {
				t.Fatal(err)
			}
			if i%2 == 1 {
				e = podEntry{Object: p}
			}
			sets[set] = append(sets[set], e)
		}
	}
	setAt := func(rev uint64) string { return []string{"B", "A"}[rev%2] } // revision 1 holds A
	if _, err := w.Replace(sets["A"]); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 10 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	check := func(what string, got []*corev1.Pod, want string) {
		names := map[string]bool{}
		for _, p := range got {
			names[p.Labels["set"]] = true
		}
		if len(got) != n || len(names) != 1 || (want != "" && !names[want]) {
			fail("%s: %d objects of sets %v; want the %d of set %q", what, len(got), names, n, want)
		}
	}
	everything := labels.Everything()
	counts := runReaders(t, func() {
		for i := range rounds {
			if _, err := w.Replace(sets[setAt(uint64(i+2))]); err != nil {
				t.Error(err)
			}
		}
	},
		func() {
			objs, rev := st.Snapshot()
			check("Snapshot", objs, setAt(rev))
		},
		func() { check("List", st.List(), "") },
		func() {
			if got := st.Len(); got != n {
				fail("Len() = %d, want %d", got, n)
			}
			got, err := l.List(everything)
			if err != nil {
				t.Error(err)
			}
			check("Lister.List(everything)", got, "")
			check("Lister.ListSeq(everything)", collect(l.ListSeq(everything)), "")
		},
		func() {
			var all []*corev1.Pod
			for _, ns := range []string{"ns-0", "ns-1", "ns-2"} {
				all = append(all, collect(st.ByIndexSeq(cache.NamespaceIndex, ns))...)
			}
			// Three reads: each sees one set, but not necessarily the same.
			if len(all) != n {
				fail("ByIndexSeq(namespace) over three namespaces: %d objects, want %d", len(all), n)
			}
			vals, err := st.IndexValues("set")
			if err != nil || len(vals) != 1 {
				fail("IndexValues(set) = %v, %v; want one value", vals, err)
			}
			for _, v := range []string{"A", "B"} {
				got, err := l.List(labels.SelectorFromSet(labels.Set{"set": v}))
				if err != nil {
					fail("List(set=%s): %v", v, err)
				}
				if len(got) != 0 {
					check("Lister.List(set="+v+")", got, v)
				}
				if got, _ := st.ByIndex("set", v); len(got) != 0 {
					check("ByIndex(set, "+v+")", got, v)
				}
			}
		},
	)
	for _, f := range failures {
		t.Error(f)
	}
	t.Logf("reads per reader: %v", counts)
}

// TestSnapshotMatchesRevision writes, with Apply and Replace in turn,
// objects whose resource version is the revision the write makes: a
// Snapshot must hold only objects of the revision it reports.
func TestSnapshotMatchesRevision(t *testing.T) {
	const n, rounds = 40, 400
	w := mustWriter(t, podOptions{})
	st := w.Store()
	var bad atomic.Int64
	var first atomic.Value
	counts := runReaders(t, func() {
		for rev := uint64(1); rev <= rounds; rev++ {
			rv := strconv.FormatUint(rev, 10)
			var got uint64
			var err error
			if rev%3 == 0 {
				es := make([]podEntry, n)
				for i := range es {
					es[i].Object = newPod("ns", "p"+strconv.Itoa(i), rv)
				}
				got, err = w.Replace(es)
			} else {
				changes := make([]podChange, n)
				for i := range changes {
					changes[i] = put(newPod("ns", "p"+strconv.Itoa(i), rv))
				}
				got, err = w.Apply(changes)
			}
			if err != nil || got != rev {
				t.Errorf("write %d returned revision %d, %v", rev, got, err)
			}
		}
	}, func() {
		objs, rev := st.Snapshot()
		if rev == 0 {
			if len(objs) != 0 {
				bad.Add(1)
			}
			return
		}
		rv := strconv.FormatUint(rev, 10)
		if len(objs) != n {
			bad.Add(1)
			first.CompareAndSwap(nil, fmt.Sprintf("revision %d: %d objects, want %d", rev, len(objs), n))
		}
		for _, p := range objs {
			if p.ResourceVersion != rv {
				bad.Add(1)
				first.CompareAndSwap(nil, fmt.Sprintf("revision %d holds %s", rev, id(p)))
				return
			}
		}
	})
	if n := bad.Load(); n > 0 {
		t.Errorf("%d inconsistent snapshots; first: %v", n, first.Load())
	}
	if _, rev := st.Snapshot(); rev != rounds {
		t.Errorf("final revision %d, want %d", rev, rounds)
	}
	t.Logf("reads: %v", counts)
}

// TestAddIndexersWhileApplying adds indexes while another goroutine keeps
// writing, with literal entries and entries prepared before the indexes
// were added. The first new index function waits, the first time it runs,
// until the writer has made more writes, so that writes certainly happen
// while the index is being built. The indexes must end up exact.
func TestAddIndexersWhileApplying(t *testing.T) {
	w := mustWriter(t, podOptions{Indexers: podIndexes{"tags": byTags}, LabelIndexes: []string{"app"}})
	st := w.Store()
	var applied atomic.Int64
	gen := func(r *rand.Rand, i int) *corev1.Pod {
		p := newPod("ns-"+strconv.Itoa(r.IntN(3)), "p"+strconv.Itoa(r.IntN(40)), strconv.Itoa(i),
			"app", []string{"web", "db", "x"}[r.IntN(3)], "tier", []string{"front", "back"}[r.IntN(2)])
		return withAnn(p, "tags", []string{"x", "x,y", "z"}[r.IntN(3)])
	}
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		r := rand.New(rand.NewPCG(1, 2))
		var held []podEntry // prepared, applied some writes later
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var changes []podChange
			for j := range 1 + r.IntN(4) {
				p := gen(r, i*10+j)
				switch r.IntN(4) {
				case 0:
					changes = append(changes, delPod(p))
				case 1:
					changes = append(changes, put(p))
				default:
					e, err := w.Prepare(p)
					if err != nil {
						t.Error(err)
						return
					}
					held = append(held, e)
				}
			}
			if len(held) > 3 {
				for _, e := range held[:2] {
					changes = append(changes, podChange{Entry: e})
				}
				held = held[2:]
			}
			// No Replace: it would give every key a new object, and hide
			// index values left stale by the build.
			if _, err := w.Apply(changes); err != nil {
				t.Error(err)
			}
			applied.Add(1)
		}
	}()

	// waitWrites waits until the writer has made k more writes, or stopped.
	waitWrites := func(k int64) {
		for start := applied.Load(); applied.Load() < start+k; {
			select {
			case <-writerDone:
				return
			default:
				runtime.Gosched()
			}
		}
	}
	// Only the build itself waits: a writer calling the function once the
	// index is in place must not wait for its own writes.
	var building, waited atomic.Bool
	slowTier := func(p *corev1.Pod) ([]string, error) {
		if building.Load() && waited.CompareAndSwap(false, true) {
			waitWrites(50)
		}
		return byLabel("tier")(p)
	}
	added := podIndexes{
		"tier": slowTier,
		"name": func(p *corev1.Pod) ([]string, error) { return []string{p.Name}, nil },
		"both": func(p *corev1.Pod) ([]string, error) {
			return []string{p.Labels["app"] + "/" + p.Labels["tier"], p.Namespace}, nil
		},
	}
	waitWrites(100)
	for i := 0; st.Len() < 10 && i < 1000; i++ {
		waitWrites(1)
	}
	for _, name := range slices.Sorted(maps.Keys(added)) {
		building.Store(name == "tier")
		if err := w.AddIndexers(podIndexes{name: added[name]}); err != nil {
			t.Error(err)
		}
		building.Store(false)
	}
	// A few writes with all indexes in place, then stop.
	waitWrites(5)
	close(stop)
	<-writerDone
	if !waited.Load() {
		t.Fatal("the tier index function never ran")
	}

	// Brute force over the content.
	funcs := maps.Clone(added)
	funcs["tags"] = byTags
	funcs[cache.NamespaceIndex] = func(p *corev1.Pod) ([]string, error) { return []string{p.Namespace}, nil }
	objs := st.List()
	if len(objs) == 0 {
		t.Fatal("the writer left nothing")
	}
	for name, f := range funcs {
		want := map[string][]string{}
		for _, p := range objs {
			vals, _ := f(p)
			for _, v := range slices.Compact(slices.Sorted(slices.Values(vals))) {
				want[v] = append(want[v], id(p))
			}
		}
		for v := range want {
			slices.Sort(want[v])
		}
		if diff := cmp.Diff(want, stateOf(t, st, name).Indexes[name]); diff != "" {
			t.Errorf("index %q after concurrent AddIndexers (-want +got):\n%s", name, diff)
		}
	}
	t.Logf("%d writes during the test", applied.Load())
}

// TestAddIndexersFailsOnObjectWrittenMeanwhile writes, while a new index is
// being built, an object the new index function fails on: AddIndexers must
// fail and change nothing.
func TestAddIndexersFailsOnObjectWrittenMeanwhile(t *testing.T) {
	w := mustWriter(t, podOptions{})
	st := w.Store()
	mustPut(t, w, newPod("a", "p0", "1"), newPod("a", "p1", "1"))
	var once atomic.Bool
	f := func(p *corev1.Pod) ([]string, error) {
		if p.Name == "bad" {
			return nil, errBoom
		}
		if once.CompareAndSwap(false, true) {
			// Index functions run without the lock: this write goes in.
			mustPut(t, w, newPod("a", "bad", "1"))
		}
		return []string{p.Name}, nil
	}
	err := w.AddIndexers(podIndexes{"name": f})
	if !errors.Is(err, errBoom) {
		t.Fatalf("AddIndexers = %v, want errBoom", err)
	}
	if !strings.Contains(err.Error(), "a/bad") {
		t.Errorf("error %q does not name the object", err)
	}
	if _, err := st.ByIndex("name", "p0"); !errors.Is(err, cache.ErrNoIndex) {
		t.Errorf("ByIndex(name) = %v, want ErrNoIndex", err)
	}
	if diff := cmp.Diff([]string{"a/bad@1", "a/p0@1", "a/p1@1"}, ids(st.List())); diff != "" {
		t.Errorf("List() (-want +got):\n%s", diff)
	}
}

// TestIndexFailureReportedWhenAddIndexersRaces makes an index function fail
// on a literal entry while, in between, AddIndexers installs a new index,
// so that Apply must compute index values a second time: the failure must
// still be reported, and the object still left out of the failing index.
func TestIndexFailureReportedWhenAddIndexersRaces(t *testing.T) {
	for _, op := range []string{"Apply", "Replace"} {
		t.Run(op, func(t *testing.T) {
			var w *podWriter
			var once atomic.Bool
			tags := func(p *corev1.Pod) ([]string, error) {
				if once.CompareAndSwap(false, true) {
					// Apply holds no lock while index functions run.
					if err := w.AddIndexers(podIndexes{"name": failOn("", "")}); err != nil {
						t.Error(err)
					}
				}
				return byTags(p)
			}
			w = mustWriter(t, podOptions{Indexers: podIndexes{"tags": tags}})
			bad := withAnn(newPod("ns", "bad", "1"), "fail", "true", "tags", "x")
			var err error
			if op == "Apply" {
				_, err = w.Apply([]podChange{put(bad)})
			} else {
				_, err = w.Replace(entries(bad))
			}
			if !once.Load() {
				t.Fatal("the index function never ran")
			}
			if !errors.Is(err, errBoom) {
				t.Errorf("%s = %v, want the tags index's error", op, err)
			}
			checkIndexes(t, w.Store(), map[string]map[string][]string{
				"tags": {},
				"name": {"bad": {"ns/bad@1"}},
			})
		})
	}
}
