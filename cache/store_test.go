package cache_test

import (
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/cache"
)

type podIndexer = cache.Indexer[*corev1.Pod]

func TestStoreWrites(t *testing.T) {
	a1 := newPod("ns", "a", "1")
	b1 := newPod("ns", "b", "1")
	c1 := newPod("", "c", "1") // cluster-scoped
	tests := []struct {
		name    string
		initial []*corev1.Pod
		op      func(x *podIndexer) error
		wantErr error // nil: no error expected
		want    []string
	}{
		{
			name: "add to empty",
			op:   func(x *podIndexer) error { return x.Add(a1) },
			want: []string{"ns/a@1"},
		},
		{
			name:    "add cluster-scoped",
			initial: []*corev1.Pod{a1},
			op:      func(x *podIndexer) error { return x.Add(c1) },
			want:    []string{"c@1", "ns/a@1"},
		},
		{
			name:    "add replaces same key",
			initial: []*corev1.Pod{a1, b1},
			op:      func(x *podIndexer) error { return x.Add(newPod("ns", "a", "2")) },
			want:    []string{"ns/a@2", "ns/b@1"},
		},
		{
			name:    "update existing",
			initial: []*corev1.Pod{a1, b1},
			op:      func(x *podIndexer) error { return x.Update(newPod("ns", "b", "2")) },
			want:    []string{"ns/a@1", "ns/b@2"},
		},
		{
			name:    "update absent inserts",
			initial: []*corev1.Pod{a1},
			op:      func(x *podIndexer) error { return x.Update(b1) },
			want:    []string{"ns/a@1", "ns/b@1"},
		},
		{
			name:    "same name other namespace is another key",
			initial: []*corev1.Pod{a1},
			op:      func(x *podIndexer) error { return x.Add(newPod("other", "a", "1")) },
			want:    []string{"ns/a@1", "other/a@1"},
		},
		{
			name:    "delete existing",
			initial: []*corev1.Pod{a1, b1},
			op:      func(x *podIndexer) error { return x.Delete(newPod("ns", "a", "99")) },
			want:    []string{"ns/b@1"},
		},
		{
			name:    "delete absent is not an error",
			initial: []*corev1.Pod{a1},
			op:      func(x *podIndexer) error { return x.Delete(b1) },
			want:    []string{"ns/a@1"},
		},
		{
			name:    "delete cluster-scoped",
			initial: []*corev1.Pod{a1, c1},
			op:      func(x *podIndexer) error { return x.Delete(c1) },
			want:    []string{"ns/a@1"},
		},
		{
			name:    "delete key",
			initial: []*corev1.Pod{a1, b1},
			op:      func(x *podIndexer) error { x.DeleteKey(cache.Key{Namespace: "ns", Name: "b"}); return nil },
			want:    []string{"ns/a@1"},
		},
		{
			name:    "set",
			initial: []*corev1.Pod{a1},
			op:      func(x *podIndexer) error { return x.Set(cache.Key{Namespace: "ns", Name: "a"}, newPod("ns", "a", "3")) },
			want:    []string{"ns/a@3"},
		},
		{
			name:    "add nil",
			initial: []*corev1.Pod{a1},
			op:      func(x *podIndexer) error { return x.Add(nil) },
			wantErr: cache.ErrNilObject,
			want:    []string{"ns/a@1"},
		},
		{
			name:    "update nil",
			initial: []*corev1.Pod{a1},
			op:      func(x *podIndexer) error { return x.Update(nil) },
			wantErr: cache.ErrNilObject,
			want:    []string{"ns/a@1"},
		},
		{
			name:    "delete nil",
			initial: []*corev1.Pod{a1},
			op:      func(x *podIndexer) error { return x.Delete(nil) },
			wantErr: cache.ErrNilObject,
			want:    []string{"ns/a@1"},
		},
		{
			name:    "set nil",
			initial: []*corev1.Pod{a1},
			op:      func(x *podIndexer) error { return x.Set(cache.Key{Namespace: "ns", Name: "a"}, nil) },
			wantErr: cache.ErrNilObject,
			want:    []string{"ns/a@1"},
		},
		{
			name:    "add without name",
			initial: []*corev1.Pod{a1},
			op:      func(x *podIndexer) error { return x.Add(newPod("ns", "", "1")) },
			wantErr: cache.ErrNoName,
			want:    []string{"ns/a@1"},
		},
		{
			name:    "update without name",
			initial: []*corev1.Pod{a1},
			op:      func(x *podIndexer) error { return x.Update(newPod("ns", "", "1")) },
			wantErr: cache.ErrNoName,
			want:    []string{"ns/a@1"},
		},
		{
			name:    "replace",
			initial: []*corev1.Pod{a1, b1},
			op: func(x *podIndexer) error {
				return x.Replace([]*corev1.Pod{newPod("ns", "b", "2"), c1, newPod("x", "d", "1")}, "10")
			},
			want: []string{"c@1", "ns/b@2", "x/d@1"},
		},
		{
			name:    "replace with duplicates: later wins",
			initial: []*corev1.Pod{a1},
			op: func(x *podIndexer) error {
				return x.Replace([]*corev1.Pod{newPod("ns", "b", "1"), newPod("ns", "b", "2"), newPod("ns", "a", "5"), newPod("ns", "b", "3")}, "")
			},
			want: []string{"ns/a@5", "ns/b@3"},
		},
		{
			name:    "replace with empty list",
			initial: []*corev1.Pod{a1, b1},
			op:      func(x *podIndexer) error { return x.Replace([]*corev1.Pod{}, "") },
			want:    []string{},
		},
		{
			name:    "replace with nil list",
			initial: []*corev1.Pod{a1, b1},
			op:      func(x *podIndexer) error { return x.Replace(nil, "") },
			want:    []string{},
		},
		{
			name:    "replace with a nil item changes nothing",
			initial: []*corev1.Pod{a1, b1},
			op:      func(x *podIndexer) error { return x.Replace([]*corev1.Pod{c1, nil}, "") },
			wantErr: cache.ErrNilObject,
			want:    []string{"ns/a@1", "ns/b@1"},
		},
		{
			name:    "replace with a nameless item changes nothing",
			initial: []*corev1.Pod{a1, b1},
			op:      func(x *podIndexer) error { return x.Replace([]*corev1.Pod{c1, newPod("ns", "", "")}, "") },
			wantErr: cache.ErrNoName,
			want:    []string{"ns/a@1", "ns/b@1"},
		},
		{
			name:    "resync changes nothing",
			initial: []*corev1.Pod{a1, b1},
			op:      func(x *podIndexer) error { return x.Resync() },
			want:    []string{"ns/a@1", "ns/b@1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{})
			mustAdd(t, x, tt.initial...)
			err := tt.op(x)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Fatalf("error = %v, want errors.Is %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, ids(x.List())); diff != "" {
				t.Errorf("List() (-want +got):\n%s", diff)
			}
			wantKeys := make([]cache.Key, 0, len(tt.want))
			for _, p := range x.List() {
				wantKeys = append(wantKeys, cache.KeyOf(p))
			}
			if diff := cmp.Diff(sortedKeys(wantKeys), sortedKeys(x.ListKeys())); diff != "" {
				t.Errorf("ListKeys() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(len(tt.want), x.Len()); diff != "" {
				t.Errorf("Len() (-want +got):\n%s", diff)
			}
			// Every listed object is found by key, and the namespace index
			// agrees with the content.
			for _, p := range x.List() {
				got, ok, _ := x.GetByKey(cache.KeyOf(p))
				if !ok || got != p {
					t.Errorf("GetByKey(%v) = %v, %v; want the listed object", cache.KeyOf(p), got, ok)
				}
			}
			byNS := []string{}
			for _, ns := range x.ListIndexFuncValues(cache.NamespaceIndex) {
				objs, err := x.ByIndex(cache.NamespaceIndex, ns)
				if err != nil {
					t.Fatalf("ByIndex(namespace, %q): %v", ns, err)
				}
				for _, p := range objs {
					if p.Namespace != ns {
						t.Errorf("ByIndex(namespace, %q) yielded %s", ns, id(p))
					}
				}
				byNS = append(byNS, ids(objs)...)
			}
			slices.Sort(byNS)
			if diff := cmp.Diff(tt.want, byNS); diff != "" {
				t.Errorf("namespace index (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStoreGet(t *testing.T) {
	x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{})
	a1, c1 := newPod("ns", "a", "1"), newPod("", "c", "1")
	mustAdd(t, x, a1, c1)
	tests := []struct {
		name       string
		probe      *corev1.Pod
		wantID     string // "" for not found
		wantExists bool
		wantErr    error
	}{
		{name: "found by key, not by identity", probe: newPod("ns", "a", "other"), wantID: "ns/a@1", wantExists: true},
		{name: "cluster-scoped", probe: newPod("", "c", ""), wantID: "c@1", wantExists: true},
		{name: "absent", probe: newPod("ns", "zzz", "")},
		{name: "other namespace", probe: newPod("other", "a", "")},
		{name: "cluster-scoped probe does not see namespaced", probe: newPod("", "a", "")},
		{name: "nil", probe: nil, wantErr: cache.ErrNilObject},
		{name: "nameless", probe: newPod("ns", "", ""), wantErr: cache.ErrNoName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, exists, err := x.Get(tt.probe)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Get() error = %v, want errors.Is %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Get(): %v", err)
			}
			if exists != tt.wantExists {
				t.Fatalf("Get() exists = %v, want %v", exists, tt.wantExists)
			}
			if !exists {
				if got != nil {
					t.Errorf("Get() of absent object = %v, want nil", got)
				}
				return
			}
			if diff := cmp.Diff(tt.wantID, id(got)); diff != "" {
				t.Errorf("Get() (-want +got):\n%s", diff)
			}
			byKey, ok, _ := x.GetByKey(cache.KeyOf(tt.probe))
			if !ok || byKey != got {
				t.Errorf("GetByKey() = %v, %v; want the object Get returned", byKey, ok)
			}
		})
	}
}

func TestIteratorsMatchList(t *testing.T) {
	x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{})
	for i := range 50 {
		ns := []string{"", "a", "b"}[i%3]
		mustAdd(t, x, newPod(ns, "p"+strconv.Itoa(i), "1"))
	}
	want := ids(x.List())
	if diff := cmp.Diff(want, ids(collect(x.Values()))); diff != "" {
		t.Errorf("Values() (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(sortedKeys(x.ListKeys()), sortedKeys(collect(x.Keys()))); diff != "" {
		t.Errorf("Keys() (-want +got):\n%s", diff)
	}
	var all []*corev1.Pod
	for k, p := range x.All() {
		if k != cache.KeyOf(p) {
			t.Errorf("All() yielded key %v with object %v", k, cache.KeyOf(p))
		}
		all = append(all, p)
	}
	if diff := cmp.Diff(want, ids(all)); diff != "" {
		t.Errorf("All() (-want +got):\n%s", diff)
	}
	// Early break stops iteration and leaves the iterator reusable.
	n := 0
	for range x.Values() {
		n++
		if n == 3 {
			break
		}
	}
	if n != 3 {
		t.Errorf("broke after %d items, want 3", n)
	}
	n = 0
	for range x.All() {
		n++
		break
	}
	for range x.Keys() {
		n++
		break
	}
	if n != 2 {
		t.Errorf("All/Keys early break counted %d, want 2", n)
	}
	if diff := cmp.Diff(want, ids(collect(x.Values()))); diff != "" {
		t.Errorf("Values() after early break (-want +got):\n%s", diff)
	}
}

func TestIteratorIsASnapshot(t *testing.T) {
	x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{})
	mustAdd(t, x, newPod("ns", "a", "1"), newPod("ns", "b", "1"))
	var got []*corev1.Pod
	for p := range x.Values() {
		// Writes during iteration do not change what this loop yields.
		mustAdd(t, x, newPod("ns", "new-"+p.Name, "1"))
		if err := x.Delete(p); err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
	}
	if diff := cmp.Diff([]string{"ns/a@1", "ns/b@1"}, ids(got)); diff != "" {
		t.Errorf("Values() during writes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ns/new-a@1", "ns/new-b@1"}, ids(x.List())); diff != "" {
		t.Errorf("List() after loop (-want +got):\n%s", diff)
	}
}

func TestCustomKeyFunc(t *testing.T) {
	errNoUID := errors.New("no uid")
	// Key by name alone, so that an object can move between namespaces
	// under the same key; reject objects labelled reject=true.
	byName := func(p *corev1.Pod) (cache.Key, error) {
		if p == nil {
			return cache.Key{}, cache.ErrNilObject
		}
		if p.Labels["reject"] == "true" {
			return cache.Key{}, errNoUID
		}
		return cache.Key{Name: p.Name}, nil
	}
	x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{
		KeyFunc:  byName,
		Indexers: cache.Indexers[*corev1.Pod]{appIndex: cache.IndexByLabel[*corev1.Pod]("app")},
	})
	mustAdd(t, x, newPod("a", "p", "1", "app", "web"), newPod("a", "q", "1"))
	if k, err := x.KeyOf(newPod("zzz", "p", "")); err != nil || k != (cache.Key{Name: "p"}) {
		t.Errorf("KeyOf() = %v, %v; want the custom key", k, err)
	}
	// Same key, other namespace: the object moves.
	mustAdd(t, x, newPod("b", "p", "2", "app", "db"))
	checkIndexes(t, x, map[string]map[string][]string{
		cache.NamespaceIndex: {"a": {"a/q@1"}, "b": {"b/p@2"}},
		appIndex:             {"db": {"b/p@2"}},
	})
	if diff := cmp.Diff([]cache.Key{{Name: "p"}, {Name: "q"}}, sortedKeys(x.ListKeys())); diff != "" {
		t.Errorf("ListKeys() (-want +got):\n%s", diff)
	}
	got, ok, err := x.Get(newPod("elsewhere", "p", ""))
	if err != nil || !ok || id(got) != "b/p@2" {
		t.Errorf("Get() = %v, %v, %v; want b/p@2", got, ok, err)
	}
	// Key function errors surface from every method that computes a key,
	// and change nothing.
	before := snapshotState(t, x)
	rejected := newPod("a", "r", "1", "reject", "true")
	for name, op := range map[string]func() error{
		"Add":     func() error { return x.Add(rejected) },
		"Update":  func() error { return x.Update(rejected) },
		"Delete":  func() error { return x.Delete(newPod("a", "p", "1", "reject", "true")) },
		"Get":     func() error { _, _, err := x.Get(rejected); return err },
		"Replace": func() error { return x.Replace([]*corev1.Pod{newPod("a", "z", "1"), rejected}, "") },
	} {
		if err := op(); !errors.Is(err, errNoUID) {
			t.Errorf("%s: error = %v, want the key function's error", name, err)
		}
	}
	if diff := cmp.Diff(before, snapshotState(t, x)); diff != "" {
		t.Errorf("state changed by key function errors (-want +got):\n%s", diff)
	}
	// Deleting moves the object out of every index.
	if err := x.Delete(newPod("whatever", "p", "")); err != nil {
		t.Fatal(err)
	}
	checkIndexes(t, x, map[string]map[string][]string{
		cache.NamespaceIndex: {"a": {"a/q@1"}},
		appIndex:             {},
	})
}
