package cache_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/typedinformer/informer/cache"
)

// This file checks the Indexer and Lister against a trivially correct model:
// a map from key to object, with every index and every Lister query answered
// by brute force. Scripts of random operations run against both, and all
// observable state is compared after every operation.

// labelValues returns the values of the app and tier labels the pod has; a
// pod with app=db and tier=db gets a repeated value.
func labelValues(p *corev1.Pod) ([]string, error) {
	if p == nil {
		return nil, cache.ErrNilObject
	}
	var out []string
	for _, k := range []string{"app", "tier"} {
		if v, ok := p.Labels[k]; ok {
			out = append(out, v)
		}
	}
	return out, nil
}

// candidateIndexers are the index functions scripts register.
var candidateIndexers = map[string]cache.IndexFunc[*corev1.Pod]{
	cache.LabelIndexName("app"):  cache.IndexByLabel[*corev1.Pod]("app"),
	cache.LabelIndexName("tier"): cache.IndexByLabel[*corev1.Pod]("tier"),
	"tags":                       byTags, // multi-valued, fails for fail=true
	"labelvals":                  labelValues,
	cache.NamespaceIndex:         cache.IndexByNamespace[*corev1.Pod],
}

var candidateNames = slices.Sorted(maps.Keys(candidateIndexers))

var (
	modelNamespaces = []string{"", "a", "b"}
	modelNames      = []string{"p0", "p1", "p2", "p3", "p4", "p5"}
	// Values queried in every index besides those the model holds.
	extraValues = []string{"zzz"}
	// Selectors for Lister queries; the first nsListerSelectors are also
	// used for every namespace.
	modelSelectors = []string{
		"",
		"app=web",
		"app in (web,db)",
		"app notin (web)",
		"!app",
		"app=web,tier!=db",
		"tier=front,app=",
	}
	nsListerSelectors = 4
)

// model is the reference implementation.
type model struct {
	nsIndex bool
	items   map[cache.Key]*corev1.Pod
	funcs   map[string]cache.IndexFunc[*corev1.Pod]
}

func newModel(nsIndex bool) *model {
	return &model{nsIndex: nsIndex, items: map[cache.Key]*corev1.Pod{}, funcs: map[string]cache.IndexFunc[*corev1.Pod]{}}
}

func modelKey(p *corev1.Pod) (cache.Key, error) {
	if p == nil {
		return cache.Key{}, cache.ErrNilObject
	}
	if p.Name == "" {
		return cache.Key{}, cache.ErrNoName
	}
	return cache.Key{Namespace: p.Namespace, Name: p.Name}, nil
}

// indexNames are the names GetIndexers should report.
func (m *model) indexNames() []string {
	names := slices.Collect(maps.Keys(m.funcs))
	if m.nsIndex {
		names = append(names, cache.NamespaceIndex)
	}
	slices.Sort(names)
	return names
}

func (m *model) hasIndex(name string) bool {
	_, ok := m.funcs[name]
	return ok || (name == cache.NamespaceIndex && m.nsIndex)
}

// valuesOf computes the values of p in the index called name.
func (m *model) valuesOf(name string, p *corev1.Pod) ([]string, error) {
	if name == cache.NamespaceIndex && m.nsIndex {
		return []string{p.Namespace}, nil
	}
	return m.funcs[name](p)
}

func indexable(funcs map[string]cache.IndexFunc[*corev1.Pod], p *corev1.Pod) error {
	for _, f := range funcs {
		if _, err := f(p); err != nil {
			if errors.Is(err, errBoom) {
				return errBoom // the sentinel the Indexer's error must wrap
			}
			return err
		}
	}
	return nil
}

func (m *model) add(p *corev1.Pod) error {
	k, err := modelKey(p)
	if err != nil {
		return err
	}
	if err := indexable(m.funcs, p); err != nil {
		return err
	}
	m.items[k] = p
	return nil
}

func (m *model) delete(p *corev1.Pod) error {
	k, err := modelKey(p)
	if err != nil {
		return err
	}
	delete(m.items, k)
	return nil
}

func (m *model) replace(list []*corev1.Pod) error {
	items := map[cache.Key]*corev1.Pod{}
	for _, p := range list {
		k, err := modelKey(p)
		if err != nil {
			return err
		}
		items[k] = p
	}
	for _, p := range items {
		if err := indexable(m.funcs, p); err != nil {
			return err
		}
	}
	m.items = items
	return nil
}

