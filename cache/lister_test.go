package cache_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

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

// listerVariants are the same pods in stores with and without label
// indexes: every Lister query must answer alike in all of them.
func listerVariants(t *testing.T, pods []*corev1.Pod) map[string]*podLister {
	t.Helper()
	out := map[string]*podLister{}
	for name, keys := range map[string][]string{
		"no label index":       nil,
		"app label index":      {"app"},
		"app and tier indexes": {"app", "tier"},
		"unused label index":   {"zone"},
	} {
		w := mustWriter(t, podOptions{LabelIndexes: keys, Resource: podsResource})
		if _, err := w.Replace(entries(pods...)); err != nil {
			t.Fatal(err)
		}
		out[name] = w.Store().Lister()
	}
	return out
}

func TestListerList(t *testing.T) {
	tests := []struct {
		name     string
		selector labels.Selector
		want     []string
	}{
		{"everything", labels.Everything(), []string{"a/db-0@1", "a/web-0@1", "a/web-1@1", "b/plain@1", "b/web-0@1", "node@1", "other@1"}},
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
		{"two indexed equalities", mustSelector(t, "app=web,tier=db"), []string{"a/web-1@1"}},
		{"no match", mustSelector(t, "app=none"), []string{}},
	}
	for vname, l := range listerVariants(t, listerPods()) {
		for _, tt := range tests {
			t.Run(vname+"/"+tt.name, func(t *testing.T) {
				got, err := l.List(tt.selector)
				if err != nil {
					t.Fatalf("List(): %v", err)
				}
				if diff := cmp.Diff(tt.want, ids(got)); diff != "" {
					t.Errorf("List(%v) (-want +got):\n%s", tt.selector, diff)
				}
				if diff := cmp.Diff(tt.want, ids(collect(l.ListSeq(tt.selector)))); diff != "" {
					t.Errorf("ListSeq(%v) (-want +got):\n%s", tt.selector, diff)
				}
			})
		}
	}
}

func TestNamespaceListerList(t *testing.T) {
	tests := []struct {
		ns       string
		selector labels.Selector
		want     []string
	}{
		{"a", labels.Everything(), []string{"a/db-0@1", "a/web-0@1", "a/web-1@1"}},
		{"a", mustSelector(t, "app=web"), []string{"a/web-0@1", "a/web-1@1"}},
		{"a", mustSelector(t, "app in (web,db),tier=db"), []string{"a/db-0@1", "a/web-1@1"}},
		{"a", mustSelector(t, "app=web,tier!=db"), []string{"a/web-0@1"}},
		{"a", labels.Nothing(), []string{}},
		{"b", mustSelector(t, "!app"), []string{"b/plain@1"}},
		{"b", mustSelector(t, "app=web"), []string{"b/web-0@1"}},
		// With an app index, the one app=db pod is the candidate set, not
		// the namespace: it must still be checked for the namespace.
		{"b", mustSelector(t, "app=db"), []string{}},
		{"a", mustSelector(t, "app=db"), []string{"a/db-0@1"}},
		{"", mustSelector(t, "app in (db)"), []string{}},
		{"", labels.Everything(), []string{"node@1", "other@1"}},
		{"", mustSelector(t, "app"), []string{"node@1"}},
		{"", mustSelector(t, "app=web"), []string{"node@1"}},
		{"missing", labels.Everything(), []string{}},
		{"missing", mustSelector(t, "app=web"), []string{}},
	}
	for vname, l := range listerVariants(t, listerPods()) {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/%q/%v", vname, tt.ns, tt.selector), func(t *testing.T) {
				got, err := l.Namespace(tt.ns).List(tt.selector)
				if err != nil {
					t.Fatalf("List(): %v", err)
				}
				if diff := cmp.Diff(tt.want, ids(got)); diff != "" {
					t.Errorf("Namespace(%q).List(%v) (-want +got):\n%s", tt.ns, tt.selector, diff)
				}
				if diff := cmp.Diff(tt.want, ids(collect(l.Namespace(tt.ns).ListSeq(tt.selector)))); diff != "" {
					t.Errorf("Namespace(%q).ListSeq(%v) (-want +got):\n%s", tt.ns, tt.selector, diff)
				}
			})
		}
	}
}

func TestListerNilSelector(t *testing.T) {
	w := mustWriter(t, podOptions{LabelIndexes: []string{"app"}})
	mustPut(t, w, listerPods()...)
	l := w.Store().Lister()
	if got, err := l.List(nil); !errors.Is(err, cache.ErrNilSelector) || got != nil {
		t.Errorf("List(nil) = %v, %v; want nil, ErrNilSelector", ids(got), err)
	}
	if got, err := l.Namespace("a").List(nil); !errors.Is(err, cache.ErrNilSelector) || got != nil {
		t.Errorf("Namespace(a).List(nil) = %v, %v; want nil, ErrNilSelector", ids(got), err)
	}
	if got := collect(l.ListSeq(nil)); len(got) != 0 {
		t.Errorf("ListSeq(nil) = %v, want nothing", ids(got))
	}
	if got := collect(l.Namespace("a").ListSeq(nil)); len(got) != 0 {
		t.Errorf("Namespace(a).ListSeq(nil) = %v, want nothing", ids(got))
	}
}

