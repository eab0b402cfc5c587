package cache_test

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/cache"
)

var appIndex = cache.LabelIndexName("app")

func testIndexers() cache.Indexers[*corev1.Pod] {
	return cache.Indexers[*corev1.Pod]{
		appIndex: cache.IndexByLabel[*corev1.Pod]("app"),
		"tags":   byTags,
	}
}

func indexedPods() []*corev1.Pod {
	return []*corev1.Pod{
		withAnn(newPod("a", "web-0", "1", "app", "web"), "tags", "x,y"),
		withAnn(newPod("a", "web-1", "1", "app", "web"), "tags", "y"),
		withAnn(newPod("b", "db-0", "1", "app", "db"), "tags", "z,x,z"),
		newPod("b", "plain", "1"),
		withAnn(newPod("", "node", "1", "app", ""), "tags", ""),
	}
}

// wantIndexed is the expected content of the indexes over indexedPods.
var wantIndexed = map[string]map[string][]string{
	appIndex: {
		"web": {"a/web-0@1", "a/web-1@1"},
		"db":  {"b/db-0@1"},
		"":    {"node@1"},
	},
	"tags": {
		"x": {"a/web-0@1", "b/db-0@1"},
		"y": {"a/web-0@1", "a/web-1@1"},
		"z": {"b/db-0@1"},
	},
	cache.NamespaceIndex: {
		"a": {"a/web-0@1", "a/web-1@1"},
		"b": {"b/db-0@1", "b/plain@1"},
		"":  {"node@1"},
	},
}

func checkIndexes(t *testing.T, x *podIndexer, want map[string]map[string][]string) {
	t.Helper()
	for name, vals := range want {
		// An existing index answers with a non-nil (maybe empty) slice.
		wantVals := append([]string{}, slices.Sorted(maps.Keys(vals))...)
		if diff := cmp.Diff(wantVals, x.ListIndexFuncValues(name)); diff != "" {
			t.Errorf("ListIndexFuncValues(%q) (-want +got):\n%s", name, diff)
		}
		for v, wantIDs := range vals {
			got, err := x.ByIndex(name, v)
			if err != nil {
				t.Errorf("ByIndex(%q, %q): %v", name, v, err)
				continue
			}
			if diff := cmp.Diff(wantIDs, ids(got)); diff != "" {
				t.Errorf("ByIndex(%q, %q) (-want +got):\n%s", name, v, diff)
			}
			keys, err := x.IndexKeys(name, v)
			if err != nil {
				t.Errorf("IndexKeys(%q, %q): %v", name, v, err)
				continue
			}
			wantKeys := []cache.Key{}
			for _, p := range got {
				k, err := x.KeyOf(p)
				if err != nil {
					t.Fatalf("KeyOf(%s): %v", id(p), err)
				}
				wantKeys = append(wantKeys, k)
			}
			if diff := cmp.Diff(sortedKeys(wantKeys), sortedKeys(keys)); diff != "" {
				t.Errorf("IndexKeys(%q, %q) (-want +got):\n%s", name, v, diff)
			}
			if diff := cmp.Diff(wantIDs, ids(collect(x.ByIndexValues(name, v)))); diff != "" {
				t.Errorf("ByIndexValues(%q, %q) (-want +got):\n%s", name, v, diff)
			}
		}
		// A value nobody has.
		got, err := x.ByIndex(name, "no-such-value")
		if err != nil || len(got) != 0 {
			t.Errorf("ByIndex(%q, missing value) = %v, %v; want empty, nil", name, ids(got), err)
		}
		keys, err := x.IndexKeys(name, "no-such-value")
		if err != nil || len(keys) != 0 {
			t.Errorf("IndexKeys(%q, missing value) = %v, %v; want empty, nil", name, keys, err)
		}
	}
}

