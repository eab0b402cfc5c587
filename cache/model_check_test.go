package cache_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/typedinformer/informer/cache"
)

// same fails the test if got differs from want. It compares cheaply and
// only runs cmp.Diff, which is slow, to report a difference.
func same[T comparable](s *script, want, got []T, format string, args ...any) {
	if slices.Equal(want, got) {
		return
	}
	s.t.Helper()
	s.t.Fatalf("after op %d %s: %s (-want +got):\n%s", s.ops, s.lastDesc, fmt.Sprintf(format, args...), cmp.Diff(want, got))
}

// samePods compares two sets of objects by identity: the same object
// versions, in any order.
func samePods(s *script, want, got []*corev1.Pod, format string, args ...any) {
	if len(want) == len(got) {
		sortPods(want)
		sortPods(got)
		if slices.Equal(want, got) {
			return
		}
	}
	s.t.Helper()
	s.t.Fatalf("after op %d %s: %s (-want +got):\n%s", s.ops, s.lastDesc, fmt.Sprintf(format, args...), cmp.Diff(ids(want), ids(got)))
}

func sortPods(pods []*corev1.Pod) {
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return compareKeys(cache.KeyOf(a), cache.KeyOf(b)) })
}

func (s *script) fatalf(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("after op %d %s: %s", s.ops, s.lastDesc, fmt.Sprintf(format, args...))
}

// check compares all observable state; probe, if not nil, is used for Get.
func (s *script) check(probe *corev1.Pod) {
	s.t.Helper()
	st, m := s.st, s.m
	want := slices.Collect(maps.Values(m.items))
	objs, rev := st.Snapshot()
	samePods(s, want, objs, "Snapshot")
	if rev != m.rev {
		s.fatalf("Snapshot revision %d, want %d", rev, m.rev)
	}
	samePods(s, want, st.List(), "List")
	if n := st.Len(); n != len(m.items) {
		s.fatalf("Len() = %d, want %d", n, len(m.items))
	}
	wantKeys := sortedKeys(slices.Collect(maps.Keys(m.items)))
	same(s, wantKeys, sortedKeys(st.ListKeys()), "ListKeys")
	var all []*corev1.Pod
	for k, p := range st.All() {
		if k != cache.KeyOf(p) {
			s.fatalf("All yielded %v with %s", k, id(p))
		}
		all = append(all, p)
	}
	samePods(s, want, all, "All")

	// Every key of the domain, present or not.
	for _, ns := range modelNamespaces {
		for _, name := range modelNames {
			k := cache.Key{Namespace: ns, Name: name}
			got, ok := st.GetByKey(k)
			wantP, wantOK := m.items[k]
			if ok != wantOK || got != wantP {
				s.fatalf("GetByKey(%v) = %s, %v; want %s, %v", k, podDesc(got), ok, podDesc(wantP), wantOK)
			}
		}
	}
	if probe != nil {
		got, ok := st.Get(probe)
		wantP, wantOK := m.items[cache.KeyOf(probe)]
		if ok != wantOK || got != wantP {
			s.fatalf("Get(%s) = %s, %v; want %s, %v", podDesc(probe), podDesc(got), ok, podDesc(wantP), wantOK)
		}
	}
	s.checkIndexes()
	s.checkLister()
}

func (s *script) checkIndexes() {
	s.t.Helper()
	st, m := s.st, s.m
	for _, name := range candidateNames {
		if m.hasIndex(name) {
			continue
		}
		if _, err := st.ByIndex(name, "x"); !errors.Is(err, cache.ErrNoIndex) {
			s.fatalf("ByIndex(%q) error = %v, want ErrNoIndex", name, err)
		}
		if got, err := st.IndexValues(name); !errors.Is(err, cache.ErrNoIndex) || got != nil {
			s.fatalf("IndexValues(%q) = %v, %v; want nil, ErrNoIndex", name, got, err)
		}
		if got := collect(st.ByIndexSeq(name, "x")); len(got) != 0 {
			s.fatalf("ByIndexSeq(%q) = %v, want nothing", name, ids(got))
		}
	}
	names := append(slices.Sorted(maps.Keys(m.funcs)), cache.NamespaceIndex)
	for _, name := range names {
		// Each object's values, computed once.
		objVals := make(map[*corev1.Pod][]string, len(m.items))
		valSet := map[string]bool{}
		for _, p := range m.items {
			vs := m.valuesOf(name, p)
			objVals[p] = vs
			for _, v := range vs {
				valSet[v] = true
			}
		}
		vals := append([]string{}, slices.Sorted(maps.Keys(valSet))...)
		gotVals, err := st.IndexValues(name)
		if err != nil {
			s.fatalf("IndexValues(%q): %v", name, err)
		}
		same(s, vals, gotVals, "IndexValues(%q)", name)
		for _, v := range append(vals, extraValues...) {
			wantObjs := []*corev1.Pod{}
			for p, vs := range objVals {
				if slices.Contains(vs, v) {
					wantObjs = append(wantObjs, p)
				}
			}
			got, err := st.ByIndex(name, v)
			if err != nil {
				s.fatalf("ByIndex(%q, %q): %v", name, v, err)
			}
			samePods(s, wantObjs, got, "ByIndex(%q, %q)", name, v)
			samePods(s, wantObjs, collect(st.ByIndexSeq(name, v)), "ByIndexSeq(%q, %q)", name, v)
		}
	}
}

