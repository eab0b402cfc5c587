package cache_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/typedinformer/informer/cache"
)

func listerPods() []*corev1.Pod {
	return []*corev1.Pod{
		newPod("a", "web-0", "1", "app", "web", "tier", "front"),
		newPod("a", "web-1", "1", "app", "web", "tier", "db"),
		newPod("a", "db-0", "1", "app", "db", "tier", "db"),
		newPod("b", "web-0", "1", "app", "web"),
		newPod("b", "plain", "1"),
		newPod("", "node", "1", "app", "web"),
		newPod("", "other", "1", "tier", "front"),
	}
}

func TestListerList(t *testing.T) {
	x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{})
	mustAdd(t, x, listerPods()...)
	l := cache.NewLister(x, podsResource)
	tests := []struct {
		name     string
		selector labels.Selector
		want     []string
	}{
		{"everything", labels.Everything(), []string{"a/db-0@1", "a/web-0@1", "a/web-1@1", "b/plain@1", "b/web-0@1", "node@1", "other@1"}},
		{"nil selector", nil, []string{}},
		{"nothing", labels.Nothing(), []string{}},
		{"equality", mustSelector(t, "app=web"), []string{"a/web-0@1", "a/web-1@1", "b/web-0@1", "node@1"}},
		{"double equality", mustSelector(t, "app==db"), []string{"a/db-0@1"}},
		{"from set", labels.SelectorFromSet(labels.Set{"app": "web", "tier": "front"}), []string{"a/web-0@1"}},
		{"inequality", mustSelector(t, "app!=web"), []string{"a/db-0@1", "b/plain@1", "other@1"}},
		{"in", mustSelector(t, "app in (db,web)"), []string{"a/db-0@1", "a/web-0@1", "a/web-1@1", "b/web-0@1", "node@1"}},
		{"notin", mustSelector(t, "app notin (web)"), []string{"a/db-0@1", "b/plain@1", "other@1"}},
		{"exists", mustSelector(t, "tier"), []string{"a/db-0@1", "a/web-0@1", "a/web-1@1", "other@1"}},
		{"does not exist", mustSelector(t, "!app"), []string{"b/plain@1", "other@1"}},
		{"conjunction", mustSelector(t, "app=web,tier!=db"), []string{"a/web-0@1", "b/web-0@1", "node@1"}},
		{"no match", mustSelector(t, "app=none"), []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := l.List(tt.selector)
			if err != nil {
				t.Fatalf("List(): %v", err)
			}
			if diff := cmp.Diff(tt.want, ids(got)); diff != "" {
				t.Errorf("List(%v) (-want +got):\n%s", tt.selector, diff)
			}
			if diff := cmp.Diff(tt.want, ids(collect(l.Seq(tt.selector)))); diff != "" {
				t.Errorf("Seq(%v) (-want +got):\n%s", tt.selector, diff)
			}
		})
	}
}

func TestNamespaceListerList(t *testing.T) {
	x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{})
	mustAdd(t, x, listerPods()...)
	l := cache.NewLister(x, podsResource)
	tests := []struct {
		ns       string
		selector labels.Selector
		want     []string
	}{
		{"a", labels.Everything(), []string{"a/db-0@1", "a/web-0@1", "a/web-1@1"}},
		{"a", mustSelector(t, "app=web"), []string{"a/web-0@1", "a/web-1@1"}},
		{"a", mustSelector(t, "app=web,tier!=db"), []string{"a/web-0@1"}},
		{"a", nil, []string{}},
		{"b", mustSelector(t, "!app"), []string{"b/plain@1"}},
		{"", labels.Everything(), []string{"node@1", "other@1"}},
		{"", mustSelector(t, "app"), []string{"node@1"}},
		{"missing", labels.Everything(), []string{}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q/%v", tt.ns, tt.selector), func(t *testing.T) {
			got, err := l.Namespace(tt.ns).List(tt.selector)
			if err != nil {
				t.Fatalf("List(): %v", err)
			}
			if diff := cmp.Diff(tt.want, ids(got)); diff != "" {
				t.Errorf("Namespace(%q).List(%v) (-want +got):\n%s", tt.ns, tt.selector, diff)
			}
			if diff := cmp.Diff(tt.want, ids(collect(l.Namespace(tt.ns).Seq(tt.selector)))); diff != "" {
				t.Errorf("Namespace(%q).Seq(%v) (-want +got):\n%s", tt.ns, tt.selector, diff)
			}
		})
	}
}