func TestAddIndexersBeforeAndAfterItems(t *testing.T) {
	tests := []struct {
		name  string
		build func(t *testing.T) *podIndexer
	}{
		{
			name: "indexers in options",
			build: func(t *testing.T) *podIndexer {
				x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{Indexers: testIndexers()})
				mustAdd(t, x, indexedPods()...)
				return x
			},
		},
		{
			name: "AddIndexers before items",
			build: func(t *testing.T) *podIndexer {
				x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{})
				if err := x.AddIndexers(testIndexers()); err != nil {
					t.Fatal(err)
				}
				mustAdd(t, x, indexedPods()...)
				return x
			},
		},
		{
			name: "AddIndexers after items",
			build: func(t *testing.T) *podIndexer {
				x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{})
				mustAdd(t, x, indexedPods()...)
				if err := x.AddIndexers(testIndexers()); err != nil {
					t.Fatal(err)
				}
				return x
			},
		},
		{
			name: "AddIndexers one at a time between items",
			build: func(t *testing.T) *podIndexer {
				x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{})
				pods := indexedPods()
				mustAdd(t, x, pods[:2]...)
				if err := x.AddIndexers(cache.Indexers[*corev1.Pod]{"tags": byTags}); err != nil {
					t.Fatal(err)
				}
				mustAdd(t, x, pods[2:4]...)
				if err := x.AddIndexers(cache.Indexers[*corev1.Pod]{appIndex: cache.IndexByLabel[*corev1.Pod]("app")}); err != nil {
					t.Fatal(err)
				}
				mustAdd(t, x, pods[4:]...)
				return x
			},
		},
		{
			name: "Replace after AddIndexers",
			build: func(t *testing.T) *podIndexer {
				x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{Indexers: testIndexers()})
				mustAdd(t, x, newPod("gone", "gone", "1", "app", "web"))
				if err := x.Replace(indexedPods(), "1"); err != nil {
					t.Fatal(err)
				}
				return x
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := tt.build(t)
			checkIndexes(t, x, wantIndexed)
			names := slices.Sorted(maps.Keys(x.GetIndexers()))
			if diff := cmp.Diff([]string{appIndex, cache.NamespaceIndex, "tags"}, names); diff != "" {
				t.Errorf("GetIndexers() names (-want +got):\n%s", diff)
			}
			for _, name := range names {
				if !x.HasIndex(name) {
					t.Errorf("HasIndex(%q) = false", name)
				}
			}
		})
	}
}

func TestAddIndexersErrors(t *testing.T) {
	tests := []struct {
		name    string
		opts    cache.IndexerOptions[*corev1.Pod]
		add     cache.Indexers[*corev1.Pod]
		wantErr error // nil: any error
	}{
		{
			name:    "custom name taken",
			opts:    cache.IndexerOptions[*corev1.Pod]{Indexers: testIndexers()},
			add:     cache.Indexers[*corev1.Pod]{"tags": byTags},
			wantErr: cache.ErrIndexExists,
		},
		{
			name:    "one of several names taken",
			opts:    cache.IndexerOptions[*corev1.Pod]{Indexers: testIndexers()},
			add:     cache.Indexers[*corev1.Pod]{"fresh": byTags, appIndex: byTags},
			wantErr: cache.ErrIndexExists,
		},
		{
			name:    "namespace while the built-in index is on",
			add:     cache.Indexers[*corev1.Pod]{cache.NamespaceIndex: cache.IndexByNamespace[*corev1.Pod]},
			wantErr: cache.ErrIndexExists,
		},
		{
			name: "nil index function",
			add:  cache.Indexers[*corev1.Pod]{"nil": nil},
		},
		{
			name:    "index function fails on a stored object",
			add:     cache.Indexers[*corev1.Pod]{"fails": failOn("b", "plain")},
			wantErr: errBoom,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := mustIndexer(t, tt.opts)
			mustAdd(t, x, indexedPods()...)
			before := snapshotState(t, x)
			err := x.AddIndexers(tt.add)
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("AddIndexers() error = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(before, snapshotState(t, x)); diff != "" {
				t.Errorf("state changed by failed AddIndexers (-want +got):\n%s", diff)
			}
			for name := range tt.add {
				if _, err := x.ByIndex(name, "x"); name != cache.NamespaceIndex && tt.opts.Indexers[name] == nil && !errors.Is(err, cache.ErrNoIndex) {
					t.Errorf("ByIndex(%q) after failed AddIndexers: error = %v, want ErrNoIndex", name, err)
				}
			}
		})
	}
}

