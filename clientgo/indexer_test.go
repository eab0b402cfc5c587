package clientgo_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/clientgo"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// indexPods are the pods of the indexer tests: two apps, three
// namespaces, one pod without labels.
func indexPods() []*corev1.Pod {
	return []*corev1.Pod{
		it.Pod("ns-0", "a-0", map[string]string{"app": "a", "tier": "web"}),
		it.Pod("ns-0", "b-0", map[string]string{"app": "b", "tier": "web"}),
		it.Pod("ns-1", "a-1", map[string]string{"app": "a", "tier": "db"}),
		it.Pod("ns-2", "plain", nil),
	}
}

// nodeIndex is a typed index function of the informer itself.
func nodeIndex(p *corev1.Pod) ([]string, error) { return []string{"node-" + p.Namespace}, nil }

// syncedView returns a view of a synced informer over indexPods, run
// through the view for the length of the test.
func syncedView(t *testing.T, opts typed.Options[*corev1.Pod], vopts clientgo.Options[*corev1.Pod]) (*typed.Informer[*corev1.Pod], clientcache.SharedIndexInformer, *sourcetest.Fake[*corev1.Pod]) {
	t.Helper()
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, indexPods()...)
	inf, v := newView(t, fake, opts, vopts)
	runUntilCleanup(t, v)
	if err := inf.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	return inf, v, fake
}

func TestWritesAreRefused(t *testing.T) {
	inf, v, fake := syncedView(t, typed.Options[*corev1.Pod]{}, clientgo.Options[*corev1.Pod]{})
	x := v.GetIndexer()
	tomb := clientcache.DeletedFinalStateUnknown{Key: "ns-0/a-0", Obj: indexPods()[0]}
	for _, tc := range []struct {
		name  string
		write func() error
	}{
		{"Add pod", func() error { return x.Add(it.Pod("ns-0", "new", nil)) }},
		{"Add node", func() error { return x.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}) }},
		{"Add nil", func() error { return x.Add(nil) }},
		{"Add string", func() error { return x.Add("ns-0/a-0") }},
		{"Update pod", func() error { return x.Update(it.Pod("ns-0", "a-0", map[string]string{"app": "z"})) }},
		{"Update int", func() error { return x.Update(42) }},
		{"Delete pod", func() error { return x.Delete(indexPods()[0]) }},
		{"Delete tombstone", func() error { return x.Delete(tomb) }},
		{"Replace", func() error { return x.Replace([]any{it.Pod("ns-0", "only", nil)}, "1") }},
		{"Replace wrong types", func() error { return x.Replace([]any{"x", nil, 3}, "") }},
		{"store Add", func() error { return v.GetStore().Add(it.Pod("ns-0", "new", nil)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.write(); !errors.Is(err, clientgo.ErrReadOnly) {
				t.Errorf("got %v, want an error wrapping ErrReadOnly", err)
			}
		})
	}
	if diff := cmp.Diff(podState(fake.Items()), stateOf(x.List())); diff != "" {
		t.Errorf("a refused write changed the cache (-want +got):\n%s", diff)
	}
	if err := x.Resync(); err != nil {
		t.Errorf("Resync() = %v, want nil (a no-op, as client-go's cache)", err)
	}
	x.Bookmark("999999")
	if got, want := x.LastStoreSyncResourceVersion(), inf.LastSyncResourceVersion(); got != want || got == "" {
		t.Errorf("LastStoreSyncResourceVersion = %q, want the informer's %q", got, want)
	}
}

func TestGet(t *testing.T) {
	_, v, _ := syncedView(t, typed.Options[*corev1.Pod]{}, clientgo.Options[*corev1.Pod]{})
	x := v.GetStore()
	for _, tc := range []struct {
		name      string
		obj       any
		wantFound bool
		wantErr   bool
	}{
		{"pod", it.Pod("ns-0", "a-0", nil), true, false},
		{"object meta", &metav1.ObjectMeta{Namespace: "ns-1", Name: "a-1"}, true, false},
		{"tombstone", clientcache.DeletedFinalStateUnknown{Key: "ns-2/plain"}, true, false},
		{"explicit key", clientcache.ExplicitKey("ns-0/b-0"), true, false},
		{"another type, same name", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a-0"}}, false, false},
		{"missing", it.Pod("ns-0", "zzz", nil), false, false},
		{"string", "ns-0/a-0", false, true},
		{"nil", nil, false, true},
		{"int", 7, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj, found, err := x.Get(tc.obj)
			if found != tc.wantFound || (err != nil) != tc.wantErr {
				t.Fatalf("Get = (%v, %v, %v), want found %v, error %v", obj, found, err, tc.wantFound, tc.wantErr)
			}
			var ke clientcache.KeyError
			if tc.wantErr && !errors.As(err, &ke) {
				t.Errorf("error %v is not a client-go KeyError", err)
			}
			if found {
				if _, ok := obj.(*corev1.Pod); !ok {
					t.Errorf("Get returned a %T", obj)
				}
			}
		})
	}
}

