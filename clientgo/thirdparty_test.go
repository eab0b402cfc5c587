package clientgo_test

// Code written for client-go, run on the view: generated listers, the
// generic lister, WaitForCacheSync, client-go's typed wrapper, and the
// deterministic tombstone scenario against client-go's own informer.

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/clientgo"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// randomPods returns n pods in four namespaces with random app and tier
// labels (some without).
func randomPods(t *testing.T, n int) []*corev1.Pod {
	rng := seeded(t, 7)
	var out []*corev1.Pod
	for i := range n {
		l := map[string]string{}
		if rng.IntN(5) > 0 {
			l["app"] = []string{"web", "db", "cache"}[rng.IntN(3)]
		}
		if rng.IntN(2) == 0 {
			l["tier"] = []string{"front", "back"}[rng.IntN(2)]
		}
		out = append(out, it.Pod(fmt.Sprintf("ns-%d", rng.IntN(4)), fmt.Sprintf("p-%d", i), l))
	}
	return out
}

func selectors(t *testing.T) []labels.Selector {
	var out []labels.Selector
	for _, s := range []string{"", "app=web", "app in (web,db)", "tier!=front", "!app", "app,tier=back", "app=nope"} {
		sel, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sel)
	}
	return append(out, labels.Nothing())
}

// samePods reports the difference between two pod lists as sets of
// pointers: the lister must hand out the informer's own objects.
func samePods(want, got []*corev1.Pod) string {
	key := func(p *corev1.Pod) string { return fmt.Sprintf("%s/%s@%p", p.Namespace, p.Name, p) }
	a, b := []string{}, []string{}
	for _, p := range want {
		a = append(a, key(p))
	}
	for _, p := range got {
		b = append(b, key(p))
	}
	slices.Sort(a)
	slices.Sort(b)
	return cmp.Diff(a, b)
}

// The generated pod lister over the view's indexer returns exactly the
// pods the typed lister returns, for every selector and namespace.
func TestGeneratedPodLister(t *testing.T) {
	inf, v, _ := syncedViewOf(t, randomPods(t, 300))
	ours := inf.Lister()
	theirs := corelisters.NewPodLister(v.GetIndexer())
	for _, sel := range selectors(t) {
		want, err := ours.List(sel)
		if err != nil {
			t.Fatal(err)
		}
		got, err := theirs.List(sel)
		if err != nil {
			t.Fatal(err)
		}
		if diff := samePods(want, got); diff != "" {
			t.Errorf("List(%q) (-typed +generated):\n%s", sel, diff)
		}
		for _, ns := range []string{"ns-0", "ns-1", "ns-3", "none"} {
			want, err := ours.Namespace(ns).List(sel)
			if err != nil {
				t.Fatal(err)
			}
			got, err := theirs.Pods(ns).List(sel)
			if err != nil {
				t.Fatal(err)
			}
			if diff := samePods(want, got); diff != "" {
				t.Errorf("Pods(%s).List(%q) (-typed +generated):\n%s", ns, sel, diff)
			}
		}
	}
	for _, k := range append(inf.Store().ListKeys(), cache.Key{Namespace: "ns-0", Name: "missing"}) {
		want, wantErr := ours.Namespace(k.Namespace).Get(k.Name)
		got, err := theirs.Pods(k.Namespace).Get(k.Name)
		if want != got || (wantErr == nil) != (err == nil) || apierrors.IsNotFound(wantErr) != apierrors.IsNotFound(err) {
			t.Errorf("Get(%v) = (%p, %v), typed lister (%p, %v)", k, got, err, want, wantErr)
		}
	}
}

func syncedViewOf(t *testing.T, pods []*corev1.Pod) (*typed.Informer[*corev1.Pod], clientcache.SharedIndexInformer, *sourcetest.Fake[*corev1.Pod]) {
	t.Helper()
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, pods...)
	inf, v := newView(t, fake, typed.Options[*corev1.Pod]{LabelIndexes: []string{"app"}}, clientgo.Options[*corev1.Pod]{})
	runUntilCleanup(t, v)
	if !clientcache.WaitForCacheSync(t.Context().Done(), v.HasSynced) {
		t.Fatal("not synced")
	}
	return inf, v, fake
}

func TestGenericLister(t *testing.T) {
	inf, v, _ := syncedViewOf(t, randomPods(t, 100))
	gl := clientcache.NewGenericLister(v.GetIndexer(), podsResource)
	asPods := func(objs []runtime.Object) []*corev1.Pod {
		var out []*corev1.Pod
		for _, o := range objs {
			p, ok := o.(*corev1.Pod)
			if !ok {
				t.Fatalf("the generic lister returned a %T", o)
			}
			out = append(out, p)
		}
		return out
	}
	for _, sel := range selectors(t) {
		want, _ := inf.Lister().List(sel)
		got, err := gl.List(sel)
		if err != nil {
			t.Fatal(err)
		}
		if diff := samePods(want, asPods(got)); diff != "" {
			t.Errorf("List(%q) (-typed +generic):\n%s", sel, diff)
		}
		want, _ = inf.Lister().Namespace("ns-2").List(sel)
		got, err = gl.ByNamespace("ns-2").List(sel)
		if err != nil {
			t.Fatal(err)
		}
		if diff := samePods(want, asPods(got)); diff != "" {
			t.Errorf("ByNamespace(ns-2).List(%q) (-typed +generic):\n%s", sel, diff)
		}
	}
	k := inf.Store().ListKeys()[0]
	want, _ := inf.Store().GetByKey(k)
	if got, err := gl.Get(k.String()); err != nil || got != runtime.Object(want) {
		t.Errorf("Get(%q) = (%v, %v), want the cached pod", k, got, err)
	}
	if got, err := gl.ByNamespace(k.Namespace).Get(k.Name); err != nil || got != runtime.Object(want) {
		t.Errorf("ByNamespace(%s).Get(%s) = (%v, %v), want the cached pod", k.Namespace, k.Name, got, err)
	}
	if _, err := gl.ByNamespace("ns-0").Get("missing"); !apierrors.IsNotFound(err) {
		t.Errorf("Get(missing) = %v, want NotFound", err)
	}
}

func TestWaitForCacheSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, v := newView(t, fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(6)...), typed.Options[*corev1.Pod]{}, clientgo.Options[*corev1.Pod]{})
		reg, err := v.AddEventHandler(newRecorder().handler())
		if err != nil {
			t.Fatal(err)
		}
		runUntilCleanup(t, v)
		if !clientcache.WaitForCacheSync(t.Context().Done(), v.HasSynced, reg.HasSynced) {
			t.Error("WaitForCacheSync = false")
		}
		if !clientcache.WaitForNamedCacheSyncWithContext(t.Context(), v.HasSynced, v.GetController().HasSynced) {
			t.Error("WaitForNamedCacheSyncWithContext = false")
		}

		// An informer that cannot sync: the wait ends with its stop channel.
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: true})
		fake.FailLists(1<<30, apierrors.NewForbidden(podsResource, "", errors.New("no RBAC")))
		_, stuck := newView(t, fake, typed.Options[*corev1.Pod]{}, clientgo.Options[*corev1.Pod]{})
		runUntilCleanup(t, stuck)
		stopCh := make(chan struct{})
		time.AfterFunc(time.Minute, func() { close(stopCh) })
		if clientcache.WaitForCacheSync(stopCh, stuck.HasSynced) {
			t.Error("WaitForCacheSync = true for an informer that cannot list")
		}
	})
}

// A handler added after sync, through client-go's typed wrapper over the
// view, gets the initial list and a typed tombstone, as on client-go's
// informer.
func TestTypedWrapperAndLateHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(5)...)
		_, v := newView(t, fake, typed.Options[*corev1.Pod]{}, clientgo.Options[*corev1.Pod]{})
		cg := clientcache.NewSharedIndexInformer(fake.ListerWatcher(), &corev1.Pod{}, 0, clientcache.Indexers{})
		runUntilCleanup(t, v)
		runUntilCleanup(t, cg)
		if !clientcache.WaitForCacheSync(t.Context().Done(), v.HasSynced, cg.HasSynced) {
			t.Fatal("not synced")
		}
		var mu sync.Mutex
		got := map[string][]string{}
		note := func(side, what string) {
			mu.Lock()
			defer mu.Unlock()
			got[side] = append(got[side], what)
		}
		for side, inf := range map[string]clientcache.SharedIndexInformer{"client-go": cg, "view": v} {
			ti := clientcache.NewTypedSharedIndexInformer[*corev1.Pod](inf)
			reg, err := ti.AddTypedEventHandler(clientcache.TypedResourceEventHandlerDetailedFuncs[*corev1.Pod]{
				AddFunc: func(p *corev1.Pod, initial bool) { note(side, fmt.Sprintf("add %s initial=%v", p.Name, initial)) },
				DeleteFunc: func(d clientcache.DeletedObject[*corev1.Pod]) {
					note(side, fmt.Sprintf("delete %s rv=%s tombstone=%v", d.GetKey(), d.OptionalObj.ResourceVersion, d.FinalStateUnknown != nil))
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if !clientcache.WaitForCacheSync(t.Context().Done(), reg.HasSynced) {
				t.Fatalf("%s: late handler not synced", side)
			}
			if pods, err := ti.GetTypedIndexer().ByTypedIndex(clientcache.NamespaceIndex, "ns-1"); side == "view" && (err != nil || len(pods) == 0) {
				t.Errorf("ByTypedIndex(namespace, ns-1) = (%v, %v)", pods, err)
			}
		}
		// Deletes no watch sees, then a relist after compaction: tombstones.
		time.Sleep(2 * time.Second)
		fake.DropEvents(1 << 20)
		for _, k := range []cache.Key{{Namespace: "ns-0", Name: "p-0"}, {Namespace: "ns-1", Name: "p-4"}} {
			if _, err := fake.Delete(k); err != nil {
				t.Fatal(err)
			}
		}
		fake.DropEvents(0)
		fake.Compact()
		fake.CutWatches()
		it.Eventually(t, "both saw the deletes", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(got["view"]) == 7 && len(got["client-go"]) == 7
		})
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, side := range []string{"view", "client-go"} {
			slices.Sort(got[side])
		}
		if diff := cmp.Diff(got["client-go"], got["view"]); diff != "" {
			t.Errorf("calls (-client-go +view):\n%s", diff)
		}
		if !slices.Contains(got["view"], "delete ns-0/p-0 rv=101 tombstone=true") {
			t.Errorf("no tombstone for ns-0/p-0 with its last state in %v", got["view"])
		}
	})
}
