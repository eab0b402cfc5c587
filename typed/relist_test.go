package typed_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/informertest"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// relistFixture is a fake with n pods labelled gen=a, and a function that
// makes a relist unavoidable: it deletes half of them and creates as many
// labelled gen=b while no watch sees it, then compacts and cuts the
// watches. Before, a reader must see (n, 0) pods of (gen=a, gen=b); after,
// (n/2, n/2); anything else is a half-applied relist.
func relistFixture(n int) (*sourcetest.Fake[*corev1.Pod], func(t *testing.T)) {
	var pods []*corev1.Pod
	for i := range n {
		pods = append(pods, it.Pod(fmt.Sprintf("ns-%d", i%10), fmt.Sprintf("a-%d", i), map[string]string{"gen": "a"}))
	}
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{Window: 4 * n}, pods...)
	relist := func(t *testing.T) {
		fake.DropEvents(n)
		for i := range n / 2 {
			if _, err := fake.Delete(cache.Key{Namespace: fmt.Sprintf("ns-%d", i%10), Name: fmt.Sprintf("a-%d", i)}); err != nil {
				t.Fatal(err)
			}
			if _, err := fake.Create(it.Pod(fmt.Sprintf("ns-%d", i%10), fmt.Sprintf("b-%d", i), map[string]string{"gen": "b"})); err != nil {
				t.Fatal(err)
			}
		}
		fake.Compact()
		fake.CutWatches()
	}
	return fake, relist
}

// readCounts polls read until stop is closed, classifying every read of m
// gen=a objects: (m, 0) before the relist, (m/2, m/2) after.
type readCounts struct{ before, after, torn, reads atomic.Int64 }

func (c *readCounts) poll(n int, read func() (a, b int), stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		a, b := read()
		c.reads.Add(1)
		switch {
		case a == n && b == 0:
			c.before.Add(1)
		case a == n/2 && b == n/2:
			c.after.Add(1)
		default:
			c.torn.Add(1)
		}
	}
}

func countGens(pods []*corev1.Pod) (a, b int) {
	for _, p := range pods {
		switch p.Labels["gen"] {
		case "a":
			a++
		case "b":
			b++
		}
	}
	return a, b
}

// TestRelistIsAtomic: a reader that polls the lister while a relist of
// 20,000 objects is applied sees the cache before the relist or after it,
// never in between, both through the lister and through the store; so does
// client-go's default informer (AtomicFIFO) on the same stream from the
// same fake, checked beside it. Handlers hear of the relist after the
// swap: when the first relist notification arrives, the store already
// holds the new list.
func TestRelistIsAtomic(t *testing.T) {
	const n = 20000
	t.Run("typed", func(t *testing.T) {
		fake, relist := relistFixture(n)
		inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{LabelIndexes: []string{"gen"}})
		var seenAtFirstDelete atomic.Value
		var once sync.Once
		if _, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{DeleteFunc: func(handler.Deleted[*corev1.Pod]) {
			once.Do(func() { seenAtFirstDelete.Store(fmt.Sprint(countGens(inf.Store().List()))) })
		}}); err != nil {
			t.Fatal(err)
		}
		startSynced(t, inf)
		both, err := labels.Parse("gen in (a,b)")
		if err != nil {
			t.Fatal(err)
		}
		readers := []struct {
			name string
			m    int
			read func() (int, int)
		}{
			{"store List", n, func() (int, int) { return countGens(inf.Store().List()) }},
			{"lister List, label index", n, func() (int, int) {
				pods, _ := inf.Lister().List(both)
				return countGens(pods)
			}},
			{"namespace lister ListSeq", n / 10, func() (int, int) {
				var pods []*corev1.Pod
				for p := range inf.Lister().Namespace("ns-0").ListSeq(labels.Everything()) {
					pods = append(pods, p)
				}
				return countGens(pods)
			}},
			{"ByIndex namespace", n / 10, func() (int, int) {
				pods, _ := inf.Store().ByIndex(cache.NamespaceIndex, "ns-3")
				return countGens(pods)
			}},
			{"All iterator", n, func() (int, int) {
				var pods []*corev1.Pod
				for _, p := range inf.Store().All() {
					pods = append(pods, p)
				}
				return countGens(pods)
			}},
		}
		counts := make([]readCounts, len(readers))
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i, r := range readers {
			wg.Go(func() { counts[i].poll(r.m, r.read, stop) })
		}
		relist(t)
		it.Eventually(t, "relist applied and read", func() bool {
			if inf.Status().Stats.Relists != 1 {
				return false
			}
			for i := range counts {
				if counts[i].after.Load() < 3 {
					return false
				}
			}
			return true
		})
		close(stop)
		wg.Wait()
		for i, r := range readers {
			report(t, r.name, &counts[i])
		}
		// The handler runs on its own goroutine and may still be on its
		// way to the first relist notification.
		it.Eventually(t, "the handler heard of the relist", func() bool { return seenAtFirstDelete.Load() != nil })
		if got, want := seenAtFirstDelete.Load(), fmt.Sprint(n/2, n/2); got != want {
			t.Errorf("store at the first relist notification = %v, want %v: handlers heard of the relist before the swap", got, want)
		}
	})
	t.Run("client-go", func(t *testing.T) {
		fake, relist := relistFixture(n)
		inf := toolscache.NewSharedIndexInformer(fake.ListerWatcher(), &corev1.Pod{}, 0, toolscache.Indexers{})
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		wg.Go(func() { inf.RunWithContext(ctx) })
		if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatal("client-go informer did not sync")
		}
		var store readCounts
		stop := make(chan struct{})
		var rwg sync.WaitGroup
		rwg.Go(func() {
			store.poll(n, func() (int, int) {
				var a, b int
				for _, o := range inf.GetStore().List() {
					switch o.(*corev1.Pod).Labels["gen"] {
					case "a":
						a++
					case "b":
						b++
					}
				}
				return a, b
			}, stop)
		})
		before := len(fake.Items())
		relist(t)
		it.Eventually(t, "client-go relist applied", func() bool { return store.after.Load() > 10 })
		close(stop)
		rwg.Wait()
		report(t, fmt.Sprintf("client-go store (%d objects before)", before), &store)
	})
}

