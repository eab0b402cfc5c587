package clientgo_test

// Differential test: client-go's own informer (NewSharedIndexInformer)
// and the view of a typed informer watch the same fake server, through
// client-go ResourceEventHandlers that record the same way on both sides.
// Random scripts create, update and delete pods, cut watches (both
// informers re-watch from their resourceVersion) and open gaps (events
// dropped, deletes among them, then the history compacted and the watches
// cut, so both relist and deliver tombstones). After each step both caches,
// both handlers and every store, indexer and lister query must agree.
//
// The typed informer's documented differences are normalised before the
// calls are compared, and counted so the log shows they happen:
//   - an object replaced under the same name by one with a new UID, found
//     by a relist: client-go calls OnUpdate(old, new), the view OnDelete
//     (tombstone of old) then OnAdd(new);
//   - an OnDelete for a key the handler never had: client-go only.
//
// Watches are cut only after two (virtual) seconds: client-go relists
// after a watch shorter than a second that delivered nothing, where the
// typed informer re-watches, and both call sequences are valid.

import (
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/clientgo"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

var diffScripts = flag.Int("diff.scripts", 30, "differential test: number of random scripts")

// appIndex indexes pods by their "app" label, for both informers.
func appIndex(obj any) ([]string, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	if app, ok := m.GetLabels()["app"]; ok {
		return []string{app}, nil
	}
	return nil, nil
}

func metaOf(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("not an object: %T", obj)
	}
	return m, nil
}

// normaliseView rewrites the view's calls for one key into client-go's:
// a tombstone of UID u followed by an Add of UID v is an Update u -> v.
func normaliseView(calls []call, counts map[string]int) []call {
	var out []call
	for i := 0; i < len(calls); i++ {
		c := calls[i]
		if c.Kind == "delete" && c.Tomb && i+1 < len(calls) && calls[i+1].Kind == "add" && calls[i+1].UID != c.UID {
			n := calls[i+1]
			out = append(out, call{Kind: "update", RV: n.RV, UID: n.UID, OldRV: c.RV, OldUID: c.UID})
			counts["new UID under a name: tombstone+Add for client-go's Update"]++
			i++
			continue
		}
		out = append(out, c)
	}
	return out
}

// dropEchoes removes the updates from an object to itself (same UID, same
// resourceVersion): what a relist delivers for every object it lists
// unchanged. How many relists each side makes depends on timing, not on
// semantics: one side may resume a cut watch where the other, whose
// version is older than the fake's compaction, must list again.
func dropEchoes(calls []call, counts map[string]int) []call {
	var out []call
	for _, c := range calls {
		if c.Kind == "update" && c.RV == c.OldRV && c.UID == c.OldUID {
			counts["relist echoes (updates to the same version) left out"]++
			continue
		}
		out = append(out, c)
	}
	return out
}

// sameDeletes makes got's deletions equal to want's where the two sides
// saw one deletion of one object in different ways: one from the watch
// (the object at the deletion's version), the other from a relist that
// found it gone (a tombstone with the last version it knew). Which side
// relists is a matter of timing too.
func sameDeletes(want, got []call, counts map[string]int) []call {
	if len(want) != len(got) {
		return got
	}
	out := slices.Clone(got)
	for i, w := range want {
		g := got[i]
		if w.Kind == "delete" && g.Kind == "delete" && w.UID == g.UID && w.Tomb != g.Tomb {
			out[i] = w
			counts["a deletion seen by the watch on one side, by a relist on the other"]++
		}
	}
	return out
}

// dropUnknownDeletes removes client-go's OnDelete calls for a key its
// handler did not have.
func dropUnknownDeletes(calls []call, had bool, counts map[string]int) []call {
	var out []call
	for _, c := range calls {
		switch {
		case c.Kind == "delete" && !had:
			counts["OnDelete of a key the handler never had (client-go only)"]++
			continue
		case c.Kind == "delete":
			had = false
		default:
			had = true
		}
		out = append(out, c)
	}
	return out
}

func TestDifferentialAgainstClientGo(t *testing.T) {
	rng := seeded(t, 5)
	counts := map[string]int{}
	var mu sync.Mutex
	for i := range *diffScripts {
		seed := rng.Uint64()
		t.Run(fmt.Sprintf("script-%d", i), func(t *testing.T) {
			local := map[string]int{}
			synctest.Test(t, func(t *testing.T) { runDiffScript(t, seed, local) })
			mu.Lock()
			for k, n := range local {
				counts[k] += n
			}
			mu.Unlock()
			if t.Failed() {
				t.Logf("script seed %d", seed)
			}
		})
	}
	t.Logf("%d scripts: %v", *diffScripts, counts)
	for _, what := range []string{"relists", "cuts", "tombstones", "updates", "deletes"} {
		if counts[what] == 0 {
			t.Errorf("the scripts made no %s: the test tests little (%v)", what, counts)
		}
	}
}