func TestIndexQueries(t *testing.T) {
	_, v, _ := syncedView(t, typed.Options[*corev1.Pod]{
		Indexers: cache.Indexers[*corev1.Pod]{"node": nodeIndex, "undeclared": nodeIndex},
	}, clientgo.Options[*corev1.Pod]{Indexers: cache.Indexers[*corev1.Pod]{"node": nodeIndex}})
	// An index added through the view that panics on anything but a pod
	// and gives two values: tier and app.
	both := func(obj any) ([]string, error) {
		p := obj.(*corev1.Pod)
		return []string{p.Labels["app"], p.Labels["tier"]}, nil
	}
	if err := v.AddIndexers(clientcache.Indexers{"both": both}); err != nil {
		t.Fatal(err)
	}
	// client-go's own indexer with the same content and functions.
	ref := clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, clientcache.Indexers{
		clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc, "both": both,
		"node": func(obj any) ([]string, error) { return nodeIndex(obj.(*corev1.Pod)) },
	})
	for _, p := range v.GetStore().List() {
		if err := ref.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	x := v.GetIndexer()
	type answer struct {
		Keys []string
		Err  error
	}
	for _, tc := range []struct {
		name    string
		query   func(clientcache.Indexer) ([]any, error)
		wantErr error // nil: the answer must equal client-go's
	}{
		{"namespace by ObjectMeta", func(i clientcache.Indexer) ([]any, error) {
			return i.Index(clientcache.NamespaceIndex, &metav1.ObjectMeta{Namespace: "ns-0"})
		}, nil},
		{"namespace of an uncached pod", func(i clientcache.Indexer) ([]any, error) {
			return i.Index(clientcache.NamespaceIndex, it.Pod("ns-1", "elsewhere", nil))
		}, nil},
		{"two values, union", func(i clientcache.Indexer) ([]any, error) {
			return i.Index("both", it.Pod("x", "y", map[string]string{"app": "b", "tier": "db"}))
		}, nil},
		{"declared typed index", func(i clientcache.Indexer) ([]any, error) { return i.Index("node", it.Pod("ns-0", "q", nil)) }, nil},
		{"ByIndex two-valued", func(i clientcache.Indexer) ([]any, error) { return i.ByIndex("both", "web") }, nil},
		{"ByIndex no match", func(i clientcache.Indexer) ([]any, error) { return i.ByIndex("both", "nothing") }, nil},
		{"unknown index", func(i clientcache.Indexer) ([]any, error) { return i.Index("nope", it.Pod("ns-0", "q", nil)) }, cache.ErrNoIndex},
		{"ByIndex unknown index", func(i clientcache.Indexer) ([]any, error) { return i.ByIndex("nope", "a") }, cache.ErrNoIndex},
		{"undeclared typed index", func(i clientcache.Indexer) ([]any, error) {
			return i.Index("undeclared", it.Pod("ns-0", "q", nil))
		}, clientgo.ErrUnknownIndexFunc},
		{"typed index, wrong type", func(i clientcache.Indexer) ([]any, error) {
			return i.Index("node", &metav1.ObjectMeta{Namespace: "ns-0"})
		}, clientgo.ErrWrongType},
		{"client-go function panics", func(i clientcache.Indexer) ([]any, error) {
			return i.Index("both", &metav1.ObjectMeta{Namespace: "ns-0"})
		}, cache.ErrIndexPanic},
		{"namespace of a string", func(i clientcache.Indexer) ([]any, error) { return i.Index(clientcache.NamespaceIndex, "ns-0") }, errAny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := tc.query(x)
			if tc.wantErr != nil {
				if err == nil || (tc.wantErr != errAny && !errors.Is(err, tc.wantErr)) {
					t.Fatalf("got (%v, %v), want an error wrapping %v", keysOf(objs), err, tc.wantErr)
				}
				return
			}
			wantObjs, wantErr := tc.query(ref)
			if diff := cmp.Diff(answer{keysOf(wantObjs), wantErr}, answer{keysOf(objs), err}, cmp.Comparer(sameError)); diff != "" {
				t.Errorf("(-client-go +view):\n%s", diff)
			}
		})
	}
	if _, err := x.IndexKeys("nope", "a"); !errors.Is(err, cache.ErrNoIndex) {
		t.Errorf("IndexKeys(unknown) = %v, want ErrNoIndex", err)
	}
	if got := x.ListIndexFuncValues("nope"); got == nil || len(got) != 0 {
		t.Errorf("ListIndexFuncValues(unknown) = %#v, want an empty slice as client-go", got)
	}
	for _, name := range []string{clientcache.NamespaceIndex, "both", "node"} {
		got, want := x.ListIndexFuncValues(name), ref.ListIndexFuncValues(name)
		slices.Sort(got)
		slices.Sort(want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ListIndexFuncValues(%s) (-client-go +view):\n%s", name, diff)
		}
	}
	var names []string
	for name := range x.GetIndexers() {
		names = append(names, name)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"both", "namespace", "node"}, names); diff != "" {
		t.Errorf("GetIndexers (-want +got):\n%s", diff)
	}
}

// errAny stands for any error in a table.
var errAny = errors.New("any error")

func sameError(a, b error) bool { return (a == nil) == (b == nil) }