// report logs the reads and fails on a torn one.
func report(t *testing.T, what string, c *readCounts) {
	t.Helper()
	t.Logf("%s: %d reads, %d before the relist, %d after, %d torn", what, c.reads.Load(), c.before.Load(), c.after.Load(), c.torn.Load())
	if c.torn.Load() != 0 {
		t.Errorf("%s: %d of %d reads saw a half-applied relist", what, c.torn.Load(), c.reads.Load())
	}
	if c.before.Load() == 0 || c.after.Load() == 0 {
		t.Errorf("%s: reads before %d, after %d: the reader did not see both sides, the test tests nothing", what, c.before.Load(), c.after.Load())
	}
}

// A relist that brings objects at the versions the cache holds keeps the
// cached objects: the pointers do not change, handlers get OnUpdate with
// the very same object (as for a resync), and no index function runs again
// for them; the changed ones are replaced.
func TestRelistKeepsUnchangedObjects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(100)...)
		var indexed atomic.Int64
		inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{Indexers: cache.Indexers[*corev1.Pod]{
			"count": func(*corev1.Pod) ([]string, error) { indexed.Add(1); return nil, nil },
		}})
		var same, changed atomic.Int64
		if _, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{UpdateFunc: func(old, cur *corev1.Pod) {
			if old == cur {
				same.Add(1)
			} else {
				changed.Add(1)
			}
		}}); err != nil {
			t.Fatal(err)
		}
		startSynced(t, inf)
		held := map[cache.Key]*corev1.Pod{}
		for k, p := range inf.Store().All() {
			held[k] = p
		}
		fake.DropEvents(5)
		for i := range 5 {
			if _, err := fake.Update(it.Pod(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("p-%d", i), map[string]string{"v": "2"})); err != nil {
				t.Fatal(err)
			}
		}
		fake.Compact()
		fake.CutWatches()
		it.Eventually(t, "relisted", func() bool { return inf.Status().Stats.Relists == 1 })
		it.Converge(t, fake, inf.Store())
		synctest.Wait()
		kept := 0
		for k, p := range inf.Store().All() {
			if held[k] == p {
				kept++
			}
		}
		if kept != 95 || same.Load() != 95 || changed.Load() != 5 {
			t.Errorf("after a relist with 5 changes of 100: %d cached pointers kept, %d OnUpdate(obj, obj), %d real updates; want 95, 95, 5", kept, same.Load(), changed.Load())
		}
		// Index functions ran once per object when it arrived: 100 for the
		// first list, then 100 for the relist's objects (before it is known
		// which are unchanged), and none when the list was applied.
		if got := indexed.Load(); got != 200 {
			t.Errorf("index function ran %d times, want 200", got)
		}
		// A watch event: once per change.
		for i := range 10 {
			if _, err := fake.Update(it.Pod("ns-1", "p-1", map[string]string{"v": fmt.Sprint(i + 3)})); err != nil {
				t.Fatal(err)
			}
		}
		it.Converge(t, fake, inf.Store())
		synctest.Wait()
		if got := indexed.Load(); got != 210 {
			t.Errorf("index function ran %d times after 10 updates, want 210: once per change", got)
		}
	})
}