func runDiffScript(t *testing.T, seed uint64, counts map[string]int) {
	rng := rand.New(rand.NewPCG(seed, 13))
	apps := []string{"a", "b", "c"}
	labelsFor := func() map[string]string {
		if rng.IntN(4) == 0 {
			return nil
		}
		return map[string]string{"app": apps[rng.IntN(len(apps))]}
	}
	var seedPods []*corev1.Pod
	for i := range 10 + rng.IntN(30) {
		seedPods = append(seedPods, it.Pod(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("p-%d", i), labelsFor()))
	}
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{Window: 100000, NoWatchList: rng.IntN(2) == 0}, seedPods...)

	_, v := newView(t, fake, typed.Options[*corev1.Pod]{}, clientgo.Options[*corev1.Pod]{})
	if err := v.AddIndexers(clientcache.Indexers{"app": appIndex}); err != nil {
		t.Fatal(err)
	}
	cg := clientcache.NewSharedIndexInformer(fake.ListerWatcher(), &corev1.Pod{}, 0,
		clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc, "app": appIndex})
	ours, theirs := newRecorder(), newRecorder()
	if _, err := v.AddEventHandler(ours.handler()); err != nil {
		t.Fatal(err)
	}
	if _, err := cg.AddEventHandler(theirs.handler()); err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, v)
	runUntilCleanup(t, cg)

	live := make([]cache.Key, 0, len(seedPods))
	for _, p := range seedPods {
		live = append(live, cache.KeyOf(p))
	}
	next := len(seedPods)
	before := map[string]string{} // client-go's handler's view before the step
	step := func(what string) {
		t.Helper()
		want := podState(fake.Items())
		it.Eventually(t, "both converge after "+what, func() bool {
			return maps.Equal(want, stateOf(v.GetStore().List())) && maps.Equal(want, stateOf(cg.GetStore().List())) &&
				maps.Equal(want, ours.state()) && maps.Equal(want, theirs.state())
		})
		synctest.Wait()
		had := before
		before = theirs.state()
		oursCalls, theirCalls := ours.take(), theirs.take()
		for k := range joinKeys(oursCalls, theirCalls) {
			for _, c := range oursCalls[k] {
				switch {
				case c.Tomb:
					counts["tombstones"]++
				case c.Kind == "update":
					counts["updates"]++
				case c.Kind == "delete":
					counts["deletes"]++
				}
			}
			_, known := had[k]
			want := dropEchoes(dropUnknownDeletes(theirCalls[k], known, counts), counts)
			got := sameDeletes(want, dropEchoes(normaliseView(oursCalls[k], counts), counts), counts)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("after %s, calls for %s differ (-client-go +view):\n%s", what, k, diff)
			}
		}
		if diff := queryDiff(cg.GetIndexer(), v.GetIndexer()); diff != "" {
			t.Fatalf("after %s, queries differ (-client-go +view):\n%s", what, diff)
		}
		for _, bad := range append(ours.violations(), theirs.violations()...) {
			t.Errorf("after %s: %s", what, bad)
		}
	}
	create := func() {
		next++
		p := it.Pod(fmt.Sprintf("ns-%d", next%3), fmt.Sprintf("p-%d", next), labelsFor())
		if _, err := fake.Create(p); err != nil {
			t.Fatal(err)
		}
		live = append(live, cache.KeyOf(p))
	}
	step("the initial list")
	for op := range 30 + rng.IntN(40) {
		switch r := rng.IntN(100); {
		case r < 25 || len(live) < 5:
			create()
		case r < 60:
			k := live[rng.IntN(len(live))]
			if _, err := fake.Update(it.Pod(k.Namespace, k.Name, labelsFor())); err != nil {
				t.Fatal(err)
			}
		case r < 80:
			j := rng.IntN(len(live))
			if _, err := fake.Delete(live[j]); err != nil {
				t.Fatal(err)
			}
			live = slices.Delete(live, j, j+1)
		case r < 90:
			counts["cuts"]++
			time.Sleep(2 * time.Second)
			fake.CutWatches()
		default:
			counts["relists"]++
			step("the changes before a gap")
			fake.DropEvents(1 << 20)
			for range 1 + rng.IntN(6) {
				if len(live) < 3 {
					create()
					continue
				}
				j := rng.IntN(len(live))
				k := live[j]
				switch rng.IntN(4) {
				case 0, 1: // a delete no watch sees
					if _, err := fake.Delete(k); err != nil {
						t.Fatal(err)
					}
					if rng.IntN(3) == 0 { // and a new object under the name
						if _, err := fake.Create(it.Pod(k.Namespace, k.Name, labelsFor())); err != nil {
							t.Fatal(err)
						}
					} else {
						live = slices.Delete(live, j, j+1)
					}
				case 2:
					if _, err := fake.Update(it.Pod(k.Namespace, k.Name, labelsFor())); err != nil {
						t.Fatal(err)
					}
				default:
					create()
				}
			}
			fake.DropEvents(0)
			fake.Compact()
			fake.CutWatches()
			step("a relist")
			continue
		}
		if rng.IntN(6) == 0 {
			step(fmt.Sprintf("op %d", op))
		}
	}
	step("the last op")
}