func TestAddIndexers(t *testing.T) {
	byApp := func(obj any) ([]string, error) {
		m, err := metaOf(obj)
		if err != nil {
			return nil, err
		}
		return []string{m.GetLabels()["app"]}, nil
	}
	failsOnPlain := func(obj any) ([]string, error) {
		if m, _ := metaOf(obj); m != nil && len(m.GetLabels()) == 0 {
			return nil, fmt.Errorf("no labels on %s", m.GetName())
		}
		return nil, nil
	}
	panicsOnPlain := func(obj any) ([]string, error) { return []string{obj.(*corev1.Pod).Labels["app"][:1]}, nil }
	otherNamespaceFunc := func(obj any) ([]string, error) { return []string{"x"}, nil }
	for _, tc := range []struct {
		name    string
		add     clientcache.Indexers
		wantErr error // errAny: some error
		added   []string
	}{
		{"one", clientcache.Indexers{"app": byApp}, nil, []string{"app"}},
		{"the namespace index again", clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc}, nil, nil},
		{"namespace with another function", clientcache.Indexers{clientcache.NamespaceIndex: otherNamespaceFunc}, cache.ErrIndexExists, nil},
		{"fails on a cached object", clientcache.Indexers{"strict": failsOnPlain}, errAny, nil},
		{"panics on a cached object", clientcache.Indexers{"short": panicsOnPlain}, cache.ErrIndexPanic, nil},
		{"nil function", clientcache.Indexers{"nil": nil}, errAny, nil},
		{"one fails, none added", clientcache.Indexers{"app": byApp, "strict": failsOnPlain}, errAny, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, v, fake := syncedView(t, typed.Options[*corev1.Pod]{}, clientgo.Options[*corev1.Pod]{})
			err := v.GetIndexer().AddIndexers(tc.add)
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("AddIndexers = %v", err)
			case tc.wantErr != nil && (err == nil || (tc.wantErr != errAny && !errors.Is(err, tc.wantErr))):
				t.Fatalf("AddIndexers = %v, want an error wrapping %v", err, tc.wantErr)
			}
			var got []string
			for name := range v.GetIndexer().GetIndexers() {
				if name != clientcache.NamespaceIndex {
					got = append(got, name)
				}
			}
			slices.Sort(got)
			if diff := cmp.Diff(tc.added, got); diff != "" {
				t.Errorf("indexes besides namespace (-want +got):\n%s", diff)
			}
			for name := range tc.add {
				_, err := v.GetIndexer().ByIndex(name, "a")
				if want := slices.Contains(tc.added, name) || name == clientcache.NamespaceIndex; (err == nil) != want {
					t.Errorf("ByIndex(%s) = %v; index present: %v", name, err, want)
				}
			}
			if err := v.GetIndexer().AddIndexers(clientcache.Indexers{clientcache.NamespaceIndex: otherNamespaceFunc}); !errors.Is(err, cache.ErrIndexExists) {
				t.Errorf("AddIndexers(namespace, another function) = %v, want ErrIndexExists", err)
			}
			if !slices.Contains(tc.added, "app") {
				return
			}
			// A pod created later is indexed too.
			if _, err := fake.Create(it.Pod("ns-9", "late", map[string]string{"app": "a"})); err != nil {
				t.Fatal(err)
			}
			it.Eventually(t, "the late pod is indexed", func() bool {
				keys, err := v.GetIndexer().IndexKeys("app", "a")
				return err == nil && slices.Contains(keys, "ns-9/late")
			})
		})
	}
}

func TestNewErrors(t *testing.T) {
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{})
	inf, err := typed.NewInformer(fake, typed.Options[*corev1.Pod]{Indexers: cache.Indexers[*corev1.Pod]{"node": nodeIndex}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		inf     *typed.Informer[*corev1.Pod]
		opts    clientgo.Options[*corev1.Pod]
		wantErr error
	}{
		{"nil informer", nil, clientgo.Options[*corev1.Pod]{}, clientgo.ErrNilInformer},
		{"an index the informer lacks", inf, clientgo.Options[*corev1.Pod]{Indexers: cache.Indexers[*corev1.Pod]{"zone": nodeIndex}}, cache.ErrNoIndex},
		{"nil index function", inf, clientgo.Options[*corev1.Pod]{Indexers: cache.Indexers[*corev1.Pod]{"node": nil}}, errAny},
		{"the namespace index", inf, clientgo.Options[*corev1.Pod]{Indexers: cache.Indexers[*corev1.Pod]{cache.NamespaceIndex: nodeIndex}}, errAny},
		{"ok", inf, clientgo.Options[*corev1.Pod]{Indexers: cache.Indexers[*corev1.Pod]{"node": nodeIndex}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := clientgo.SharedIndexInformer(tc.inf, tc.opts)
			switch {
			case tc.wantErr == nil:
				if err != nil || v == nil {
					t.Fatalf("got (%v, %v), want a view", v, err)
				}
			case err == nil || v != nil || (tc.wantErr != errAny && !errors.Is(err, tc.wantErr)):
				t.Fatalf("got (%v, %v), want an error wrapping %v", v, err, tc.wantErr)
			}
		})
	}
}
