package cache_test

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/cache"
)

// TestPrepareRefuses checks that Prepare refuses an object any index
// function fails or panics on, naming the index (the caller names the
// object).
func TestPrepareRefuses(t *testing.T) {
	w := mustWriter(t, podOptions{Indexers: podIndexes{
		"tags": byTags,
		"panics": func(p *corev1.Pod) ([]string, error) {
			if p.Annotations["panic"] == "true" {
				panic("index bug")
			}
			return nil, nil
		},
	}})
	tests := []struct {
		name     string
		pod      *corev1.Pod
		wantErr  error
		wantText []string // substrings of the error
	}{
		{name: "indexable", pod: withAnn(newPod("ns", "ok", "1"), "tags", "x")},
		{name: "index function fails", pod: withAnn(newPod("ns", "bad", "1"), "fail", "true"), wantErr: errBoom, wantText: []string{`"tags"`}},
		{name: "index function panics", pod: withAnn(newPod("", "bad", "1"), "panic", "true"), wantErr: cache.ErrIndexPanic, wantText: []string{`"panics"`, "index bug"}},
		{name: "nil", pod: nil, wantErr: cache.ErrNilObject},
		{name: "nameless", pod: newPod("ns", "", "1"), wantErr: cache.ErrNoName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := w.Prepare(tt.pod)
			wantErrIs(t, "Prepare", err, tt.wantErr)
			for _, s := range tt.wantText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Prepare() error %q does not mention %s", err, s)
				}
			}
			if err != nil && (e.Object != nil || e.Key != (cache.Key{})) {
				t.Errorf("Prepare() returned an entry with its error: %v, %s", e.Key, id(e.Object))
			}
		})
	}
	if n := w.Store().Len(); n != 0 {
		t.Errorf("Prepare stored %d objects", n)
	}
}

// TestIndexFunctionCalls counts index function calls: Prepare calls each
// index function once per object, Apply and Replace of prepared entries call
// none, a literal entry costs one call per index, and an entry prepared
// before AddIndexers costs one call of each new index only.
func TestIndexFunctionCalls(t *testing.T) {
	var nTags, nApp, nName atomic.Int64
	w := mustWriter(t, podOptions{Indexers: podIndexes{
		"tags": counted(&nTags, byTags),
		"app":  counted(&nApp, byLabel("app")),
	}})
	st := w.Store()
	wantCalls := func(what string, tags, app, name int64) {
		t.Helper()
		got := [3]int64{nTags.Load(), nApp.Load(), nName.Load()}
		if diff := cmp.Diff([3]int64{tags, app, name}, got); diff != "" {
			t.Errorf("after %s: calls of [tags app name] (-want +got):\n%s", what, diff)
		}
	}
	const n = 10
	var prepared []podEntry
	for i := range n {
		e, err := w.Prepare(withAnn(newPod("ns", "p"+strconv.Itoa(i), "1", "app", "web"), "tags", "x,y"))
		if err != nil {
			t.Fatal(err)
		}
		prepared = append(prepared, e)
	}
	wantCalls("Prepare", n, n, 0)

	changes := make([]podChange, n)
	for i, e := range prepared {
		changes[i].Entry = e
	}
	mustApply(t, w, changes...)
	wantCalls("Apply of prepared entries", n, n, 0)
	if _, err := w.Replace(prepared); err != nil {
		t.Fatal(err)
	}
	wantCalls("Replace of prepared entries", n, n, 0)
	// Applying the same changes again: their entries are still prepared.
	mustApply(t, w, changes...)
	wantCalls("Apply of the same changes again", n, n, 0)
	mustApply(t, w, delPod(prepared[0].Object), del(cache.Key{Namespace: "ns", Name: "absent"}))
	wantCalls("Apply of deletes", n, n, 0)

	mustApply(t, w, put(newPod("ns", "literal", "1", "app", "db")))
	wantCalls("Apply of a literal entry", n+1, n+1, 0)

	// A new index: built over the n stored objects, once each.
	stale, err := w.Prepare(newPod("ns", "stale", "1", "app", "web"))
	if err != nil {
		t.Fatal(err)
	}
	wantCalls("Prepare before AddIndexers", n+2, n+2, 0)
	if err := w.AddIndexers(podIndexes{"name": counted(&nName, failOn("", ""))}); err != nil {
		t.Fatal(err)
	}
	wantCalls("AddIndexers", n+2, n+2, int64(st.Len()))
	mustApply(t, w, podChange{Entry: stale})
	wantCalls("Apply of an entry prepared before AddIndexers", n+2, n+2, int64(st.Len()))
	got, err := st.ByIndex("name", "stale")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ns/stale@1"}, ids(got)); diff != "" {
		t.Errorf("ByIndex(name, stale) (-want +got):\n%s", diff)
	}
	got, err = st.ByIndex("app", "web")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n { // p1..p9 and stale
		t.Errorf("ByIndex(app, web) = %v, want %d objects", ids(got), n)
	}
}