func joinKeys[V any](a, b map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// queryDiff asks both indexers every read a client-go library makes and
// returns the differences (-want +got), "" if none.
func queryDiff(want, got clientcache.Indexer) string {
	type answer struct {
		Query string
		Keys  []string
		State map[string]string
		Found bool
		Err   bool
	}
	ask := func(x clientcache.Indexer) []answer {
		var out []answer
		add := func(q string, objs []any, err error) {
			out = append(out, answer{Query: q, Keys: keysOf(objs), State: stateOf(objs), Err: err != nil})
		}
		add("List", x.List(), nil)
		keys := x.ListKeys()
		slices.Sort(keys)
		out = append(out, answer{Query: "ListKeys", Keys: keys})
		for _, k := range append(keysOf(want.List()), "ns-0/missing", "missing", "a/b/c", "/p-1", "") {
			obj, found, err := x.GetByKey(k)
			out = append(out, answer{Query: "GetByKey " + k, State: stateOf(nonNil(obj)), Found: found, Err: err != nil})
			obj, found, err = x.Get(&metav1.ObjectMeta{Namespace: "ns-1", Name: "p-" + k})
			out = append(out, answer{Query: "Get ns-1/p-" + k, State: stateOf(nonNil(obj)), Found: found, Err: err != nil})
		}
		for _, idx := range []string{clientcache.NamespaceIndex, "app"} {
			vals := x.ListIndexFuncValues(idx)
			slices.Sort(vals)
			out = append(out, answer{Query: "ListIndexFuncValues " + idx, Keys: vals})
			for _, val := range []string{"ns-0", "ns-1", "ns-2", "a", "b", "c", "none"} {
				objs, err := x.ByIndex(idx, val)
				add("ByIndex "+idx+" "+val, objs, err)
				keys, err := x.IndexKeys(idx, val)
				slices.Sort(keys)
				out = append(out, answer{Query: "IndexKeys " + idx + " " + val, Keys: keys, Err: err != nil})
			}
		}
		for _, ns := range []string{"ns-0", "ns-2", "none"} {
			objs, err := x.Index(clientcache.NamespaceIndex, &metav1.ObjectMeta{Namespace: ns})
			add("Index namespace "+ns, objs, err)
		}
		objs, err := x.Index("app", it.Pod("x", "y", map[string]string{"app": "b"}))
		add("Index app b", objs, err)
		objs, err = x.ByIndex("no-such-index", "a")
		add("ByIndex no-such-index", objs, err)
		lister := corelisters.NewPodLister(x)
		for _, sel := range []labels.Selector{labels.Everything(), labels.SelectorFromSet(labels.Set{"app": "a"})} {
			pods, err := lister.List(sel)
			add("PodLister.List "+sel.String(), podsAny(pods), err)
			pods, err = lister.Pods("ns-1").List(sel)
			add("PodLister.Pods(ns-1).List "+sel.String(), podsAny(pods), err)
		}
		return out
	}
	return cmp.Diff(ask(want), ask(got))
}

func nonNil(obj any) []any {
	if obj == nil {
		return nil
	}
	return []any{obj}
}

func podsAny(pods []*corev1.Pod) []any {
	out := make([]any, len(pods))
	for i, p := range pods {
		out[i] = p
	}
	return out
}
