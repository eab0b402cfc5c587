package cache_test

import (
	"errors"
	"maps"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/cache"
)

func testIndexers() podIndexes {
	return podIndexes{"app": byLabel("app"), "tags": byTags}
}

var testIndexNames = []string{"app", "tags"}

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
	"app": {
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

// checkIndexes compares every query of the named indexes with want.
func checkIndexes(t *testing.T, st *podStore, want map[string]map[string][]string) {
	t.Helper()
	for name, vals := range want {
		wantVals := append([]string{}, slices.Sorted(maps.Keys(vals))...)
		gotVals, err := st.IndexValues(name)
		if err != nil {
			t.Errorf("IndexValues(%q): %v", name, err)
		}
		if diff := cmp.Diff(wantVals, gotVals); diff != "" {
			t.Errorf("IndexValues(%q) (-want +got):\n%s", name, diff)
		}
		for v, wantIDs := range vals {
			got, err := st.ByIndex(name, v)
			if err != nil {
				t.Errorf("ByIndex(%q, %q): %v", name, v, err)
				continue
			}
			if diff := cmp.Diff(wantIDs, ids(got)); diff != "" {
				t.Errorf("ByIndex(%q, %q) (-want +got):\n%s", name, v, diff)
			}
			if diff := cmp.Diff(wantIDs, ids(collect(st.ByIndexSeq(name, v)))); diff != "" {
				t.Errorf("ByIndexSeq(%q, %q) (-want +got):\n%s", name, v, diff)
			}
		}
		// A value nobody has.
		got, err := st.ByIndex(name, "no-such-value")
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("ByIndex(%q, missing value) = %v, %v; want empty, nil", name, ids(got), err)
		}
	}
}

func TestIndexesBuiltInAnyOrder(t *testing.T) {
	tests := []struct {
		name  string
		build func(t *testing.T) *podWriter
	}{
		{
			name: "indexers in options",
			build: func(t *testing.T) *podWriter {
				w := mustWriter(t, podOptions{Indexers: testIndexers()})
				mustPut(t, w, indexedPods()...)
				return w
			},
		},
		{
			name: "one batch of prepared entries",
			build: func(t *testing.T) *podWriter {
				w := mustWriter(t, podOptions{Indexers: testIndexers()})
				var changes []podChange
				for _, p := range indexedPods() {
					e, err := w.Prepare(p)
					if err != nil {
						t.Fatal(err)
					}
					changes = append(changes, podChange{Entry: e})
				}
				mustApply(t, w, changes...)
				return w
			},
		},
		{
			name: "AddIndexers before items",
			build: func(t *testing.T) *podWriter {
				w := mustWriter(t, podOptions{})
				if err := w.AddIndexers(testIndexers()); err != nil {
					t.Fatal(err)
				}
				mustPut(t, w, indexedPods()...)
				return w
			},
		},
		{
			name: "AddIndexers after items",
			build: func(t *testing.T) *podWriter {
				w := mustWriter(t, podOptions{})
				mustPut(t, w, indexedPods()...)
				if err := w.AddIndexers(testIndexers()); err != nil {
					t.Fatal(err)
				}
				return w
			},
		},
		{
			name: "AddIndexers one at a time between items",
			build: func(t *testing.T) *podWriter {
				w := mustWriter(t, podOptions{})
				pods := indexedPods()
				mustPut(t, w, pods[:2]...)
				if err := w.AddIndexers(podIndexes{"tags": byTags}); err != nil {
					t.Fatal(err)
				}
				mustPut(t, w, pods[2:4]...)
				if err := w.AddIndexers(podIndexes{"app": byLabel("app")}); err != nil {
					t.Fatal(err)
				}
				mustPut(t, w, pods[4:]...)
				return w
			},
		},
		{
			name: "entries prepared before AddIndexers",
			build: func(t *testing.T) *podWriter {
				w := mustWriter(t, podOptions{Indexers: podIndexes{"tags": byTags}})
				var es []podEntry
				for _, p := range indexedPods() {
					e, err := w.Prepare(p)
					if err != nil {
						t.Fatal(err)
					}
					es = append(es, e)
				}
				if err := w.AddIndexers(podIndexes{"app": byLabel("app")}); err != nil {
					t.Fatal(err)
				}
				if _, err := w.Replace(es); err != nil {
					t.Fatal(err)
				}
				return w
			},
		},
		{
			name: "Replace after AddIndexers",
			build: func(t *testing.T) *podWriter {
				w := mustWriter(t, podOptions{Indexers: testIndexers()})
				mustPut(t, w, withAnn(newPod("gone", "gone", "1", "app", "web"), "tags", "x"))
				if _, err := w.Replace(entries(indexedPods()...)); err != nil {
					t.Fatal(err)
				}
				return w
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkIndexes(t, tt.build(t).Store(), wantIndexed)
		})
	}
}