func TestNewIndexerErrors(t *testing.T) {
	_, err := cache.NewIndexer(cache.IndexerOptions[*corev1.Pod]{
		Indexers: cache.Indexers[*corev1.Pod]{cache.NamespaceIndex: cache.IndexByNamespace[*corev1.Pod]},
	})
	if !errors.Is(err, cache.ErrIndexExists) {
		t.Errorf("NewIndexer with a %q index: error = %v, want ErrIndexExists", cache.NamespaceIndex, err)
	}
	_, err = cache.NewIndexer(cache.IndexerOptions[*corev1.Pod]{Indexers: cache.Indexers[*corev1.Pod]{"nil": nil}})
	if err == nil {
		t.Errorf("NewIndexer with a nil index function: no error")
	}
	// With the built-in index off, "namespace" is a free name.
	x, err := cache.NewIndexer(cache.IndexerOptions[*corev1.Pod]{
		NoNamespaceIndex: true,
		Indexers:         cache.Indexers[*corev1.Pod]{cache.NamespaceIndex: cache.IndexByNamespace[*corev1.Pod]},
	})
	if err != nil {
		t.Fatalf("NewIndexer(NoNamespaceIndex, custom namespace index): %v", err)
	}
	mustAdd(t, x, indexedPods()...)
	checkIndexes(t, x, map[string]map[string][]string{cache.NamespaceIndex: wantIndexed[cache.NamespaceIndex]})
}

// failOn returns an index function that fails for one key and indexes
// every other object under its name.
func failOn(ns, name string) cache.IndexFunc[*corev1.Pod] {
	return func(p *corev1.Pod) ([]string, error) {
		if p.Namespace == ns && p.Name == name {
			return nil, errBoom
		}
		return []string{p.Name}, nil
	}
}

func TestIndexQueryErrors(t *testing.T) {
	x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{Indexers: testIndexers()})
	mustAdd(t, x, indexedPods()...)
	probe := newPod("a", "probe", "")
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"ByIndex missing", func() error { _, err := x.ByIndex("nope", "v"); return err }, cache.ErrNoIndex},
		{"IndexKeys missing", func() error { _, err := x.IndexKeys("nope", "v"); return err }, cache.ErrNoIndex},
		{"Index missing", func() error { _, err := x.Index("nope", probe); return err }, cache.ErrNoIndex},
		{"Index nil object", func() error { _, err := x.Index("tags", nil); return err }, cache.ErrNilObject},
		{"Index function fails on probe", func() error {
			_, err := x.Index("tags", withAnn(newPod("a", "bad", ""), "fail", "true"))
			return err
		}, errBoom},
		{"Lister ByIndex missing", func() error {
			_, err := cache.NewLister(x, podsResource).ByIndex("nope", "v")
			return err
		}, cache.ErrNoIndex},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, tt.want) {
				t.Errorf("error = %v, want errors.Is %v", err, tt.want)
			}
		})
	}
	if got := x.ListIndexFuncValues("nope"); got != nil {
		t.Errorf("ListIndexFuncValues(missing) = %v, want nil", got)
	}
	if x.HasIndex("nope") {
		t.Errorf("HasIndex(missing) = true")
	}
	if got := collect(x.ByIndexValues("nope", "v")); len(got) != 0 {
		t.Errorf("ByIndexValues(missing) = %v, want nothing", ids(got))
	}
}