// TestReliabilitySameNameNewUID deletes an object and creates another with
// the same name (a new UID) while the informer's watch is down, then
// compacts so the informer must relist (fault 14). Documented behaviour:
// handlers see Delete with FinalStateUnknown (the old object, its last
// known state) followed by Add of the new one, never an Update from one UID
// to another. The same done while the watch is up gives a plain Delete and
// Add. Checks I1, I2-I4 and the exact events of both keys.
func TestReliabilitySameNameNewUID(t *testing.T) {
	for _, watchList := range []bool{true, false} {
		t.Run(fmt.Sprintf("watchList=%v", watchList), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { sameNameNewUID(t, watchList) })
		})
	}
}

func sameNameNewUID(t *testing.T, watchList bool) {
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: !watchList},
		it.Pod("ns", "gap", nil), it.Pod("ns", "live", nil), it.Pod("ns", "other", nil))
	inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{ErrorHandler: func(error) {}, NoWatchList: !watchList})
	rec := it.NewRecorder()
	startSynced(t, inf, rec)
	it.Eventually(t, "watch open", func() bool { return fake.OpenWatches() == 1 })
	gapKey, liveKey := cache.Key{Namespace: "ns", Name: "gap"}, cache.Key{Namespace: "ns", Name: "live"}
	gap0, _ := fake.Get(gapKey)
	live0, _ := fake.Get(liveKey)

	// While watching: delete and re-create "live".
	liveDel, err := fake.Delete(liveKey)
	if err != nil {
		t.Fatal(err)
	}
	live1, err := fake.Create(it.Pod("ns", "live", nil))
	if err != nil {
		t.Fatal(err)
	}
	it.Eventually(t, "live re-created", func() bool { return rec.Replay()[liveKey] == informertest.StateOf([]*corev1.Pod{live1})[liveKey] })

	// Across a gap: the informer misses both events, the history is
	// compacted and the watch cut, so only a relist can tell.
	synctest.Wait()
	fake.DropEvents(2)
	if _, err := fake.Delete(gapKey); err != nil {
		t.Fatal(err)
	}
	gap1, err := fake.Create(it.Pod("ns", "gap", nil))
	if err != nil {
		t.Fatal(err)
	}
	if gap1.UID == gap0.UID {
		t.Fatalf("re-created object kept UID %q", gap1.UID)
	}
	fake.Compact()
	fake.CutWatches()
	it.Converge(t, fake, inf.Store(), rec)

	wantGap := []informertest.Event{
		{Kind: "add", RV: gap0.ResourceVersion, UID: gap0.UID, Initial: true},
		{Kind: "delete", RV: gap0.ResourceVersion, UID: gap0.UID, FSU: true},
		{Kind: "add", RV: gap1.ResourceVersion, UID: gap1.UID},
	}
	if diff := cmp.Diff(wantGap, rec.Events(gapKey)); diff != "" {
		t.Errorf("same name, new UID across a gap: want Delete(FinalStateUnknown) + Add (-want +got):\n%s", diff)
	}
	wantLive := []informertest.Event{
		{Kind: "add", RV: live0.ResourceVersion, UID: live0.UID, Initial: true},
		{Kind: "delete", RV: liveDel.ResourceVersion, UID: live0.UID},
		{Kind: "add", RV: live1.ResourceVersion, UID: live1.UID},
		// The relist brings the unchanged object again: OnUpdate(obj, obj).
		{Kind: "update", RV: live1.ResourceVersion, UID: live1.UID},
	}
	if diff := cmp.Diff(wantLive, rec.Events(liveKey)); diff != "" {
		t.Errorf("same name, new UID while watching: want Delete + Add (-want +got):\n%s", diff)
	}
	if r := inf.Status().Stats.Relists; r != 1 {
		t.Errorf("I8: %d relists, want 1", r)
	}
}