// TestAddIndexersErrors checks that a failed AddIndexers changes nothing:
// the queries answer as before, the index does not exist, and entries
// prepared before it still need no index function call.
func TestAddIndexersErrors(t *testing.T) {
	tests := []struct {
		name    string
		add     podIndexes
		wantErr error // nil: any error
	}{
		{name: "name taken", add: podIndexes{"tags": byTags}, wantErr: cache.ErrIndexExists},
		{name: "one of several names taken", add: podIndexes{"fresh": byTags, "app": byTags}, wantErr: cache.ErrIndexExists},
		{name: "the namespace index's name", add: podIndexes{cache.NamespaceIndex: failOn("", "")}, wantErr: cache.ErrIndexExists},
		{name: "empty name", add: podIndexes{"": byTags}},
		{name: "nil index function", add: podIndexes{"nil": nil}},
		{name: "index function fails on a stored object", add: podIndexes{"ok": byLabel("app"), "fails": failOn("b", "plain")}, wantErr: errBoom},
		{name: "index function panics on a stored object", add: podIndexes{"panics": func(p *corev1.Pod) ([]string, error) {
			if p.Name == "db-0" {
				panic("index bug")
			}
			return nil, nil
		}}, wantErr: cache.ErrIndexPanic},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int64
			w := mustWriter(t, podOptions{Indexers: podIndexes{"app": counted(&calls, byLabel("app")), "tags": byTags}})
			st := w.Store()
			mustPut(t, w, indexedPods()...)
			prepared, err := w.Prepare(newPod("a", "prepared", "1", "app", "web"))
			if err != nil {
				t.Fatal(err)
			}
			names := slices.Sorted(maps.Keys(tt.add))
			before := stateOf(t, st, append(names, testIndexNames...)...)
			err = w.AddIndexers(tt.add)
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("AddIndexers() error = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(before, stateOf(t, st, append(names, testIndexNames...)...)); diff != "" {
				t.Errorf("state changed by failed AddIndexers (-want +got):\n%s", diff)
			}
			for _, name := range names {
				if name == cache.NamespaceIndex || name == "app" || name == "tags" {
					continue
				}
				if _, err := st.ByIndex(name, "x"); !errors.Is(err, cache.ErrNoIndex) {
					t.Errorf("ByIndex(%q) after failed AddIndexers: error = %v, want ErrNoIndex", name, err)
				}
				if _, err := st.IndexValues(name); !errors.Is(err, cache.ErrNoIndex) {
					t.Errorf("IndexValues(%q) after failed AddIndexers: error = %v, want ErrNoIndex", name, err)
				}
			}
			n := calls.Load()
			mustApply(t, w, podChange{Entry: prepared})
			if got := calls.Load(); got != n {
				t.Errorf("Apply of an entry prepared before the failed AddIndexers called the app index %d times", got-n)
			}
			got, _ := st.ByIndex("app", "web")
			if diff := cmp.Diff([]string{"a/prepared@1", "a/web-0@1", "a/web-1@1"}, ids(got)); diff != "" {
				t.Errorf("ByIndex(app, web) after the failure (-want +got):\n%s", diff)
			}
			// The name of an index that failed to build is still free.
			if tt.wantErr == errBoom {
				if err := w.AddIndexers(podIndexes{"fails": failOn("", "")}); err != nil {
					t.Errorf("AddIndexers after the failure: %v", err)
				}
			}
		})
	}
	t.Run("no indexers", func(t *testing.T) {
		w := mustWriter(t, podOptions{})
		if err := w.AddIndexers(nil); err != nil {
			t.Errorf("AddIndexers(nil) = %v", err)
		}
	})
}