// TestApplyPrevExisted checks what Apply reports of each change, in a batch
// where later changes see the earlier ones.
func TestApplyPrevExisted(t *testing.T) {
	a1, a2, a3 := newPod("ns", "a", "1"), newPod("ns", "a", "2"), newPod("ns", "a", "3")
	b1 := newPod("ns", "b", "1")
	type out struct {
		Prev    string
		Existed bool
	}
	tests := []struct {
		name    string
		initial []*corev1.Pod
		changes []podChange
		want    []out
	}{
		{name: "put new", changes: []podChange{put(a1)}, want: []out{{"<nil>", false}}},
		{name: "put over existing", initial: []*corev1.Pod{a1}, changes: []podChange{put(a2)}, want: []out{{"ns/a@1", true}}},
		{name: "put the stored object again", initial: []*corev1.Pod{a1}, changes: []podChange{put(a1)}, want: []out{{"ns/a@1", true}}},
		{name: "delete existing", initial: []*corev1.Pod{a1}, changes: []podChange{delPod(a1)}, want: []out{{"ns/a@1", true}}},
		{name: "delete absent", initial: []*corev1.Pod{a1}, changes: []podChange{delPod(b1)}, want: []out{{"<nil>", false}}},
		{
			name:    "a batch sees its own earlier changes",
			initial: []*corev1.Pod{a1},
			changes: []podChange{put(a2), put(a3), delPod(a1), delPod(a1), put(a1), put(b1)},
			want:    []out{{"ns/a@1", true}, {"ns/a@2", true}, {"ns/a@3", true}, {"<nil>", false}, {"<nil>", false}, {"<nil>", false}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := mustWriter(t, podOptions{})
			mustPut(t, w, tt.initial...)
			got := mustApply(t, w, tt.changes...)
			outs := make([]out, len(got))
			for i, ch := range got {
				outs[i] = out{id(ch.Prev), ch.Existed}
			}
			if diff := cmp.Diff(tt.want, outs); diff != "" {
				t.Errorf("Prev, Existed per change (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("outputs are overwritten", func(t *testing.T) {
		// Stale outputs from a caller's reused slice do not survive.
		w := mustWriter(t, podOptions{})
		ch := put(a1)
		ch.Prev, ch.Existed = b1, true
		got := mustApply(t, w, ch)
		if got[0].Prev != nil || got[0].Existed {
			t.Errorf("Prev, Existed = %s, %v; want <nil>, false", id(got[0].Prev), got[0].Existed)
		}
	})
}

// TestApplySameObjectIsNoOp re-applies the stored object with an index
// function that answers differently on every call: the index keeps the
// values it had, so the re-apply did not touch the indexes; a new object
// with the same content is indexed anew.
func TestApplySameObjectIsNoOp(t *testing.T) {
	var calls atomic.Int64
	w := mustWriter(t, podOptions{
		Indexers: podIndexes{"call": func(*corev1.Pod) ([]string, error) {
			return []string{"call-" + strconv.FormatInt(calls.Add(1), 10)}, nil
		}},
		LabelIndexes: []string{"app"},
	})
	st := w.Store()
	p := newPod("ns", "p", "1", "app", "web")
	mustPut(t, w, p)
	want := stateOf(t, st, "call")
	if diff := cmp.Diff(map[string][]string{"call-1": {"ns/p@1"}}, want.Indexes["call"]); diff != "" {
		t.Fatalf("index after the first Apply (-want +got):\n%s", diff)
	}
	for i, changes := range [][]podChange{
		{put(p)},
		{put(p), put(p)},
		{{Entry: podEntry{Key: cache.KeyOf(p), Object: p}}},
	} {
		got := mustApply(t, w, changes...)
		for _, ch := range got {
			if ch.Prev != p || !ch.Existed {
				t.Errorf("re-apply %d: Prev, Existed = %s, %v; want the same object, true", i, id(ch.Prev), ch.Existed)
			}
		}
		want.Rev++
		if diff := cmp.Diff(want, stateOf(t, st, "call")); diff != "" {
			t.Errorf("state after re-apply %d (-want +got):\n%s", i, diff)
		}
	}
	l := st.Lister()
	if got, err := l.List(mustSelector(t, "app=web")); err != nil || len(got) != 1 || got[0] != p {
		t.Errorf("List(app=web) after re-applies = %v, %v; want the object once", ids(got), err)
	}
	// A copy is another object: it replaces p and is indexed again.
	cp := p.DeepCopy()
	mustPut(t, w, cp)
	got, err := st.ByIndex("call", "call-"+strconv.FormatInt(calls.Load(), 10))
	if err != nil || len(got) != 1 || got[0] != cp {
		t.Errorf("ByIndex(call, latest) = %v, %v; want the copy", ids(got), err)
	}
	if vals, _ := st.IndexValues("call"); len(vals) != 1 {
		t.Errorf("IndexValues(call) = %v, want one value", vals)
	}
}

// TestLiteralEntryIndexFailure checks an entry Apply must index itself: if
// an index function fails on it, the object is stored, left out of that
// index only, and the error says so.
func TestLiteralEntryIndexFailure(t *testing.T) {
	panics := func(p *corev1.Pod) ([]string, error) {
		if p.Annotations["panic"] == "true" {
			panic("index bug")
		}
		return []string{"ok"}, nil
	}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		wantErr  error
		wantTags map[string][]string
		wantOK   []string // ids under panics=ok
	}{
		{
			name:     "tags fails",
			pod:      withAnn(newPod("ns", "bad", "2", "app", "web"), "fail", "true", "tags", "q"),
			wantErr:  errBoom,
			wantTags: map[string][]string{"x": {"ns/good@1"}},
			wantOK:   []string{"ns/bad@2", "ns/good@1"},
		},
		{
			name:     "panics panics",
			pod:      withAnn(newPod("ns", "bad", "2", "app", "web"), "panic", "true", "tags", "q"),
			wantErr:  cache.ErrIndexPanic,
			wantTags: map[string][]string{"x": {"ns/good@1"}, "q": {"ns/bad@2"}},
			wantOK:   []string{"ns/good@1"},
		},
	}
	for _, tt := range tests {
		for _, op := range []string{"Apply", "Apply over an indexed version", "Replace"} {
			t.Run(tt.name+"/"+op, func(t *testing.T) {
				w := mustWriter(t, podOptions{Indexers: podIndexes{"tags": byTags, "panics": panics}, LabelIndexes: []string{"app"}})
				st := w.Store()
				good := withAnn(newPod("ns", "good", "1", "app", "web"), "tags", "x")
				mustPut(t, w, good)
				var err error
				switch op {
				case "Apply":
					_, err = w.Apply([]podChange{put(tt.pod)})
				case "Apply over an indexed version":
					mustPut(t, w, withAnn(newPod("ns", "bad", "1", "app", "db"), "tags", "x,old"))
					_, err = w.Apply([]podChange{put(tt.pod)})
				case "Replace":
					_, err = w.Replace(entries(good, tt.pod))
				}
				wantErrIs(t, op, err, tt.wantErr)
				if !strings.Contains(err.Error(), "ns/bad") {
					t.Errorf("error %q does not name the key", err)
				}
				if got, ok := st.GetByKey(cache.KeyOf(tt.pod)); !ok || got != tt.pod {
					t.Errorf("GetByKey = %s, %v; want the object stored", id(got), ok)
				}
				s := stateOf(t, st, "tags", "panics")
				if diff := cmp.Diff(tt.wantTags, s.Indexes["tags"]); diff != "" {
					t.Errorf("tags index (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(map[string][]string{"ok": tt.wantOK}, s.Indexes["panics"]); diff != "" {
					t.Errorf("panics index (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(map[string][]string{"ns": {"ns/bad@2", "ns/good@1"}}, s.Indexes[cache.NamespaceIndex]); diff != "" {
					t.Errorf("namespace index (-want +got):\n%s", diff)
				}
				web, _ := st.Lister().List(mustSelector(t, "app=web"))
				if diff := cmp.Diff([]string{"ns/bad@2", "ns/good@1"}, ids(web)); diff != "" {
					t.Errorf("label index List(app=web) (-want +got):\n%s", diff)
				}
				// Deleting the object that is missing from an index works.
				mustApply(t, w, delPod(tt.pod))
				s = stateOf(t, st, "tags", "panics")
				if diff := cmp.Diff(map[string][]string{"x": {"ns/good@1"}}, s.Indexes["tags"]); diff != "" {
					t.Errorf("tags index after delete (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestRefusedChangesAreReported checks that each refused change is named in
// Apply's error, and that the other changes are made.
func TestRefusedChangesAreReported(t *testing.T) {
	w := mustWriter(t, podOptions{Indexers: podIndexes{"tags": byTags}})
	st := w.Store()
	_, err := w.Apply([]podChange{
		put(newPod("ns", "ok-0", "1")),
		put(nil),
		{Entry: podEntry{Key: cache.Key{Namespace: "ns", Name: "keyed"}}},
		put(newPod("other", "", "1")),
		put(withAnn(newPod("ns", "unindexed", "1"), "fail", "true")),
		put(newPod("ns", "ok-1", "1")),
	})
	for _, want := range []error{cache.ErrNilObject, cache.ErrNoName, errBoom} {
		if !errors.Is(err, want) {
			t.Errorf("Apply error = %v, want errors.Is %v", err, want)
		}
	}
	if err != nil {
		for _, s := range []string{"ns/keyed", `"other"`, "ns/unindexed"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("Apply error %q does not mention %s", err, s)
			}
		}
	}
	if diff := cmp.Diff([]string{"ns/ok-0@1", "ns/ok-1@1", "ns/unindexed@1"}, ids(st.List())); diff != "" {
		t.Errorf("List() (-want +got):\n%s", diff)
	}
}

// TestPreparedEntryOfAnotherWriter checks that an entry prepared by one
// writer is indexed anew by another.
func TestPreparedEntryOfAnotherWriter(t *testing.T) {
	other := mustWriter(t, podOptions{Indexers: podIndexes{"x": failOn("", ""), "y": failOn("", "")}})
	e, err := other.Prepare(withAnn(newPod("ns", "p", "1", "app", "web"), "tags", "t1,t2"))
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	w := mustWriter(t, podOptions{Indexers: podIndexes{"tags": counted(&calls, byTags)}})
	mustApply(t, w, podChange{Entry: e})
	if n := calls.Load(); n != 1 {
		t.Errorf("tags called %d times, want 1", n)
	}
	if diff := cmp.Diff(map[string][]string{"t1": {"ns/p@1"}, "t2": {"ns/p@1"}}, stateOf(t, w.Store(), "tags").Indexes["tags"]); diff != "" {
		t.Errorf("tags index (-want +got):\n%s", diff)
	}
	if _, err := w.Store().ByIndex("x", "p"); !errors.Is(err, cache.ErrNoIndex) {
		t.Errorf("ByIndex(x) = %v, want ErrNoIndex: the other writer's index", err)
	}
}

// TestEntryReuse checks that one prepared entry can be applied by several
// changes and calls: entries are values.
func TestEntryReuse(t *testing.T) {
	w := mustWriter(t, podOptions{Indexers: podIndexes{"tags": byTags}})
	st := w.Store()
	e, err := w.Prepare(withAnn(newPod("ns", "p", "1"), "tags", "a"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		mustApply(t, w, podChange{Entry: e}, delPod(e.Object), podChange{Entry: e})
		if _, err := w.Replace([]podEntry{e, e}); err != nil {
			t.Fatal(err)
		}
		want := map[string][]string{"a": {"ns/p@1"}}
		if diff := cmp.Diff(want, stateOf(t, st, "tags").Indexes["tags"]); diff != "" {
			t.Errorf("round %d: tags index (-want +got):\n%s", i, diff)
		}
	}
	if diff := cmp.Diff([]string{"ns/p@1"}, ids(st.List())); diff != "" {
		t.Errorf("List() (-want +got):\n%s", diff)
	}
}

// TestWriterEntry checks the entry Writer.Entry returns for a stored
// object: writing it again changes nothing and calls no index function,
// also for an object left out of an index; taken before AddIndexers, it
// costs the new indexes only.
func TestWriterEntry(t *testing.T) {
	var nTags, nName atomic.Int64
	w := mustWriter(t, podOptions{Indexers: podIndexes{"tags": counted(&nTags, byTags)}, LabelIndexes: []string{"app"}})
	st := w.Store()
	p := withAnn(newPod("ns", "p", "1", "app", "web"), "tags", "x,y")
	bad := withAnn(newPod("ns", "bad", "1", "app", "web"), "fail", "true")
	if _, err := w.Apply([]podChange{put(p), put(bad)}); !errors.Is(err, errBoom) {
		t.Fatalf("Apply = %v, want errBoom for bad", err)
	}
	if e, ok := w.Entry(cache.Key{Namespace: "ns", Name: "absent"}); ok || e.Object != nil {
		t.Errorf("Entry(absent) = %s, %v; want nothing", id(e.Object), ok)
	}
	entry := func(k cache.Key) podEntry {
		t.Helper()
		e, ok := w.Entry(k)
		if !ok || e.Key != k || e.Object == nil || cache.KeyOf(e.Object) != k {
			t.Fatalf("Entry(%v) = %v, %s, %v", k, e.Key, id(e.Object), ok)
		}
		return e
	}
	pe, be := entry(cache.KeyOf(p)), entry(cache.KeyOf(bad))
	if pe.Object != p || be.Object != bad {
		t.Fatalf("Entry returned other objects than the stored ones")
	}
	names := []string{"tags", "name"}
	before := stateOf(t, st, names...)
	calls := nTags.Load()
	got := mustApply(t, w, podChange{Entry: pe}, podChange{Entry: be})
	if got[0].Prev != p || !got[0].Existed || got[1].Prev != bad || !got[1].Existed {
		t.Errorf("Prev, Existed = %s %v, %s %v", id(got[0].Prev), got[0].Existed, id(got[1].Prev), got[1].Existed)
	}
	if _, err := w.Replace([]podEntry{pe, be}); err != nil {
		t.Errorf("Replace of stored entries: %v", err)
	}
	before.Rev += 2
	if diff := cmp.Diff(before, stateOf(t, st, names...)); diff != "" {
		t.Errorf("state after writing stored entries again (-want +got):\n%s", diff)
	}
	if n := nTags.Load() - calls; n != 0 {
		t.Errorf("writing stored entries again called the tags index %d times", n)
	}

	// Taken before AddIndexers, an entry costs the new index only; taken
	// after, nothing.
	if err := w.AddIndexers(podIndexes{"name": counted(&nName, failOn("", ""))}); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name             string
		changes          func() []podChange
		wantTags, wantNm int64
		want             map[string]map[string][]string
	}{
		{
			name:     "literal, then the entry taken before AddIndexers",
			changes:  func() []podChange { return []podChange{put(newPod("ns", "p", "2", "app", "web")), {Entry: pe}} },
			wantTags: 1, wantNm: 2,
			want: map[string]map[string][]string{
				"tags": {"x": {"ns/p@1"}, "y": {"ns/p@1"}},
				"name": {"p": {"ns/p@1"}, "bad": {"ns/bad@1"}},
			},
		},
		{
			name: "literal, then an entry taken after AddIndexers",
			changes: func() []podChange {
				return []podChange{{Entry: entry(pe.Key)}, put(newPod("ns", "p", "3", "app", "web")), {Entry: entry(pe.Key)}}
			},
			wantTags: 1, wantNm: 1,
			want: map[string]map[string][]string{
				"tags": {"x": {"ns/p@1"}, "y": {"ns/p@1"}},
				"name": {"p": {"ns/p@1"}, "bad": {"ns/bad@1"}},
			},
		},
	} {
		changes := step.changes()
		nTags.Store(0)
		nName.Store(0)
		mustApply(t, w, changes...)
		if a, b := nTags.Load(), nName.Load(); a != step.wantTags || b != step.wantNm {
			t.Errorf("%s: tags %d, name %d calls; want %d, %d", step.name, a, b, step.wantTags, step.wantNm)
		}
		checkIndexes(t, st, step.want)
	}

	// Another writer indexes it anew.
	var nOther atomic.Int64
	other := mustWriter(t, podOptions{Indexers: podIndexes{"tags": counted(&nOther, byTags)}})
	mustApply(t, other, podChange{Entry: entry(pe.Key)})
	if n := nOther.Load(); n != 1 {
		t.Errorf("another writer called its index %d times, want 1", n)
	}
}