func TestListerGet(t *testing.T) {
	deployments := schema.GroupResource{Group: "apps", Resource: "deployments"}
	get := func(ns, name string) func(l *podLister) (*corev1.Pod, error) {
		if ns == "-" {
			return func(l *podLister) (*corev1.Pod, error) { return l.Get(name) }
		}
		return func(l *podLister) (*corev1.Pod, error) { return l.Namespace(ns).Get(name) }
	}
	tests := []struct {
		name     string
		resource schema.GroupResource
		get      func(l *podLister) (*corev1.Pod, error)
		want     string // id, or "" for NotFound
		wantMsg  string
	}{
		{"cluster-scoped", podsResource, get("-", "node"), "node@1", ""},
		{"cluster-scoped does not see namespaced", podsResource, get("-", "plain"), "", `pods "plain" not found`},
		{"namespaced", podsResource, get("b", "web-0"), "b/web-0@1", ""},
		{"namespaced missing", podsResource, get("b", "x"), "", `pods "x" not found`},
		{"wrong namespace", podsResource, get("b", "db-0"), "", `pods "db-0" not found`},
		{"missing with group", deployments, get("-", "x"), "", `deployments.apps "x" not found`},
		{"default resource", schema.GroupResource{}, get("a", "x"), "", `objects "x" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := mustWriter(t, podOptions{Resource: tt.resource})
			mustPut(t, w, listerPods()...)
			got, err := tt.get(w.Store().Lister())
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

// TestListerScope checks Get in the wrong scope: an error wrapping
// ErrWrongScope, not NotFound, whether the scope is declared or inferred
// from the stored objects; NotFound when the scope is right or unknown.
func TestListerScope(t *testing.T) {
	namespaced := []*corev1.Pod{newPod("a", "p", "1"), newPod("b", "q", "1")}
	cluster := []*corev1.Pod{newPod("", "n1", "1"), newPod("", "n2", "1")}
	mixed := []*corev1.Pod{newPod("a", "p", "1"), newPod("", "n1", "1")}
	const (
		found = "found"
		nf    = "NotFound"
		wrong = "wrong scope"
	)
	tests := []struct {
		name    string
		scope   cache.Scope
		pods    []*corev1.Pod
		wantGet string // l.Get("x")
		wantNS  string // l.Namespace("a").Get("x")
	}{
		{"declared namespaced", cache.ScopeNamespaced, namespaced, wrong, nf},
		{"declared namespaced, empty", cache.ScopeNamespaced, nil, wrong, nf},
		{"declared cluster", cache.ScopeCluster, cluster, nf, wrong},
		{"declared cluster, empty", cache.ScopeCluster, nil, nf, wrong},
		{"declared beats inferred", cache.ScopeCluster, namespaced, nf, wrong},
		{"inferred namespaced", cache.ScopeUnknown, namespaced, wrong, nf},
		{"inferred cluster", cache.ScopeUnknown, cluster, nf, wrong},
		{"unknown: mixed", cache.ScopeUnknown, mixed, nf, nf},
		{"unknown: empty", cache.ScopeUnknown, nil, nf, nf},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := mustWriter(t, podOptions{Scope: tt.scope, Resource: podsResource})
			mustPut(t, w, tt.pods...)
			l := w.Store().Lister()
			check := func(what, want string, got *corev1.Pod, err error) {
				t.Helper()
				outcome := found
				switch {
				case errors.Is(err, cache.ErrWrongScope):
					outcome = wrong
					if apierrors.IsNotFound(err) {
						t.Errorf("%s: wrong-scope error is also NotFound: %v", what, err)
					}
					for _, s := range []string{"pods", tt.scope.String(), `"x"`} {
						if tt.scope != cache.ScopeUnknown && !strings.Contains(err.Error(), s) {
							t.Errorf("%s: error %q does not mention %s", what, err, s)
						}
					}
				case apierrors.IsNotFound(err):
					outcome = nf
				case err != nil:
					t.Fatalf("%s: unexpected error %v", what, err)
				}
				if outcome != found && got != nil {
					t.Errorf("%s returned %s with its error", what, id(got))
				}
				if diff := cmp.Diff(want, outcome); diff != "" {
					t.Errorf("%s (-want +got):\n%s (error %v)", what, diff, err)
				}
			}
			got, err := l.Get("x")
			check(`Get("x")`, tt.wantGet, got, err)
			got, err = l.Namespace("a").Get("x")
			check(`Namespace("a").Get("x")`, tt.wantNS, got, err)
			// Stored objects are found in their scope.
			for _, p := range tt.pods {
				var got *corev1.Pod
				var err error
				if p.Namespace == "" {
					got, err = l.Get(p.Name)
				} else {
					got, err = l.Namespace(p.Namespace).Get(p.Name)
				}
				if err != nil || got != p {
					t.Errorf("get %s = %s, %v", id(p), id(got), err)
				}
			}
		})
	}
	t.Run("inferred scope follows the content", func(t *testing.T) {
		w := mustWriter(t, podOptions{})
		l := w.Store().Lister()
		if _, err := l.Get("x"); !apierrors.IsNotFound(err) {
			t.Errorf("empty: Get = %v, want NotFound", err)
		}
		mustPut(t, w, namespaced...)
		if _, err := l.Get("x"); !errors.Is(err, cache.ErrWrongScope) {
			t.Errorf("namespaced content: Get = %v, want ErrWrongScope", err)
		}
		if _, err := w.Replace(entries(cluster...)); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Namespace("a").Get("x"); !errors.Is(err, cache.ErrWrongScope) {
			t.Errorf("cluster content: Namespace(a).Get = %v, want ErrWrongScope", err)
		}
		if _, err := l.Get("x"); !apierrors.IsNotFound(err) {
			t.Errorf("cluster content: Get = %v, want NotFound", err)
		}
		mustApply(t, w, delPod(cluster[0]), delPod(cluster[1]))
		if _, err := l.Namespace("a").Get("x"); !apierrors.IsNotFound(err) {
			t.Errorf("emptied: Namespace(a).Get = %v, want NotFound", err)
		}
	})
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

var labelIndexSelectors = []string{
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
	"app in (web,db),n in (1,2)",
	"n>2",
	"n<1,app=web",
	"tier=db",
	"tier=db,n=3,app in (web,a)",
	"app=rare",
	"app in (rare,nope)",
	"app=rare,tier=db",
	"app in (rare),n!=1",
	"tier=db,app=rare",
	"app in (rare,web),tier notin (db)",
}

// TestLabelIndexAnswers checks that a Lister answers from its label
// indexes what brute force over the pods answers, for equality, set and
// mixed selectors, in every namespace and in one.
func TestLabelIndexAnswers(t *testing.T) {
	// A few pods have app=rare: a label set smaller than any namespace.
	gen := func() []*corev1.Pod {
		pods := manyPods(600, 7)
		for i := 0; i < len(pods); i += 97 {
			pods[i].Labels["app"] = "rare"
		}
		return pods
	}
	pods := gen()
	variants := map[string][]string{
		"app":         {"app"},
		"app, tier":   {"app", "tier"},
		"tier, n":     {"tier", "n"},
		"all":         {"n", "tier", "app"},
		"none":        nil,
		"unused (zz)": {"zz"},
	}
	brute := func(ns string, scoped bool, sel labels.Selector) []string {
		var out []*corev1.Pod
		for _, p := range pods {
			if (!scoped || p.Namespace == ns) && sel.Matches(labels.Set(p.Labels)) {
				out = append(out, p)
			}
		}
		return ids(out)
	}
	nss := []string{"", "ns-1", "ns-3", "missing"}
	selectors := map[string]labels.Selector{}
	for _, s := range labelIndexSelectors {
		selectors[s] = mustSelector(t, s)
	}
	// A requirement built directly keeps repeated values, which the parser
	// would have removed.
	req, err := labels.NewRequirement("app", selection.In, []string{"web", "db", "web"})
	if err != nil {
		t.Fatal(err)
	}
	selectors["NewRequirement(app in (web,db,web))"] = labels.NewSelector().Add(*req)
	selectors["SelectorFromSet(app=web,tier=db)"] = labels.SelectorFromSet(labels.Set{"app": "web", "tier": "db"})
	selectors["SelectorFromValidatedSet(app=db)"] = labels.SelectorFromValidatedSet(labels.Set{"app": "db"})
	for vname, keys := range variants {
		w := mustWriter(t, podOptions{LabelIndexes: keys})
		if _, err := w.Replace(entries(pods...)); err != nil {
			t.Fatal(err)
		}
		// Half the pods again with labels moved, so that the indexes have
		// seen updates.
		var changes []podChange
		for i, p := range pods {
			if i%2 == 0 {
				continue
			}
			cp := p.DeepCopy()
			cp.Labels["app"], cp.Labels["n"] = cp.Labels["n"], cp.Labels["app"]
			changes = append(changes, put(cp))
			pods[i] = cp
		}
		mustApply(t, w, changes...)
		l := w.Store().Lister()
		for s, sel := range selectors {
			t.Run(vname+"/"+s, func(t *testing.T) {
				want := brute("", false, sel)
				got, err := l.List(sel)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, ids(got)); diff != "" {
					t.Errorf("List(%q) (-want +got):\n%s", s, diff)
				}
				if diff := cmp.Diff(want, ids(collect(l.ListSeq(sel)))); diff != "" {
					t.Errorf("ListSeq(%q) (-want +got):\n%s", s, diff)
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
					if diff := cmp.Diff(want, ids(collect(l.Namespace(ns).ListSeq(sel)))); diff != "" {
						t.Errorf("Namespace(%q).ListSeq(%q) (-want +got):\n%s", ns, s, diff)
					}
				}
			})
		}
		// The next variant starts from the original pods.
		pods = gen()
	}
}