func TestNewWriterErrors(t *testing.T) {
	tests := []struct {
		name    string
		opts    podOptions
		wantErr error // nil: any error
	}{
		{name: "custom index named namespace", opts: podOptions{Indexers: podIndexes{cache.NamespaceIndex: byTags}}, wantErr: cache.ErrIndexExists},
		{name: "nil index function", opts: podOptions{Indexers: podIndexes{"nil": nil}}},
		{name: "empty index name", opts: podOptions{Indexers: podIndexes{"": byTags}}},
		{name: "label index repeated", opts: podOptions{LabelIndexes: []string{"app", "tier", "app"}}, wantErr: cache.ErrIndexExists},
		{name: "label index key invalid", opts: podOptions{LabelIndexes: []string{"not a label"}}},
		{name: "label index key empty", opts: podOptions{LabelIndexes: []string{""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := cache.NewWriter(tt.opts)
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("NewWriter() error = %v, want %v", err, tt.wantErr)
			}
			if w != nil {
				t.Errorf("NewWriter() returned a writer with its error")
			}
		})
	}
	// Label keys with a prefix are valid, and a label index may share its
	// key with a custom index's name.
	w, err := cache.NewWriter(podOptions{
		LabelIndexes: []string{"app.kubernetes.io/name", "app"},
		Indexers:     podIndexes{"app": byLabel("app")},
	})
	if err != nil {
		t.Fatalf("NewWriter(valid options): %v", err)
	}
	mustPut(t, w, newPod("a", "p", "1", "app.kubernetes.io/name", "x"))
	got, err := w.Store().Lister().List(mustSelector(t, "app.kubernetes.io/name=x"))
	if err != nil || len(got) != 1 {
		t.Errorf("List(app.kubernetes.io/name=x) = %v, %v", ids(got), err)
	}
}