func TestListerGet(t *testing.T) {
	x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{})
	mustAdd(t, x, listerPods()...)
	tests := []struct {
		name     string
		resource schema.GroupResource
		get      func(l *cache.Lister[*corev1.Pod]) (*corev1.Pod, error)
		want     string // id, or "" for NotFound
		wantMsg  string
	}{
		{"cluster-scoped", podsResource, func(l *cache.Lister[*corev1.Pod]) (*corev1.Pod, error) { return l.Get("node") }, "node@1", ""},
		{"cluster-scoped does not see namespaced", podsResource, func(l *cache.Lister[*corev1.Pod]) (*corev1.Pod, error) { return l.Get("plain") }, "", `pods "plain" not found`},
		{"namespaced", podsResource, func(l *cache.Lister[*corev1.Pod]) (*corev1.Pod, error) { return l.Namespace("b").Get("web-0") }, "b/web-0@1", ""},
		{"namespaced missing", podsResource, func(l *cache.Lister[*corev1.Pod]) (*corev1.Pod, error) { return l.Namespace("b").Get("x") }, "", `pods "x" not found`},
		{"wrong namespace", podsResource, func(l *cache.Lister[*corev1.Pod]) (*corev1.Pod, error) { return l.Namespace("b").Get("db-0") }, "", `pods "db-0" not found`},
		{"missing with group", schema.GroupResource{Group: "apps", Resource: "deployments"}, func(l *cache.Lister[*corev1.Pod]) (*corev1.Pod, error) { return l.Get("x") }, "", `deployments.apps "x" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.get(cache.NewLister(x, tt.resource))
			if tt.want == "" {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("error = %v, want NotFound", err)
				}
				if diff := cmp.Diff(tt.wantMsg, err.Error()); diff != "" {
					t.Errorf("error message (-want +got):\n%s", diff)
				}
				if got != nil {
					t.Errorf("object = %v, want nil with NotFound", id(got))
				}
				return
			}
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if diff := cmp.Diff(tt.want, id(got)); diff != "" {
				t.Errorf("Get (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListerByIndex(t *testing.T) {
	x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{Indexers: testIndexers()})
	mustAdd(t, x, indexedPods()...)
	l := cache.NewLister(x, podsResource)
	for name, vals := range wantIndexed {
		for v, want := range vals {
			got, err := l.ByIndex(name, v)
			if err != nil {
				t.Fatalf("ByIndex(%q, %q): %v", name, v, err)
			}
			if diff := cmp.Diff(want, ids(got)); diff != "" {
				t.Errorf("ByIndex(%q, %q) (-want +got):\n%s", name, v, diff)
			}
		}
	}
}

// manyPods returns n pods over nsCount namespaces with varied labels,
// including labels with empty values and numeric labels.
func manyPods(n, nsCount int) []*corev1.Pod {
	apps := []string{"web", "db", "a", "b", "", "-"} // "-" means no app label
	tiers := []string{"front", "db", "-"}
	out := make([]*corev1.Pod, 0, n)
	for i := range n {
		var kv []string
		if a := apps[i%len(apps)]; a != "-" {
			kv = append(kv, "app", a)
		}
		if tr := tiers[(i/7)%len(tiers)]; tr != "-" {
			kv = append(kv, "tier", tr)
		}
		kv = append(kv, "n", strconv.Itoa(i%5))
		ns := ""
		if i%nsCount != 0 {
			ns = "ns-" + strconv.Itoa(i%nsCount)
		}
		out = append(out, newPod(ns, "pod-"+strconv.Itoa(i), "1", kv...))
	}
	return out
}

var accelSelectors = []string{
	"",
	"app=web",
	"app==db",
	"app=",
	"app!=web",
	"app=web,tier!=db",
	"app in (a,b)",
	"app in (a,b,web,nope)",
	"app in (a,a,b)",
	"app notin (a)",
	"!app",
	"app",
	"app=web,tier=front",
	"tier in (db),app in (web,db)",
	"app in (web),tier in (front,db)",
	"app=nonexistent",
	"app in (web),app in (db)",
	"app in (web,db),app notin (db)",
	"n>2",
	"n<1,app=web",
	"tier=db",
}

// TestLabelIndexAcceleration checks that a Lister answers alike with and
// without label indexes, with and without the namespace index.
func TestLabelIndexAcceleration(t *testing.T) {
	pods := manyPods(600, 7)
	plain := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{NoNamespaceIndex: true})
	variants := map[string]*podIndexer{
		"app index": mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{Indexers: cache.Indexers[*corev1.Pod]{
			cache.LabelIndexName("app"): cache.IndexByLabel[*corev1.Pod]("app"),
		}}),
		"app and tier indexes": mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{Indexers: cache.Indexers[*corev1.Pod]{
			cache.LabelIndexName("app"):  cache.IndexByLabel[*corev1.Pod]("app"),
			cache.LabelIndexName("tier"): cache.IndexByLabel[*corev1.Pod]("tier"),
		}}),
		"app index, no namespace index": mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{NoNamespaceIndex: true, Indexers: cache.Indexers[*corev1.Pod]{
			cache.LabelIndexName("app"): cache.IndexByLabel[*corev1.Pod]("app"),
		}}),
		"namespace index only": mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{}),
	}
	mustAdd(t, plain, pods...)
	for _, x := range variants {
		mustAdd(t, x, pods...)
	}
	// Brute force over the pods themselves, independent of any Lister.
	brute := func(ns string, scoped bool, sel labels.Selector) []string {
		var out []*corev1.Pod
		for _, p := range pods {
			if (!scoped || p.Namespace == ns) && sel.Matches(labels.Set(p.Labels)) {
				out = append(out, p)
			}
		}
		return ids(out)
	}
	ref := cache.NewLister(plain, podsResource)
	nss := []string{"", "ns-1", "ns-3", "missing"}
	selectors := map[string]labels.Selector{}
	for _, s := range accelSelectors {
		selectors[s] = mustSelector(t, s)
	}
	// A requirement built directly keeps repeated values, which the parser
	// would have removed.
	req, err := labels.NewRequirement("app", selection.In, []string{"web", "db", "web"})
	if err != nil {
		t.Fatal(err)
	}
	selectors["NewRequirement(app in (web,db,web))"] = labels.NewSelector().Add(*req)
	for s, sel := range selectors {
		want := brute("", false, sel)
		got, err := ref.List(sel)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, ids(got)); diff != "" {
			t.Fatalf("reference List(%q) disagrees with brute force (-want +got):\n%s", s, diff)
		}
		for vname, x := range variants {
			l := cache.NewLister(x, podsResource)
			t.Run(vname+"/"+s, func(t *testing.T) {
				got, err := l.List(sel)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, ids(got)); diff != "" {
					t.Errorf("List(%q) (-want +got):\n%s", s, diff)
				}
				if diff := cmp.Diff(want, ids(collect(l.Seq(sel)))); diff != "" {
					t.Errorf("Seq(%q) (-want +got):\n%s", s, diff)
				}
				for _, ns := range nss {
					want := brute(ns, true, sel)
					got, err := l.Namespace(ns).List(sel)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(want, ids(got)); diff != "" {
						t.Errorf("Namespace(%q).List(%q) (-want +got):\n%s", ns, s, diff)
					}
					if diff := cmp.Diff(want, ids(collect(l.Namespace(ns).Seq(sel)))); diff != "" {
						t.Errorf("Namespace(%q).Seq(%q) (-want +got):\n%s", ns, s, diff)
					}
				}
			})
		}
	}
}

// withDeadlockGuard runs f and fails the test if it has not returned within
// a generous bound.
func withDeadlockGuard(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("deadlock: did not finish within 10s")
	}
}

// TestIteratorBodyMayWrite runs every iterator with a loop body that writes
// to the same Indexer.
func TestIteratorBodyMayWrite(t *testing.T) {
	sel := mustSelector(t, "app=web")
	iterators := map[string]func(x *podIndexer, l *cache.Lister[*corev1.Pod]) func(func(*corev1.Pod) bool){
		"Values": func(x *podIndexer, _ *cache.Lister[*corev1.Pod]) func(func(*corev1.Pod) bool) { return x.Values() },
		"ByIndexValues": func(x *podIndexer, _ *cache.Lister[*corev1.Pod]) func(func(*corev1.Pod) bool) {
			return x.ByIndexValues(appIndex, "web")
		},
		"Lister.Seq": func(_ *podIndexer, l *cache.Lister[*corev1.Pod]) func(func(*corev1.Pod) bool) { return l.Seq(sel) },
		"Lister.Seq(all)": func(_ *podIndexer, l *cache.Lister[*corev1.Pod]) func(func(*corev1.Pod) bool) {
			return l.Seq(labels.Everything())
		},
		"Namespace.Seq": func(_ *podIndexer, l *cache.Lister[*corev1.Pod]) func(func(*corev1.Pod) bool) {
			return l.Namespace("a").Seq(sel)
		},
		"All": func(x *podIndexer, _ *cache.Lister[*corev1.Pod]) func(func(*corev1.Pod) bool) {
			return func(yield func(*corev1.Pod) bool) {
				for _, p := range x.All() {
					if !yield(p) {
						return
					}
				}
			}
		},
		"Keys": func(x *podIndexer, _ *cache.Lister[*corev1.Pod]) func(func(*corev1.Pod) bool) {
			return func(yield func(*corev1.Pod) bool) {
				for k := range x.Keys() {
					p, _, _ := x.GetByKey(k)
					if !yield(p) {
						return
					}
				}
			}
		},
	}
	writes := map[string]func(t *testing.T, x *podIndexer, p *corev1.Pod, i int){
		"Add/Update/Delete": func(t *testing.T, x *podIndexer, p *corev1.Pod, i int) {
			if p == nil {
				return
			}
			if err := x.Update(newPod(p.Namespace, p.Name, "2", "app", "web")); err != nil {
				t.Error(err)
			}
			if err := x.Add(newPod("a", fmt.Sprintf("new-%d", i), "1", "app", "web")); err != nil {
				t.Error(err)
			}
			if err := x.Delete(p); err != nil {
				t.Error(err)
			}
		},
		"Replace": func(t *testing.T, x *podIndexer, _ *corev1.Pod, i int) {
			if err := x.Replace(listerPods(), strconv.Itoa(i)); err != nil {
				t.Error(err)
			}
		},
		"AddIndexers": func(t *testing.T, x *podIndexer, _ *corev1.Pod, i int) {
			if err := x.AddIndexers(cache.Indexers[*corev1.Pod]{fmt.Sprintf("idx-%d", i): byTags}); err != nil {
				t.Error(err)
			}
		},
		"nested reads": func(t *testing.T, x *podIndexer, _ *corev1.Pod, _ int) {
			_ = x.List()
			_, _ = x.ByIndex(appIndex, "web")
			_ = collect(x.Values())
			_, _ = cache.NewLister(x, podsResource).List(labels.Everything())
		},
	}
	for iname, it := range iterators {
		for wname, write := range writes {
			t.Run(iname+"/"+wname, func(t *testing.T) {
				x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{Indexers: cache.Indexers[*corev1.Pod]{appIndex: cache.IndexByLabel[*corev1.Pod]("app")}})
				mustAdd(t, x, listerPods()...)
				l := cache.NewLister(x, podsResource)
				n := 0
				withDeadlockGuard(t, func() {
					for p := range it(x, l) {
						write(t, x, p, n)
						n++
					}
				})
				if n == 0 {
					t.Errorf("iterator yielded nothing")
				}
			})
		}
	}
}

// panicSelector is a custom selector whose Matches panics.
type panicSelector struct{ labels.Selector }

func (panicSelector) Matches(labels.Labels) bool                { panic("selector panic") }
func (panicSelector) Empty() bool                               { return false }
func (panicSelector) Requirements() (labels.Requirements, bool) { return nil, false }
func (panicSelector) String() string                            { return "panic" }

// TestPanickingSelectorReleasesLock checks that a selector that panics
// inside a query leaves the Indexer usable: the read lock is released as
// the panic unwinds.
func TestPanickingSelectorReleasesLock(t *testing.T) {
	queries := map[string]func(l *cache.Lister[*corev1.Pod]){
		"List":           func(l *cache.Lister[*corev1.Pod]) { _, _ = l.List(panicSelector{}) },
		"Seq":            func(l *cache.Lister[*corev1.Pod]) { collect(l.Seq(panicSelector{})) },
		"Namespace.List": func(l *cache.Lister[*corev1.Pod]) { _, _ = l.Namespace("a").List(panicSelector{}) },
		"Namespace.Seq":  func(l *cache.Lister[*corev1.Pod]) { collect(l.Namespace("a").Seq(panicSelector{})) },
	}
	for name, query := range queries {
		t.Run(name, func(t *testing.T) {
			x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{})
			mustAdd(t, x, listerPods()...)
			l := cache.NewLister(x, podsResource)
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("query did not panic")
					}
				}()
				query(l)
			}()
			withDeadlockGuard(t, func() {
				mustAdd(t, x, newPod("a", "after", "1"))
			})
			if _, ok, _ := x.GetByKey(cache.Key{Namespace: "a", Name: "after"}); !ok {
				t.Errorf("Add after the panic did not store the object")
			}
		})
	}
}