func TestIndex(t *testing.T) {
	x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{Indexers: testIndexers()})
	mustAdd(t, x, indexedPods()...)
	tests := []struct {
		name  string
		index string
		probe *corev1.Pod
		want  []string
	}{
		{"label value", appIndex, newPod("z", "probe", "", "app", "web"), []string{"a/web-0@1", "a/web-1@1"}},
		{"label absent on probe", appIndex, newPod("z", "probe", ""), []string{}},
		{"label value nobody has", appIndex, newPod("z", "probe", "", "app", "none"), []string{}},
		{"multi-valued: union without duplicates", "tags", withAnn(newPod("z", "probe", ""), "tags", "x,y"), []string{"a/web-0@1", "a/web-1@1", "b/db-0@1"}},
		{"multi-valued: repeated probe value", "tags", withAnn(newPod("z", "probe", ""), "tags", "z,z"), []string{"b/db-0@1"}},
		{"multi-valued: single value", "tags", withAnn(newPod("z", "probe", ""), "tags", "y"), []string{"a/web-0@1", "a/web-1@1"}},
		{"multi-valued: no values", "tags", newPod("z", "probe", ""), []string{}},
		{"namespace", cache.NamespaceIndex, newPod("b", "probe", ""), []string{"b/db-0@1", "b/plain@1"}},
		{"namespace: cluster-scoped", cache.NamespaceIndex, newPod("", "probe", ""), []string{"node@1"}},
		{"namespace: empty", cache.NamespaceIndex, newPod("none", "probe", ""), []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := x.Index(tt.index, tt.probe)
			if err != nil {
				t.Fatalf("Index(): %v", err)
			}
			if diff := cmp.Diff(tt.want, ids(got)); diff != "" {
				t.Errorf("Index(%q) (-want +got):\n%s", tt.index, diff)
			}
		})
	}
}

func TestIndexValuesChangeOnUpdate(t *testing.T) {
	tests := []struct {
		name    string
		initial []*corev1.Pod
		update  *corev1.Pod
		want    map[string]map[string][]string
	}{
		{
			name:    "label value changes",
			initial: []*corev1.Pod{newPod("a", "p", "1", "app", "web"), newPod("a", "q", "1", "app", "web")},
			update:  newPod("a", "p", "2", "app", "db"),
			want:    map[string]map[string][]string{appIndex: {"web": {"a/q@1"}, "db": {"a/p@2"}}},
		},
		{
			name:    "last holder of a value moves away: value disappears",
			initial: []*corev1.Pod{newPod("a", "p", "1", "app", "web")},
			update:  newPod("a", "p", "2", "app", "db"),
			want:    map[string]map[string][]string{appIndex: {"db": {"a/p@2"}}},
		},
		{
			name:    "label removed",
			initial: []*corev1.Pod{newPod("a", "p", "1", "app", "web")},
			update:  newPod("a", "p", "2"),
			want:    map[string]map[string][]string{appIndex: {}},
		},
		{
			name:    "label added",
			initial: []*corev1.Pod{newPod("a", "p", "1")},
			update:  newPod("a", "p", "2", "app", "web"),
			want:    map[string]map[string][]string{appIndex: {"web": {"a/p@2"}}},
		},
		{
			name:    "same values: new object version is returned",
			initial: []*corev1.Pod{withAnn(newPod("a", "p", "1", "app", "web"), "tags", "x,y")},
			update:  withAnn(newPod("a", "p", "2", "app", "web"), "tags", "x,y"),
			want: map[string]map[string][]string{
				appIndex: {"web": {"a/p@2"}},
				"tags":   {"x": {"a/p@2"}, "y": {"a/p@2"}},
			},
		},
		{
			name:    "multi-valued: overlapping sets",
			initial: []*corev1.Pod{withAnn(newPod("a", "p", "1"), "tags", "x,y"), withAnn(newPod("a", "q", "1"), "tags", "x")},
			update:  withAnn(newPod("a", "p", "2"), "tags", "y,z"),
			want: map[string]map[string][]string{
				"tags": {"x": {"a/q@1"}, "y": {"a/p@2"}, "z": {"a/p@2"}},
			},
		},
		{
			name:    "multi-valued: duplicates collapse",
			initial: []*corev1.Pod{withAnn(newPod("a", "p", "1"), "tags", "x,x,y")},
			update:  withAnn(newPod("a", "p", "2"), "tags", "x"),
			want: map[string]map[string][]string{
				"tags": {"x": {"a/p@2"}},
			},
		},
		{
			name:    "multi-valued: order changes only",
			initial: []*corev1.Pod{withAnn(newPod("a", "p", "1"), "tags", "x,y")},
			update:  withAnn(newPod("a", "p", "2"), "tags", "y,x"),
			want: map[string]map[string][]string{
				"tags": {"x": {"a/p@2"}, "y": {"a/p@2"}},
			},
		},
		{
			name:    "multi-valued: all values removed",
			initial: []*corev1.Pod{withAnn(newPod("a", "p", "1"), "tags", "x,y")},
			update:  newPod("a", "p", "2"),
			want:    map[string]map[string][]string{"tags": {}},
		},
	}
	for _, tt := range tests {
		for _, op := range []string{"Update", "Add", "Set"} {
			t.Run(tt.name+"/"+op, func(t *testing.T) {
				x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{Indexers: testIndexers()})
				mustAdd(t, x, tt.initial...)
				var err error
				switch op {
				case "Update":
					err = x.Update(tt.update)
				case "Add":
					err = x.Add(tt.update)
				case "Set":
					err = x.Set(cache.KeyOf(tt.update), tt.update)
				}
				if err != nil {
					t.Fatalf("%s: %v", op, err)
				}
				checkIndexes(t, x, tt.want)
			})
		}
	}
}