func TestIndexQueryErrors(t *testing.T) {
	w := mustWriter(t, podOptions{Indexers: testIndexers(), LabelIndexes: []string{"tier"}})
	st := w.Store()
	mustPut(t, w, indexedPods()...)
	// A label index is not a custom index: ByIndex does not know it.
	for _, name := range []string{"nope", "tier", "label:app", ""} {
		if _, err := st.ByIndex(name, "v"); !errors.Is(err, cache.ErrNoIndex) {
			t.Errorf("ByIndex(%q) error = %v, want ErrNoIndex", name, err)
		}
		if got, err := st.IndexValues(name); !errors.Is(err, cache.ErrNoIndex) || got != nil {
			t.Errorf("IndexValues(%q) = %v, %v; want nil, ErrNoIndex", name, got, err)
		}
		if got := collect(st.ByIndexSeq(name, "v")); len(got) != 0 {
			t.Errorf("ByIndexSeq(%q) = %v, want nothing", name, ids(got))
		}
	}
	// An existing index with no values answers an empty, non-nil list.
	empty := mustWriter(t, podOptions{Indexers: testIndexers()})
	for _, name := range []string{"app", "tags", cache.NamespaceIndex} {
		got, err := empty.Store().IndexValues(name)
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("IndexValues(%q) of an empty store = %#v, %v; want empty, nil", name, got, err)
		}
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
			want:    map[string]map[string][]string{"app": {"web": {"a/q@1"}, "db": {"a/p@2"}}},
		},
		{
			name:    "last holder of a value moves away: value disappears",
			initial: []*corev1.Pod{newPod("a", "p", "1", "app", "web")},
			update:  newPod("a", "p", "2", "app", "db"),
			want:    map[string]map[string][]string{"app": {"db": {"a/p@2"}}},
		},
		{
			name:    "label removed",
			initial: []*corev1.Pod{newPod("a", "p", "1", "app", "web")},
			update:  newPod("a", "p", "2"),
			want:    map[string]map[string][]string{"app": {}},
		},
		{
			name:    "label added",
			initial: []*corev1.Pod{newPod("a", "p", "1")},
			update:  newPod("a", "p", "2", "app", "web"),
			want:    map[string]map[string][]string{"app": {"web": {"a/p@2"}}},
		},
		{
			name:    "same values: new object version is returned",
			initial: []*corev1.Pod{withAnn(newPod("a", "p", "1", "app", "web"), "tags", "x,y")},
			update:  withAnn(newPod("a", "p", "2", "app", "web"), "tags", "x,y"),
			want: map[string]map[string][]string{
				"app":                {"web": {"a/p@2"}},
				"tags":               {"x": {"a/p@2"}, "y": {"a/p@2"}},
				cache.NamespaceIndex: {"a": {"a/p@2"}},
			},
		},
		{
			name:    "multi-valued: overlapping sets",
			initial: []*corev1.Pod{withAnn(newPod("a", "p", "1"), "tags", "x,y"), withAnn(newPod("a", "q", "1"), "tags", "x")},
			update:  withAnn(newPod("a", "p", "2"), "tags", "y,z"),
			want:    map[string]map[string][]string{"tags": {"x": {"a/q@1"}, "y": {"a/p@2"}, "z": {"a/p@2"}}},
		},
		{
			name:    "multi-valued: duplicates collapse",
			initial: []*corev1.Pod{withAnn(newPod("a", "p", "1"), "tags", "x,x,y")},
			update:  withAnn(newPod("a", "p", "2"), "tags", "x"),
			want:    map[string]map[string][]string{"tags": {"x": {"a/p@2"}}},
		},
		{
			name:    "multi-valued: order changes only",
			initial: []*corev1.Pod{withAnn(newPod("a", "p", "1"), "tags", "x,y")},
			update:  withAnn(newPod("a", "p", "2"), "tags", "y,x"),
			want:    map[string]map[string][]string{"tags": {"x": {"a/p@2"}, "y": {"a/p@2"}}},
		},
		{
			name:    "multi-valued: all values removed",
			initial: []*corev1.Pod{withAnn(newPod("a", "p", "1"), "tags", "x,y")},
			update:  newPod("a", "p", "2"),
			want:    map[string]map[string][]string{"tags": {}},
		},
	}
	for _, tt := range tests {
		for _, op := range []string{"literal", "prepared", "prepared before AddIndexers", "in a batch"} {
			t.Run(tt.name+"/"+op, func(t *testing.T) {
				opts := podOptions{Indexers: testIndexers()}
				if op == "prepared before AddIndexers" {
					opts.Indexers = nil
				}
				w := mustWriter(t, opts)
				mustPut(t, w, tt.initial...)
				switch op {
				case "literal":
					mustApply(t, w, put(tt.update))
				case "prepared", "prepared before AddIndexers":
					e, err := w.Prepare(tt.update)
					if err != nil {
						t.Fatal(err)
					}
					if op == "prepared before AddIndexers" {
						if err := w.AddIndexers(testIndexers()); err != nil {
							t.Fatal(err)
						}
					}
					mustApply(t, w, podChange{Entry: e})
				case "in a batch":
					// Deleted and put back, then updated, in one write.
					mustApply(t, w, delPod(tt.update), put(tt.initial[0]), put(tt.update))
				}
				checkIndexes(t, w.Store(), tt.want)
			})
		}
	}
}

func TestDeleteRemovesIndexValues(t *testing.T) {
	w := mustWriter(t, podOptions{Indexers: testIndexers(), LabelIndexes: []string{"app"}})
	st := w.Store()
	pods := indexedPods()
	mustPut(t, w, pods...)
	var dels []podChange
	for _, p := range pods {
		dels = append(dels, delPod(p))
	}
	mustApply(t, w, dels...)
	checkIndexes(t, st, map[string]map[string][]string{"app": {}, "tags": {}, cache.NamespaceIndex: {}})
	if diff := cmp.Diff(0, st.Len()); diff != "" {
		t.Errorf("Len() (-want +got):\n%s", diff)
	}
	if got, err := st.Lister().List(mustSelector(t, "app in (web,db)")); err != nil || len(got) != 0 {
		t.Errorf("label index List after deleting all = %v, %v", ids(got), err)
	}
}