func (m *model) addIndexers(add map[string]cache.IndexFunc[*corev1.Pod]) error {
	for name := range add {
		if m.hasIndex(name) {
			return cache.ErrIndexExists
		}
	}
	for _, p := range m.items {
		if err := indexable(add, p); err != nil {
			return err
		}
	}
	maps.Copy(m.funcs, add)
	return nil
}

// index is Indexer.Index: the objects sharing a value with probe.
func (m *model) index(name string, probe *corev1.Pod) ([]*corev1.Pod, error) {
	vals, err := m.valuesOf(name, probe)
	if err != nil {
		return nil, err
	}
	out := []*corev1.Pod{}
	for _, p := range m.items {
		pv, _ := m.valuesOf(name, p)
		for _, v := range vals {
			if slices.Contains(pv, v) {
				out = append(out, p)
				break
			}
		}
	}
	return out, nil
}

func (m *model) list(ns string, scoped bool, sel labels.Selector) []*corev1.Pod {
	out := []*corev1.Pod{}
	if sel == nil {
		return out
	}
	for _, p := range m.items {
		if (!scoped || p.Namespace == ns) && sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out
}

// source supplies the choices of a script: a seeded generator, or fuzz
// bytes.
type source interface {
	intn(n int) int
	done() bool
}

type randSource struct{ r *rand.Rand }

func (s randSource) intn(n int) int { return s.r.IntN(n) }
func (s randSource) done() bool     { return false }

// byteSource reads one byte per choice and answers 0 once exhausted.
type byteSource struct {
	b []byte
	i int
}

func (s *byteSource) intn(n int) int {
	if s.i >= len(s.b) {
		return 0
	}
	v := int(s.b[s.i]) % n
	s.i++
	return v
}

func (s *byteSource) done() bool { return s.i >= len(s.b) }

// script runs operations against an Indexer and the model.
type script struct {
	t        testing.TB
	src      source
	rv       int
	x        *podIndexer
	l        *cache.Lister[*corev1.Pod]
	m        *model
	ops      int
	sels     []labels.Selector
	lastDesc opDesc
	stats    map[string]int // outcomes per operation, when not nil
}

func newScript(t testing.TB, src source) *script {
	s := &script{t: t, src: src}
	for _, str := range modelSelectors {
		s.sels = append(s.sels, mustSelector(t, str))
	}
	s.sels = append(s.sels, nil)
	s.reset()
	return s
}

func (s *script) pick(list []string) string { return list[s.src.intn(len(list))] }

// genPod makes a pod with a fresh resource version, so that every stored
// version can be told apart. Rarely it is nil or nameless.
func (s *script) genPod() *corev1.Pod {
	switch s.src.intn(64) {
	case 0:
		return nil
	case 1:
		s.rv++
		return newPod(s.pick(modelNamespaces), "", strconv.Itoa(s.rv))
	}
	s.rv++
	var kv []string
	if app := s.pick([]string{"-", "web", "db", "a", ""}); app != "-" {
		kv = append(kv, "app", app)
	}
	if tier := s.pick([]string{"-", "front", "db"}); tier != "-" {
		kv = append(kv, "tier", tier)
	}
	p := newPod(s.pick(modelNamespaces), s.pick(modelNames), strconv.Itoa(s.rv), kv...)
	if tags := s.pick([]string{"-", "x", "x,y", "y,z,y", ""}); tags != "-" {
		withAnn(p, "tags", tags)
	}
	if s.src.intn(10) == 0 {
		withAnn(p, "fail", "true")
	}
	return p
}

// pickIndexers returns one to three candidate index functions.
func (s *script) pickIndexers() map[string]cache.IndexFunc[*corev1.Pod] {
	out := map[string]cache.IndexFunc[*corev1.Pod]{}
	for range 1 + s.src.intn(3) {
		name := s.pick(candidateNames)
		out[name] = candidateIndexers[name]
	}
	return out
}

// reset starts over with a new, empty Indexer with random options.
func (s *script) reset() {
	nsIndex := s.src.intn(4) != 0
	initial := map[string]cache.IndexFunc[*corev1.Pod]{}
	if s.src.intn(2) == 0 {
		initial = s.pickIndexers()
	}
	s.lastDesc = opDesc{op: "reset", arg: fmt.Sprintf("nsIndex=%v, indexers=%v", nsIndex, slices.Sorted(maps.Keys(initial)))}
	m := newModel(nsIndex)
	wantErr := m.addIndexers(initial)
	x, err := cache.NewIndexer(cache.IndexerOptions[*corev1.Pod]{NoNamespaceIndex: !nsIndex, Indexers: initial})
	s.checkErr("NewIndexer", wantErr, err)
	if err != nil {
		// Retry without initial indexers.
		m = newModel(nsIndex)
		x = mustIndexer(s.t, cache.IndexerOptions[*corev1.Pod]{NoNamespaceIndex: !nsIndex})
	}
	s.x, s.m, s.l = x, m, cache.NewLister(x, podsResource)
}

func (s *script) checkErr(what string, want, got error) {
	s.t.Helper()
	if s.stats != nil {
		outcome := "ok"
		switch {
		case errors.Is(want, errBoom):
			outcome = "index func failed"
		case want != nil:
			outcome = want.Error()
		}
		if what == "AddIndexers" && want == nil && len(s.m.items) > 0 {
			outcome += " over stored objects"
		}
		s.stats[what+": "+outcome]++
	}
	if want == nil && got != nil {
		s.t.Fatalf("op %d %s: %s: unexpected error: %v", s.ops, s.lastDesc, what, got)
	}
	if want != nil && !errors.Is(got, want) {
		s.t.Fatalf("op %d %s: %s: error = %v, want errors.Is %v", s.ops, s.lastDesc, what, got, want)
	}
}

// opDesc describes an operation for failure messages; it is formatted only
// when a check fails.
type opDesc struct {
	op   string
	pods []*corev1.Pod
	arg  any
}

func (d opDesc) String() string {
	var parts []string
	for _, p := range d.pods {
		parts = append(parts, podDesc(p))
	}
	if d.arg != nil {
		parts = append(parts, fmt.Sprint(d.arg))
	}
	return d.op + "(" + strings.Join(parts, ", ") + ")"
}

// lazyPod formats a pod with podDesc only when printed.
type lazyPod struct{ p *corev1.Pod }

func (l lazyPod) String() string { return podDesc(l.p) }

func podDesc(p *corev1.Pod) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s%v%v", id(p), p.Labels, p.Annotations)
}