func TestDeleteRemovesIndexValues(t *testing.T) {
	x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{Indexers: testIndexers()})
	pods := indexedPods()
	mustAdd(t, x, pods...)
	for _, p := range pods {
		if err := x.Delete(p); err != nil {
			t.Fatal(err)
		}
	}
	checkIndexes(t, x, map[string]map[string][]string{appIndex: {}, "tags": {}, cache.NamespaceIndex: {}})
	if diff := cmp.Diff(0, x.Len()); diff != "" {
		t.Errorf("Len() (-want +got):\n%s", diff)
	}
}

func TestNoNamespaceIndex(t *testing.T) {
	x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{NoNamespaceIndex: true, Indexers: testIndexers()})
	mustAdd(t, x, indexedPods()...)
	if x.HasIndex(cache.NamespaceIndex) {
		t.Errorf("HasIndex(namespace) = true with NoNamespaceIndex")
	}
	if _, ok := x.GetIndexers()[cache.NamespaceIndex]; ok {
		t.Errorf("GetIndexers() has %q with NoNamespaceIndex", cache.NamespaceIndex)
	}
	if _, err := x.ByIndex(cache.NamespaceIndex, "a"); !errors.Is(err, cache.ErrNoIndex) {
		t.Errorf("ByIndex(namespace) error = %v, want ErrNoIndex", err)
	}
	if _, err := x.Index(cache.NamespaceIndex, newPod("a", "p", "")); !errors.Is(err, cache.ErrNoIndex) {
		t.Errorf("Index(namespace) error = %v, want ErrNoIndex", err)
	}
	if got := x.ListIndexFuncValues(cache.NamespaceIndex); got != nil {
		t.Errorf("ListIndexFuncValues(namespace) = %v, want nil", got)
	}
	// Custom indexes and namespace listing still work.
	checkIndexes(t, x, map[string]map[string][]string{appIndex: wantIndexed[appIndex], "tags": wantIndexed["tags"]})
	l := cache.NewLister(x, podsResource)
	for ns, want := range wantIndexed[cache.NamespaceIndex] {
		got, err := l.Namespace(ns).List(everything())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, ids(got)); diff != "" {
			t.Errorf("Namespace(%q).List() (-want +got):\n%s", ns, diff)
		}
	}
	if err := x.Replace(indexedPods()[:2], ""); err != nil {
		t.Fatal(err)
	}
	if x.HasIndex(cache.NamespaceIndex) {
		t.Errorf("Replace turned the namespace index on")
	}
	if err := x.AddIndexers(cache.Indexers[*corev1.Pod]{"other": byTags}); err != nil {
		t.Fatal(err)
	}
	if x.HasIndex(cache.NamespaceIndex) {
		t.Errorf("AddIndexers turned the namespace index on")
	}
}

