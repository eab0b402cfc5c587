package cache

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

var tableSeed = flag.Uint64("table.seed", 0, "seed of the table tests; 0 picks one")

func seedOf(t *testing.T) uint64 {
	t.Helper()
	seed := *tableSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d (rerun with -args -table.seed=%d)", seed, seed)
		}
	})
	return seed
}

func labeledPod(ns, name string, ls map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: ls}}
}

// randomLabels returns one of a few label sets, as a new map each time, so
// that equal labels come in different maps, as decoded objects bring them.
func randomLabels(r *rand.Rand) map[string]string {
	switch r.IntN(6) {
	case 0:
		return nil
	case 1:
		return map[string]string{}
	}
	m := map[string]string{"app": fmt.Sprintf("app-%d", r.IntN(3))}
	if r.IntN(2) == 0 {
		m["tier"] = "web"
	}
	return m
}

// checkTable compares the table's slots and label indexes with the stored
// objects: each slot's bloom summarizes its object's labels, the count is
// right, and each label index holds, under each value, exactly the stored
// objects with that value, the stored object itself.
func checkTable(t *testing.T, c *core[*corev1.Pod]) {
	t.Helper()
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.tab.labeled {
		t.Fatal("table not labeled after a List that matches labels")
	}
	n := 0
	want := make([]map[string]map[Key]*corev1.Pod, len(c.labelKeys))
	for i := range want {
		want[i] = map[string]map[Key]*corev1.Pod{}
	}
	for ns, m := range c.tab.ns {
		for name, s := range m {
			n++
			l := s.obj.GetLabels()
			if b := bloomOf(l); s.bloom != b {
				t.Errorf("%s: labels %v, bloom %x, want %x", name, l, s.bloom, b)
			}
			for i, lk := range c.labelKeys {
				if v, ok := l[lk]; ok {
					if want[i][v] == nil {
						want[i][v] = map[Key]*corev1.Pod{}
					}
					want[i][v][Key{Namespace: ns, Name: name}] = s.obj
				}
			}
		}
	}
	if n != c.tab.n {
		t.Errorf("table counts %d objects, holds %d", c.tab.n, n)
	}
	for i, lk := range c.labelKeys {
		got := map[string]map[Key]*corev1.Pod{}
		for v, p := range c.labels[i] {
			if len(p.objs) != len(p.keys) || len(p.objs) != len(p.pos) || len(p.objs) == 0 {
				t.Errorf("label index %q, value %q: %d objects, %d keys, %d positions", lk, v, len(p.objs), len(p.keys), len(p.pos))
				continue
			}
			got[v] = map[Key]*corev1.Pod{}
			for j, k := range p.keys {
				if p.pos[k] != int32(j) {
					t.Errorf("label index %q, value %q: %v at %d, position says %d", lk, v, k, j, p.pos[k])
				}
				got[v][k] = p.objs[j]
			}
		}
		if diff := cmp.Diff(want[i], got, cmp.Comparer(func(a, b *corev1.Pod) bool { return a == b })); diff != "" {
			t.Errorf("label index %q (-want +got):\n%s", lk, diff)
		}
	}
}

// TestTableFollowsWrites runs seeded random writes, relists and lists
// and checks after each step that the blooms and the label index follow
// the stored objects, and that lists agree with matching every object.
func TestTableFollowsWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(seedOf(t), 1))
	w, err := NewWriter(Options[*corev1.Pod]{LabelIndexes: []string{"tier"}})
	if err != nil {
		t.Fatal(err)
	}
	c := w.c
	sel := labels.SelectorFromSet(labels.Set{"app": "app-1"})
	names := []string{"a", "b", "c", "d", "e", "f"}
	for step := range 400 {
		switch op := r.IntN(10); {
		case op < 6:
			var changes []Change[*corev1.Pod]
			for range 1 + r.IntN(4) {
				p := labeledPod(fmt.Sprintf("ns-%d", r.IntN(2)), names[r.IntN(len(names))], randomLabels(r))
				ch := Change[*corev1.Pod]{Entry: Entry[*corev1.Pod]{Object: p}}
				if r.IntN(4) == 0 {
					ch = Change[*corev1.Pod]{Entry: Entry[*corev1.Pod]{Key: KeyOf(p)}, Delete: true}
				}
				changes = append(changes, ch)
			}
			if _, err := w.Apply(changes); err != nil {
				t.Fatal(err)
			}
		case op < 8:
			var es []Entry[*corev1.Pod]
			for range r.IntN(8) {
				p := labeledPod(fmt.Sprintf("ns-%d", r.IntN(2)), names[r.IntN(len(names))], randomLabels(r))
				es = append(es, Entry[*corev1.Pod]{Object: p})
			}
			if _, err := w.Replace(es); err != nil {
				t.Fatal(err)
			}
		default: // the same objects again: an unchanged relist
			if _, err := w.Replace(entriesOf(w.Store().List())); err != nil {
				t.Fatal(err)
			}
		}
		for _, q := range []labels.Selector{sel, mustParse(t, "tier=web,app!=app-0"), mustParse(t, "!app")} {
			got, err := w.Store().Lister().List(q)
			if err != nil {
				t.Fatal(err)
			}
			var want []*corev1.Pod
			for _, p := range w.Store().List() {
				if q.Matches(labels.Set(p.Labels)) {
					want = append(want, p)
				}
			}
			if diff := cmp.Diff(keysOf(want), keysOf(got)); diff != "" {
				t.Fatalf("step %d: List(%s) against matching every object (-want +got):\n%s", step, q, diff)
			}
		}
		checkTable(t, c)
		if t.Failed() {
			t.Fatalf("step %d", step)
		}
	}
}