// step runs one random operation on both and returns a pod to probe
// afterwards (maybe nil).
func (s *script) step() *corev1.Pod {
	s.t.Helper()
	s.ops++
	switch op := s.src.intn(100); {
	case op < 30:
		p := s.genPod()
		s.lastDesc = opDesc{op: "Add", pods: []*corev1.Pod{p}}
		s.checkErr("Add", s.m.add(p), s.x.Add(p))
		return p
	case op < 50:
		p := s.genPod()
		s.lastDesc = opDesc{op: "Update", pods: []*corev1.Pod{p}}
		s.checkErr("Update", s.m.add(p), s.x.Update(p))
		return p
	case op < 55:
		p := s.genPod()
		s.lastDesc = opDesc{op: "Set", pods: []*corev1.Pod{p}}
		if p == nil || p.Name == "" {
			return nil
		}
		s.checkErr("Set", s.m.add(p), s.x.Set(cache.KeyOf(p), p))
		return p
	case op < 75:
		p := s.genPod()
		s.lastDesc = opDesc{op: "Delete", pods: []*corev1.Pod{p}}
		s.checkErr("Delete", s.m.delete(p), s.x.Delete(p))
		return p
	case op < 80:
		k := cache.Key{Namespace: s.pick(modelNamespaces), Name: s.pick(modelNames)}
		s.lastDesc = opDesc{op: "DeleteKey", arg: k}
		delete(s.m.items, k)
		s.x.DeleteKey(k)
		return nil
	case op < 88:
		list := make([]*corev1.Pod, s.src.intn(10))
		for i := range list {
			list[i] = s.genPod()
		}
		s.lastDesc = opDesc{op: "Replace", pods: list}
		s.checkErr("Replace", s.m.replace(list), s.x.Replace(list, strconv.Itoa(s.rv)))
		if len(list) > 0 {
			return list[0]
		}
		return nil
	case op < 96:
		add := s.pickIndexers()
		s.lastDesc = opDesc{op: "AddIndexers", arg: slices.Sorted(maps.Keys(add))}
		s.checkErr("AddIndexers", s.m.addIndexers(add), s.x.AddIndexers(add))
		return nil
	case op < 98:
		s.lastDesc = opDesc{op: "Resync"}
		s.checkErr("Resync", nil, s.x.Resync())
		return nil
	default:
		s.reset()
		return nil
	}
}

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