// TestFailingIndexFuncChangesNothing checks every write against an index
// function that fails for one object: the write returns the index
// function's error and every query answers as before.
func TestFailingIndexFuncChangesNothing(t *testing.T) {
	bad := func(rv string) *corev1.Pod {
		return withAnn(newPod("a", "web-0", rv, "app", "other"), "fail", "true", "tags", "q")
	}
	badNew := withAnn(newPod("c", "new", "1", "app", "web"), "fail", "true")
	tests := []struct {
		name string
		op   func(x *podIndexer) error
	}{
		{"Add new object", func(x *podIndexer) error { return x.Add(badNew) }},
		{"Add over existing object", func(x *podIndexer) error { return x.Add(bad("2")) }},
		{"Update existing object", func(x *podIndexer) error { return x.Update(bad("2")) }},
		{"Update absent object", func(x *podIndexer) error { return x.Update(badNew) }},
		{"Set", func(x *podIndexer) error { return x.Set(cache.KeyOf(badNew), badNew) }},
		{"Replace: bad object first", func(x *podIndexer) error {
			return x.Replace([]*corev1.Pod{badNew, newPod("c", "ok", "1", "app", "web")}, "")
		}},
		{"Replace: bad object last", func(x *podIndexer) error {
			return x.Replace([]*corev1.Pod{newPod("c", "ok", "1", "app", "web"), newPod("c", "ok2", "1"), bad("3")}, "")
		}},
		{"AddIndexers: one fails on one object", func(x *podIndexer) error {
			return x.AddIndexers(cache.Indexers[*corev1.Pod]{
				"ok":    cache.IndexByLabel[*corev1.Pod]("app"),
				"fails": failOn("b", "db-0"),
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{Indexers: testIndexers()})
			mustAdd(t, x, indexedPods()...)
			l := cache.NewLister(x, podsResource)
			before := snapshotState(t, x)
			beforeList := listerState(t, l)
			err := tt.op(x)
			if !errors.Is(err, errBoom) {
				t.Fatalf("error = %v, want errors.Is errBoom", err)
			}
			if diff := cmp.Diff(before, snapshotState(t, x)); diff != "" {
				t.Errorf("state changed by failed write (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(beforeList, listerState(t, l)); diff != "" {
				t.Errorf("lister answers changed by failed write (-want +got):\n%s", diff)
			}
			// The Indexer still works.
			mustAdd(t, x, newPod("a", "after", "1", "app", "web"))
			got, err := x.ByIndex(appIndex, "web")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"a/after@1", "a/web-0@1", "a/web-1@1"}, ids(got)); diff != "" {
				t.Errorf("ByIndex after recovery (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("Replace: later good duplicate of a bad object", func(t *testing.T) {
		// Later wins: the failing object is not stored, so it is never
		// indexed and Replace succeeds.
		x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{Indexers: testIndexers()})
		err := x.Replace([]*corev1.Pod{bad("1"), newPod("a", "web-0", "2", "app", "web")}, "")
		if err != nil {
			t.Fatalf("Replace: %v", err)
		}
		checkIndexes(t, x, map[string]map[string][]string{appIndex: {"web": {"a/web-0@2"}}})
	})
}

// listerState is the answer of a Lister to a fixed set of queries.
func listerState(t *testing.T, l *cache.Lister[*corev1.Pod]) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, s := range []string{"", "app=web", "app in (web,db)", "!app", "app notin (web)"} {
		sel := mustSelector(t, s)
		got, err := l.List(sel)
		if err != nil {
			t.Fatal(err)
		}
		out["all:"+s] = ids(got)
		for _, ns := range []string{"", "a", "b", "c"} {
			got, err := l.Namespace(ns).List(sel)
			if err != nil {
				t.Fatal(err)
			}
			out[ns+":"+s] = ids(got)
		}
	}
	return out
}
