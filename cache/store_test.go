package cache_test

import (
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/cache"
)

func TestWrites(t *testing.T) {
	a1 := newPod("ns", "a", "1")
	b1 := newPod("ns", "b", "1")
	c1 := newPod("", "c", "1") // cluster-scoped
	apply := func(changes ...podChange) func(w *podWriter) error {
		return func(w *podWriter) error { _, err := w.Apply(changes); return err }
	}
	replace := func(pods ...*corev1.Pod) func(w *podWriter) error {
		return func(w *podWriter) error { _, err := w.Replace(entries(pods...)); return err }
	}
	tests := []struct {
		name    string
		initial []*corev1.Pod
		op      func(w *podWriter) error
		wantErr error // nil: no error expected
		want    []string
	}{
		{name: "put into empty", op: apply(put(a1)), want: []string{"ns/a@1"}},
		{name: "put cluster-scoped", initial: []*corev1.Pod{a1}, op: apply(put(c1)), want: []string{"c@1", "ns/a@1"}},
		{name: "put replaces same key", initial: []*corev1.Pod{a1, b1}, op: apply(put(newPod("ns", "a", "2"))), want: []string{"ns/a@2", "ns/b@1"}},
		{name: "same name other namespace is another key", initial: []*corev1.Pod{a1}, op: apply(put(newPod("other", "a", "1"))), want: []string{"ns/a@1", "other/a@1"}},
		{
			name:    "put with the key given",
			initial: []*corev1.Pod{a1},
			op:      apply(podChange{Entry: podEntry{Key: cache.Key{Namespace: "ns", Name: "a"}, Object: newPod("ns", "a", "3")}}),
			want:    []string{"ns/a@3"},
		},
		{name: "delete existing", initial: []*corev1.Pod{a1, b1}, op: apply(del(cache.Key{Namespace: "ns", Name: "a"})), want: []string{"ns/b@1"}},
		{name: "delete absent is not an error", initial: []*corev1.Pod{a1}, op: apply(delPod(b1)), want: []string{"ns/a@1"}},
		{name: "delete cluster-scoped", initial: []*corev1.Pod{a1, c1}, op: apply(del(cache.Key{Name: "c"})), want: []string{"ns/a@1"}},
		{name: "delete the empty key does nothing", initial: []*corev1.Pod{a1}, op: apply(del(cache.Key{})), want: []string{"ns/a@1"}},
		{name: "empty batch", initial: []*corev1.Pod{a1}, op: apply(), want: []string{"ns/a@1"}},
		{
			name:    "batch: later change to the same key wins",
			initial: []*corev1.Pod{a1},
			op:      apply(put(newPod("ns", "a", "2")), delPod(a1), put(newPod("ns", "a", "3")), put(b1), delPod(b1)),
			want:    []string{"ns/a@3"},
		},
		{name: "nil object", initial: []*corev1.Pod{a1}, op: apply(put(nil)), wantErr: cache.ErrNilObject, want: []string{"ns/a@1"}},
		{
			name:    "nil object with a key leaves the stored one",
			initial: []*corev1.Pod{a1},
			op:      apply(podChange{Entry: podEntry{Key: cache.KeyOf(a1)}}),
			wantErr: cache.ErrNilObject,
			want:    []string{"ns/a@1"},
		},
		{name: "nameless object", initial: []*corev1.Pod{a1}, op: apply(put(newPod("ns", "", "1"))), wantErr: cache.ErrNoName, want: []string{"ns/a@1"}},
		{
			name:    "a refused change is skipped, the rest of the batch applied",
			initial: []*corev1.Pod{a1},
			op:      apply(put(b1), put(nil), put(newPod("ns", "", "1")), put(c1), delPod(a1)),
			wantErr: cache.ErrNoName,
			want:    []string{"c@1", "ns/b@1"},
		},
		{name: "replace", initial: []*corev1.Pod{a1, b1}, op: replace(newPod("ns", "b", "2"), c1, newPod("x", "d", "1")), want: []string{"c@1", "ns/b@2", "x/d@1"}},
		{
			name:    "replace with duplicates: later wins",
			initial: []*corev1.Pod{a1},
			op:      replace(newPod("ns", "b", "1"), newPod("ns", "b", "2"), newPod("ns", "a", "5"), newPod("ns", "b", "3")),
			want:    []string{"ns/a@5", "ns/b@3"},
		},
		{name: "replace with nothing", initial: []*corev1.Pod{a1, b1}, op: replace(), want: []string{}},
		{
			name:    "replace with nil entries",
			initial: []*corev1.Pod{a1, b1},
			op:      func(w *podWriter) error { _, err := w.Replace(nil); return err },
			want:    []string{},
		},
		{name: "replace skips and reports a nil item", initial: []*corev1.Pod{a1, b1}, op: replace(c1, nil), wantErr: cache.ErrNilObject, want: []string{"c@1"}},
		{name: "replace skips and reports a nameless item", initial: []*corev1.Pod{a1, b1}, op: replace(newPod("ns", "", ""), c1), wantErr: cache.ErrNoName, want: []string{"c@1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := mustWriter(t, podOptions{})
			st := w.Store()
			mustPut(t, w, tt.initial...)
			wantErrIs(t, "write", tt.op(w), tt.wantErr)
			if diff := cmp.Diff(tt.want, ids(st.List())); diff != "" {
				t.Errorf("List() (-want +got):\n%s", diff)
			}
			wantKeys := make([]cache.Key, 0, len(tt.want))
			for _, p := range st.List() {
				wantKeys = append(wantKeys, cache.KeyOf(p))
			}
			if diff := cmp.Diff(sortedKeys(wantKeys), sortedKeys(st.ListKeys())); diff != "" {
				t.Errorf("ListKeys() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(len(tt.want), st.Len()); diff != "" {
				t.Errorf("Len() (-want +got):\n%s", diff)
			}
			// Every listed object is found by key, and the namespace index
			// agrees with the content.
			for _, p := range st.List() {
				got, ok := st.GetByKey(cache.KeyOf(p))
				if !ok || got != p {
					t.Errorf("GetByKey(%v) = %v, %v; want the listed object", cache.KeyOf(p), got, ok)
				}
			}
			nss, err := st.IndexValues(cache.NamespaceIndex)
			if err != nil {
				t.Fatal(err)
			}
			byNS := []string{}
			for _, ns := range nss {
				objs, err := st.ByIndex(cache.NamespaceIndex, ns)
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
	w := mustWriter(t, podOptions{})
	st := w.Store()
	a1, c1 := newPod("ns", "a", "1"), newPod("", "c", "1")
	mustPut(t, w, a1, c1)
	tests := []struct {
		name   string
		probe  *corev1.Pod
		wantID string // "" for not found
	}{
		{name: "found by key, not by identity", probe: newPod("ns", "a", "other"), wantID: "ns/a@1"},
		{name: "cluster-scoped", probe: newPod("", "c", ""), wantID: "c@1"},
		{name: "absent", probe: newPod("ns", "zzz", "")},
		{name: "other namespace", probe: newPod("other", "a", "")},
		{name: "cluster-scoped probe does not see namespaced", probe: newPod("", "a", "")},
		{name: "nil", probe: nil},
		{name: "nameless", probe: newPod("ns", "", "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := st.Get(tt.probe)
			if ok != (tt.wantID != "") {
				t.Fatalf("Get() = %s, %v; want found %v", id(got), ok, tt.wantID != "")
			}
			if !ok {
				if got != nil {
					t.Errorf("Get() of an absent object = %s, want nil", id(got))
				}
				return
			}
			if diff := cmp.Diff(tt.wantID, id(got)); diff != "" {
				t.Errorf("Get() (-want +got):\n%s", diff)
			}
			byKey, ok := st.GetByKey(cache.KeyOf(tt.probe))
			if !ok || byKey != got {
				t.Errorf("GetByKey() = %s, %v; want the object Get returned", id(byKey), ok)
			}
		})
	}
}

func TestIteratorsMatchList(t *testing.T) {
	w := mustWriter(t, podOptions{})
	st := w.Store()
	for i := range 50 {
		ns := []string{"", "a", "b"}[i%3]
		mustPut(t, w, newPod(ns, "p"+strconv.Itoa(i), "1"))
	}
	want := ids(st.List())
	if len(want) != 50 {
		t.Fatalf("List() has %d objects, want 50", len(want))
	}
	var all []*corev1.Pod
	var allKeys []cache.Key
	for k, p := range st.All() {
		if k != cache.KeyOf(p) {
			t.Errorf("All() yielded key %v with object %v", k, cache.KeyOf(p))
		}
		all = append(all, p)
		allKeys = append(allKeys, k)
	}
	if diff := cmp.Diff(want, ids(all)); diff != "" {
		t.Errorf("All() (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(sortedKeys(st.ListKeys()), sortedKeys(allKeys)); diff != "" {
		t.Errorf("All() keys (-want +got):\n%s", diff)
	}
	snap, _ := st.Snapshot()
	if diff := cmp.Diff(want, ids(snap)); diff != "" {
		t.Errorf("Snapshot() (-want +got):\n%s", diff)
	}
	// Early break stops iteration and leaves the iterators reusable.
	n := 0
	for range st.All() {
		n++
		if n == 3 {
			break
		}
	}
	for range st.ByIndexSeq(cache.NamespaceIndex, "a") {
		n++
		break
	}
	if n != 4 {
		t.Errorf("early breaks counted %d items, want 4", n)
	}
	var again []*corev1.Pod
	for _, p := range st.All() {
		again = append(again, p)
	}
	if diff := cmp.Diff(want, ids(again)); diff != "" {
		t.Errorf("All() after early break (-want +got):\n%s", diff)
	}
}

func TestIteratorIsASnapshot(t *testing.T) {
	w := mustWriter(t, podOptions{})
	st := w.Store()
	mustPut(t, w, newPod("ns", "a", "1"), newPod("ns", "b", "1"))
	var got []*corev1.Pod
	for _, p := range st.All() {
		// Writes during iteration do not change what this loop yields.
		mustApply(t, w, put(newPod("ns", "new-"+p.Name, "1")), delPod(p))
		got = append(got, p)
	}
	if diff := cmp.Diff([]string{"ns/a@1", "ns/b@1"}, ids(got)); diff != "" {
		t.Errorf("All() during writes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ns/new-a@1", "ns/new-b@1"}, ids(st.List())); diff != "" {
		t.Errorf("List() after loop (-want +got):\n%s", diff)
	}
	got = nil
	for p := range st.ByIndexSeq(cache.NamespaceIndex, "ns") {
		mustApply(t, w, delPod(p))
		got = append(got, p)
	}
	if diff := cmp.Diff([]string{"ns/new-a@1", "ns/new-b@1"}, ids(got)); diff != "" {
		t.Errorf("ByIndexSeq() during writes (-want +got):\n%s", diff)
	}
	if n := st.Len(); n != 0 {
		t.Errorf("Len() after deleting everything = %d", n)
	}
}

// TestRevision checks that every Apply and Replace call, and nothing else,
// adds one to the revision, and that Snapshot reports it with the content.
func TestRevision(t *testing.T) {
	w := mustWriter(t, podOptions{Indexers: podIndexes{"tags": byTags}})
	st := w.Store()
	var want uint64
	check := func(what string, rev uint64, wantIDs ...string) {
		t.Helper()
		if rev != want {
			t.Errorf("%s returned revision %d, want %d", what, rev, want)
		}
		objs, srev := st.Snapshot()
		if srev != want {
			t.Errorf("after %s: Snapshot() revision = %d, want %d", what, srev, want)
		}
		if diff := cmp.Diff(append([]string{}, wantIDs...), ids(objs)); diff != "" {
			t.Errorf("after %s: Snapshot() objects (-want +got):\n%s", what, diff)
		}
	}
	check("NewWriter", 0)
	step := func(what string, f func() (uint64, error), wantIDs ...string) {
		t.Helper()
		want++
		rev, _ := f()
		check(what, rev, wantIDs...)
	}
	a := newPod("ns", "a", "1")
	step("Apply(put a)", func() (uint64, error) { return w.Apply([]podChange{put(a)}) }, "ns/a@1")
	step("Apply(3 changes)", func() (uint64, error) {
		return w.Apply([]podChange{put(newPod("ns", "b", "1")), put(newPod("ns", "c", "1")), delPod(a)})
	}, "ns/b@1", "ns/c@1")
	step("empty Apply", func() (uint64, error) { return w.Apply(nil) }, "ns/b@1", "ns/c@1")
	step("Apply with only refused changes", func() (uint64, error) { return w.Apply([]podChange{put(nil)}) }, "ns/b@1", "ns/c@1")
	step("Apply with an index failure", func() (uint64, error) {
		return w.Apply([]podChange{put(withAnn(newPod("ns", "d", "1"), "fail", "true"))})
	}, "ns/b@1", "ns/c@1", "ns/d@1")
	step("Replace", func() (uint64, error) { return w.Replace(entries(newPod("x", "y", "1"))) }, "x/y@1")
	step("empty Replace", func() (uint64, error) { return w.Replace(nil) })

	// Neither Prepare, failed or successful AddIndexers, nor reads count.
	if _, err := w.Prepare(newPod("ns", "z", "1")); err != nil {
		t.Fatal(err)
	}
	if err := w.AddIndexers(podIndexes{"name": failOn("", "")}); err != nil {
		t.Fatal(err)
	}
	if err := w.AddIndexers(podIndexes{"name": failOn("", "")}); err == nil {
		t.Fatal("AddIndexers of a taken name: no error")
	}
	_ = st.List()
	check("AddIndexers and Prepare", want)
}