func (s *script) diff(what string, want, got any) {
	if want == got {
		return
	}
	s.t.Helper()
	s.t.Fatalf("after op %d %s: %s (-want +got):\n%s", s.ops, s.lastDesc, what, cmp.Diff(want, got))
}

// check compares all observable state; probe, if not nil, is used for Get
// and Index queries.
func (s *script) check(probe *corev1.Pod) {
	s.t.Helper()
	x, m, l := s.x, s.m, s.l
	want := slices.Collect(maps.Values(m.items))
	samePods(s, want, x.List(), "List")
	samePods(s, want, collect(x.Values()), "Values")
	s.diff("Len", len(m.items), x.Len())
	wantKeys := sortedKeys(slices.Collect(maps.Keys(m.items)))
	same(s, wantKeys, sortedKeys(x.ListKeys()), "ListKeys")
	same(s, wantKeys, sortedKeys(collect(x.Keys())), "Keys")
	var allIDs []*corev1.Pod
	for k, p := range x.All() {
		if k != cache.KeyOf(p) {
			s.t.Fatalf("after op %d %s: All yielded %v with %s", s.ops, s.lastDesc, k, id(p))
		}
		allIDs = append(allIDs, p)
	}
	samePods(s, want, allIDs, "All")

	// Every key of the domain, present or not.
	for _, ns := range modelNamespaces {
		for _, name := range modelNames {
			k := cache.Key{Namespace: ns, Name: name}
			got, ok, _ := x.GetByKey(k)
			wantP, wantOK := m.items[k]
			if ok != wantOK || got != wantP {
				s.t.Fatalf("after op %d %s: GetByKey(%v) = %s, %v; want %s, %v", s.ops, s.lastDesc, k, podDesc(got), ok, podDesc(wantP), wantOK)
			}
		}
	}

	// Indexes.
	same(s, m.indexNames(), slices.Sorted(maps.Keys(x.GetIndexers())), "GetIndexers names")
	for _, name := range candidateNames {
		s.diff("HasIndex("+name+")", m.hasIndex(name), x.HasIndex(name))
		if !m.hasIndex(name) {
			if _, err := x.ByIndex(name, "x"); !errors.Is(err, cache.ErrNoIndex) {
				s.t.Fatalf("after op %d %s: ByIndex(%q) error = %v, want ErrNoIndex", s.ops, s.lastDesc, name, err)
			}
			if _, err := x.IndexKeys(name, "x"); !errors.Is(err, cache.ErrNoIndex) {
				s.t.Fatalf("after op %d %s: IndexKeys(%q) error = %v, want ErrNoIndex", s.ops, s.lastDesc, name, err)
			}
			if got := x.ListIndexFuncValues(name); got != nil {
				s.t.Fatalf("after op %d %s: ListIndexFuncValues(%q) = %v, want nil", s.ops, s.lastDesc, name, got)
			}
		}
	}
	for _, name := range m.indexNames() {
		// Each object's values, computed once.
		objVals := make(map[*corev1.Pod][]string, len(m.items))
		for _, p := range m.items {
			v, err := m.valuesOf(name, p)
			if err != nil {
				s.t.Fatalf("model: stored object %s fails index %q: %v", id(p), name, err)
			}
			objVals[p] = v
		}
		valSet := map[string]bool{}
		for _, vs := range objVals {
			for _, v := range vs {
				valSet[v] = true
			}
		}
		vals := append([]string{}, slices.Sorted(maps.Keys(valSet))...)
		same(s, vals, x.ListIndexFuncValues(name), "ListIndexFuncValues(%q)", name)
		for _, v := range append(vals, extraValues...) {
			wantObjs := []*corev1.Pod{}
			wantK := []cache.Key{}
			for p, vs := range objVals {
				if slices.Contains(vs, v) {
					wantObjs = append(wantObjs, p)
					wantK = append(wantK, cache.KeyOf(p))
				}
			}
			got, err := x.ByIndex(name, v)
			if err != nil {
				s.t.Fatalf("after op %d %s: ByIndex(%q, %q): %v", s.ops, s.lastDesc, name, v, err)
			}
			samePods(s, wantObjs, got, "ByIndex(%q, %q)", name, v)
			keys, err := x.IndexKeys(name, v)
			if err != nil {
				s.t.Fatalf("after op %d %s: IndexKeys(%q, %q): %v", s.ops, s.lastDesc, name, v, err)
			}
			same(s, sortedKeys(wantK), sortedKeys(keys), "IndexKeys(%q, %q)", name, v)
			samePods(s, wantObjs, collect(x.ByIndexValues(name, v)), "ByIndexValues(%q, %q)", name, v)
		}
		if probe != nil {
			wantObjs, wantErr := m.index(name, probe)
			got, err := x.Index(name, probe)
			if (wantErr != nil) != (err != nil) {
				s.t.Fatalf("after op %d %s: Index(%q, %s) error = %v, want %v", s.ops, s.lastDesc, name, podDesc(probe), err, wantErr)
			}
			if err == nil {
				samePods(s, wantObjs, got, "Index(%q, %s)", name, lazyPod{probe})
			}
		}
	}

	// Lister.
	for i, sel := range s.sels {
		selName := append(modelSelectors, "<nil>")[i]
		wantL := m.list("", false, sel)
		got, err := l.List(sel)
		if err != nil {
			s.t.Fatalf("after op %d %s: Lister.List(%q): %v", s.ops, s.lastDesc, selName, err)
		}
		samePods(s, wantL, got, "Lister.List(%q)", selName)
		samePods(s, wantL, collect(l.Seq(sel)), "Lister.Seq(%q)", selName)
		if i >= nsListerSelectors {
			continue
		}
		for _, ns := range modelNamespaces {
			wantL := m.list(ns, true, sel)
			got, err := l.Namespace(ns).List(sel)
			if err != nil {
				s.t.Fatalf("after op %d %s: Namespace(%q).List(%q): %v", s.ops, s.lastDesc, ns, selName, err)
			}
			samePods(s, wantL, got, "Namespace(%q).List(%q)", ns, selName)
			samePods(s, wantL, collect(l.Namespace(ns).Seq(sel)), "Namespace(%q).Seq(%q)", ns, selName)
		}
	}
	if probe != nil && probe.Name != "" {
		k := cache.KeyOf(probe)
		var got *corev1.Pod
		var err error
		if k.Namespace == "" {
			got, err = l.Get(k.Name)
		} else {
			got, err = l.Namespace(k.Namespace).Get(k.Name)
		}
		if wantP, ok := m.items[k]; ok {
			if err != nil || got != wantP {
				s.t.Fatalf("after op %d %s: Lister get %v = %s, %v; want %s", s.ops, s.lastDesc, k, podDesc(got), err, id(wantP))
			}
		} else if !apierrors.IsNotFound(err) {
			s.t.Fatalf("after op %d %s: Lister get %v error = %v, want NotFound", s.ops, s.lastDesc, k, err)
		}
		gotG, exists, err := x.Get(probe)
		wantP, wantOK := m.items[k]
		if err != nil || exists != wantOK || gotG != wantP {
			s.t.Fatalf("after op %d %s: Get(%s) = %s, %v, %v; want %s, %v", s.ops, s.lastDesc, podDesc(probe), podDesc(gotG), exists, err, podDesc(wantP), wantOK)
		}
	}
}

func TestIndexerAgainstModel(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5}
	opsPerSeed := 2000
	if testing.Short() {
		opsPerSeed = 300
	}
	total := 0
	stats := map[string]int{}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
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
}

// FuzzIndexer decodes the input into an operation script (one byte per
// choice) and checks the Indexer against the model after every operation.
func FuzzIndexer(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"))
	f.Add([]byte("Add a pod, index it, replace, delete: \xff\xfe\x80\x40\x20\x10"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Long scripts are the job of TestIndexerAgainstModel; short
		// inputs keep executions and the engine's minimization fast.
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