// keysOf returns the sorted keys of objs.
func keysOf(objs []*corev1.Pod) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = KeyOf(o).String()
	}
	slices.Sort(out)
	return out
}

func entriesOf(objs []*corev1.Pod) []Entry[*corev1.Pod] {
	es := make([]Entry[*corev1.Pod], len(objs))
	for i, o := range objs {
		es[i] = Entry[*corev1.Pod]{Object: o}
	}
	return es
}

func mustParse(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// TestTableUnlabeledUntilListed checks that writes do not resolve label
// sets before a List needs them, that Get, exact label-index lists and
// List(Everything()) do not need them, and that the first List that
// matches labels labels the table.
func TestTableUnlabeledUntilListed(t *testing.T) {
	w, err := NewWriter(Options[*corev1.Pod]{LabelIndexes: []string{"app"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		p := labeledPod("ns", fmt.Sprintf("p%d", i), map[string]string{"app": fmt.Sprint(i % 2)})
		if _, err := w.Apply([]Change[*corev1.Pod]{{Entry: Entry[*corev1.Pod]{Object: p}}}); err != nil {
			t.Fatal(err)
		}
	}
	l := w.Store().Lister()
	for _, q := range []string{"", "app=1", "app in (0,1)"} {
		got, err := l.List(mustParse(t, q))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || w.c.tab.labeled {
			t.Fatalf("List(%q): %d objects, labeled %v; want some, and no blooms", q, len(got), w.c.tab.labeled)
		}
	}
	got, err := l.Namespace("ns").List(mustParse(t, "app!=1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || !w.c.tab.labeled {
		t.Fatalf("List(app!=1) = %d objects, labeled %v; want 5, labeled", len(got), w.c.tab.labeled)
	}
	checkTable(t, w.c)
}

// TestBloomFalsePositives lists with many Equals and In selectors over
// objects with many labels of many values, so that blooms often seem to
// hold a pair the object does not have: the lists must still be exactly
// the matching objects.
func TestBloomFalsePositives(t *testing.T) {
	r := rand.New(rand.NewPCG(seedOf(t), 3))
	w, err := NewWriter(Options[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	var es []Entry[*corev1.Pod]
	for i := range 2000 {
		l := map[string]string{}
		for range r.IntN(24) {
			l[fmt.Sprintf("k%d", r.IntN(8))] = fmt.Sprintf("v%d", r.IntN(8))
		}
		es = append(es, Entry[*corev1.Pod]{Object: labeledPod(fmt.Sprintf("ns-%d", i%2), fmt.Sprint(i), l)})
	}
	if _, err := w.Replace(es); err != nil {
		t.Fatal(err)
	}
	all := w.Store().List()
	seemed := 0 // objects whose bloom has a pair they do not have
	for range 200 {
		sel := mustParse(t, fmt.Sprintf("k%d=v%d,k%d in (v%d,v%d)", r.IntN(8), r.IntN(8), r.IntN(8), r.IntN(8), r.IntN(8)))
		reqs, _ := sel.Requirements()
		var want []*corev1.Pod
		for _, p := range all {
			if sel.Matches(labels.Set(p.Labels)) {
				want = append(want, p)
			} else if b := bloomOf(p.Labels); !reqs[0].Matches(labels.Set(p.Labels)) {
				for v := range reqs[0].Values() {
					if m := pairMask(reqs[0].Key(), v); b&m == m {
						seemed++
					}
				}
			}
		}
		got, err := w.Store().Lister().List(sel)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(keysOf(want), keysOf(got)); diff != "" {
			t.Fatalf("List(%s) against matching every object (-want +got):\n%s", sel, diff)
		}
		gotNS, err := w.Store().Lister().Namespace("ns-1").List(sel)
		if err != nil {
			t.Fatal(err)
		}
		var wantNS []*corev1.Pod
		for _, p := range want {
			if p.Namespace == "ns-1" {
				wantNS = append(wantNS, p)
			}
		}
		if diff := cmp.Diff(keysOf(wantNS), keysOf(gotNS)); diff != "" {
			t.Fatalf("Namespace(ns-1).List(%s) (-want +got):\n%s", sel, diff)
		}
	}
	if seemed == 0 {
		t.Error("no bloom seemed to hold a pair its object lacks: the test does not test false positives")
	}
	t.Logf("%d false positives", seemed)
}

// TestConcurrentQueries runs queries with different selectors at once on
// one store, with writes between them: no query's answer may depend on
// another's.
func TestConcurrentQueries(t *testing.T) {
	r := rand.New(rand.NewPCG(seedOf(t), 2))
	w, err := NewWriter(Options[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	var es []Entry[*corev1.Pod]
	for i := range 300 {
		es = append(es, Entry[*corev1.Pod]{Object: labeledPod(fmt.Sprintf("ns-%d", i%3), fmt.Sprint(i), randomLabels(r))})
	}
	if _, err := w.Replace(es); err != nil {
		t.Fatal(err)
	}
	stable := w.Store().List() // written again unchanged below: answers stay
	sels := []string{"app=app-0", "app=app-1", "app!=app-2", "tier=web", "!tier", "app"}
	want := map[string]int{}
	for _, q := range sels {
		sel := mustParse(t, q)
		for _, p := range stable {
			if sel.Matches(labels.Set(p.Labels)) {
				want[q]++
			}
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(sels))
	for _, q := range sels {
		wg.Go(func() {
			sel := mustParse(t, q)
			for range 200 {
				got, err := w.Store().Lister().List(sel)
				if err == nil && len(got) != want[q] {
					err = fmt.Errorf("List(%s) = %d objects, want %d", q, len(got), want[q])
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			if _, err := w.Replace(entriesOf(stable)); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