func (s *script) checkLister() {
	s.t.Helper()
	m, l := s.m, s.l
	for i, sel := range s.sels {
		selName := modelSelectors[i]
		want := m.list("", false, sel)
		got, err := l.List(sel)
		if err != nil {
			s.fatalf("Lister.List(%q): %v", selName, err)
		}
		samePods(s, want, got, "Lister.List(%q)", selName)
		samePods(s, want, collect(l.ListSeq(sel)), "Lister.ListSeq(%q)", selName)
		if i >= nsListerSelectors {
			continue
		}
		for _, ns := range modelNamespaces {
			want := m.list(ns, true, sel)
			got, err := l.Namespace(ns).List(sel)
			if err != nil {
				s.fatalf("Namespace(%q).List(%q): %v", ns, selName, err)
			}
			samePods(s, want, got, "Namespace(%q).List(%q)", ns, selName)
			samePods(s, want, collect(l.Namespace(ns).ListSeq(sel)), "Namespace(%q).ListSeq(%q)", ns, selName)
		}
	}
	if _, err := l.List(nil); !errors.Is(err, cache.ErrNilSelector) {
		s.fatalf("Lister.List(nil) error = %v, want ErrNilSelector", err)
	}
	// Gets in every namespace and without one, of every name.
	for _, name := range modelNames {
		for _, ns := range append([]string{"-"}, modelNamespaces...) {
			var got *corev1.Pod
			var err error
			k, namespaced := cache.Key{Name: name}, false
			what := fmt.Sprintf("Lister.Get(%q)", name)
			if ns != "-" {
				k.Namespace, namespaced = ns, true
				what = fmt.Sprintf("Namespace(%q).Get(%q)", ns, name)
				got, err = l.Namespace(ns).Get(name)
			} else {
				got, err = l.Get(name)
			}
			wantP, wantOutcome := m.get(k, namespaced)
			outcome := ""
			switch {
			case err == nil:
			case errors.Is(err, cache.ErrWrongScope):
				outcome = "wrong scope"
			case apierrors.IsNotFound(err):
				outcome = "NotFound"
				if msg := fmt.Sprintf("%s %q not found", m.resource, name); err.Error() != msg {
					s.fatalf("%s error %q, want %q", what, err, msg)
				}
			default:
				s.fatalf("%s: unexpected error %v", what, err)
			}
			if outcome != wantOutcome || got != wantP {
				s.fatalf("%s = %s, %v; want %s, %s (scope %v)", what, podDesc(got), err, podDesc(wantP), wantOutcome, m.scopeNow())
			}
		}
	}
}

// TestWriterAgainstModel runs seeded random scripts. A failure names the
// seed and the operation; replay one with -run 'TestWriterAgainstModel/seed=N'.
func TestWriterAgainstModel(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5}
	opsPerSeed := 2000
	if testing.Short() {
		opsPerSeed = 300
	}
	total := 0
	stats := map[string]int{}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("seed %d: replay with -run 'TestWriterAgainstModel/seed=%d$'", seed, seed)
			s := newScript(t, randSource{rand.New(rand.NewPCG(seed, seed*0x9e3779b97f4a7c15))})
			s.stats = stats
			s.check(nil)
			for range opsPerSeed {
				s.check(s.step())
			}
			total += s.ops
		})
	}
	t.Logf("ran %d operations against the model, all state compared after each", total)
	for _, k := range slices.Sorted(maps.Keys(stats)) {
		t.Logf("  %s: %d", k, stats[k])
	}
	// Every kind of outcome happened, or the scripts test less than they
	// seem to.
	for _, want := range []string{
		"Apply: ok", "Apply: boom", "Apply: cache: index function panicked", "Apply: cache: nil object",
		"Apply: cache: object has no name", "Prepare: ok", "Prepare: boom", "Replace: ok", "Replace: boom",
		"AddIndexers: ok over stored objects", "AddIndexers: boom", "AddIndexers: cache: index already exists",
		"NewWriter: ok", "NewWriter: cache: index already exists",
	} {
		if stats[want] == 0 {
			t.Errorf("no operation had the outcome %q", want)
		}
	}
}

// FuzzWriter decodes the input into an operation script (one byte per
// choice) and checks the cache against the model after every operation.
func FuzzWriter(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"))
	f.Add([]byte("Apply a batch, prepare, add indexes, replace, delete: \xff\xfe\x80\x40\x20\x10"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Long scripts are the job of TestWriterAgainstModel; short inputs
		// keep executions and the engine's minimization fast.
		if len(data) > 128 {
			data = data[:128]
		}
		s := newScript(t, &byteSource{b: data})
		s.check(nil)
		for !s.src.done() {
			s.check(s.step())
		}
	})
}
