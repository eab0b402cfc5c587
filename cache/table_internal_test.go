package cache

import (
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
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

// checkSets compares the table's label sets with the labels of the stored
// objects: one set per distinct non-empty labels, referenced once per
// object, and each slot holding the set of its object's labels.
func checkSets(t *testing.T, c *core[*corev1.Pod]) {
	t.Helper()
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.tab.labeled {
		t.Fatal("table not labeled after a List that matches labels")
	}
	want := map[string]int{}
	n := 0
	for _, m := range c.tab.ns {
		for name, s := range m {
			n++
			l := s.obj.GetLabels()
			if len(l) == 0 {
				if s.ls != nil {
					t.Errorf("%s: empty labels with a label set %v", name, s.ls.m)
				}
				continue
			}
			if s.ls == nil || !maps.Equal(s.ls.m, l) {
				t.Errorf("%s: labels %v, slot's set %v", name, l, s.ls)
			}
			want[labels.Set(l).String()]++
		}
	}
	if n != c.tab.n {
		t.Errorf("table counts %d objects, holds %d", c.tab.n, n)
	}
	got := map[string]int{}
	for h, first := range c.tab.sets.byHash {
		for ls := first; ls != nil; ls = ls.next {
			if ls.hash != h {
				t.Errorf("set %v under hash %x, has hash %x", ls.m, h, ls.hash)
			}
			got[labels.Set(ls.m).String()] += ls.refs
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("label set references (-want +got):\n%s", diff)
	}
}

// TestLabelSetsFollowWrites runs seeded random writes, relists and lists
// and checks after each step that the label sets are exactly those of the
// stored objects, with exact reference counts, and that lists agree with
// matching every object.
func TestLabelSetsFollowWrites(t *testing.T) {
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
			if len(got) != len(want) {
				t.Fatalf("step %d: List(%s) = %d objects, matching them one by one gives %d", step, q, len(got), len(want))
			}
		}
		checkSets(t, c)
		if t.Failed() {
			t.Fatalf("step %d", step)
		}
	}
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
			t.Fatalf("List(%q): %d objects, labeled %v; want some, and no label sets", q, len(got), w.c.tab.labeled)
		}
	}
	got, err := l.Namespace("ns").List(mustParse(t, "app!=1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || !w.c.tab.labeled {
		t.Fatalf("List(app!=1) = %d objects, labeled %v; want 5, labeled", len(got), w.c.tab.labeled)
	}
	checkSets(t, w.c)
}

// TestLabelSetChains checks release on sets that share a hash: each one
// leaves its chain, the others stay.
func TestLabelSetChains(t *testing.T) {
	for drop := range 3 {
		s := newLabelSets(0)
		sets := make([]*labelSet, 3)
		for i := range sets {
			sets[i] = &labelSet{m: map[string]string{"i": fmt.Sprint(i)}, hash: 7, refs: 1, next: s.byHash[7]}
			s.byHash[7] = sets[i]
		}
		s.release(sets[drop])
		var left []string
		for ls := s.byHash[7]; ls != nil; ls = ls.next {
			left = append(left, ls.m["i"])
		}
		want := []string{}
		for i := 2; i >= 0; i-- {
			if i != drop {
				want = append(want, fmt.Sprint(i))
			}
		}
		if diff := cmp.Diff(want, left); diff != "" {
			t.Errorf("after releasing set %d (-want +got):\n%s", drop, diff)
		}
	}
}

// TestConcurrentQueriesShareLabelSets runs queries with different
// selectors at once on one store, with writes between them: the label
// sets' memo of the last query's answer must never leak into another
// query's answer.
func TestConcurrentQueriesShareLabelSets(t *testing.T) {
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
