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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
)

// This file and model_check_test.go check the cache against a trivially
// correct model: a map from key to object, with every index and every
// Lister query answered by brute force. Scripts of random operations run
// against both, and all observable state is compared after every
// operation.

// labelValues returns the values of the app and tier labels the pod has; a
// pod with app=db and tier=db gets a repeated value.
func labelValues(p *corev1.Pod) ([]string, error) {
	var out []string
	for _, k := range []string{"app", "tier"} {
		if v, ok := p.Labels[k]; ok {
			out = append(out, v)
		}
	}
	return out, nil
}

// panicky panics for pods annotated panic=true.
func panicky(p *corev1.Pod) ([]string, error) {
	if p.Annotations["panic"] == "true" {
		panic("index bug")
	}
	return []string{p.Namespace + "." + p.Name}, nil
}

// candidateIndexers are the index functions scripts register. The one
// named like the namespace index is always refused.
var candidateIndexers = map[string]cache.IndexFunc[*corev1.Pod]{
	"app":                byLabel("app"),
	"tier":               byLabel("tier"),
	"tags":               byTags, // multi-valued, fails for fail=true
	"labelvals":          labelValues,
	"panicky":            panicky,
	cache.NamespaceIndex: byLabel("ns"),
}

var candidateNames = slices.Sorted(maps.Keys(candidateIndexers))

var (
	modelNamespaces = []string{"", "a", "b"}
	modelNames      = []string{"p0", "p1", "p2", "p3", "p4", "p5"}
	modelLabelKeys  = []string{"app", "tier"}
	// Values queried in every index besides those the model holds.
	extraValues = []string{"zzz"}
	// Selectors for Lister queries; the first nsListerSelectors are also
	// used for every namespace.
	modelSelectors = []string{
		"",
		"app=web",
		"app in (web,db)",
		"tier=front,app in (web,a)",
		"app notin (web)",
		"!app",
		"app=web,tier!=db",
		"tier=front,app=",
		"tier in (db,front),app=db",
	}
	nsListerSelectors = 5
)

// model is the reference implementation.
type model struct {
	items     map[cache.Key]*corev1.Pod
	funcs     map[string]cache.IndexFunc[*corev1.Pod]
	labelKeys []string
	scope     cache.Scope
	resource  schema.GroupResource
	rev       uint64
}

func newModel() *model {
	return &model{
		items:    map[cache.Key]*corev1.Pod{},
		funcs:    map[string]cache.IndexFunc[*corev1.Pod]{},
		resource: schema.GroupResource{Resource: "objects"},
	}
}

// callIndex runs an index function; a panic is an error.
func callIndex(f cache.IndexFunc[*corev1.Pod], p *corev1.Pod) (vals []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			vals, err = nil, cache.ErrIndexPanic
		}
	}()
	return f(p)
}

// failure returns the sentinel the cache's error must wrap if one of funcs
// fails on p, or nil.
func failure(funcs map[string]cache.IndexFunc[*corev1.Pod], p *corev1.Pod) error {
	for _, name := range slices.Sorted(maps.Keys(funcs)) {
		if _, err := callIndex(funcs[name], p); err != nil {
			switch {
			case errors.Is(err, errBoom):
				return errBoom
			case errors.Is(err, cache.ErrIndexPanic):
				return cache.ErrIndexPanic
			}
			return err
		}
	}
	return nil
}

// keyErr is the error for an object that cannot be keyed, or nil.
func keyErr(p *corev1.Pod) error {
	switch {
	case p == nil:
		return cache.ErrNilObject
	case p.Name == "":
		return cache.ErrNoName
	}
	return nil
}

func (m *model) prepare(p *corev1.Pod) error {
	if err := keyErr(p); err != nil {
		return err
	}
	return failure(m.funcs, p)
}

// outcome is what Apply reports of one change.
type outcome struct {
	refused bool
	prev    *corev1.Pod
	existed bool
}

// write makes changes to items as Apply does, returning the sentinels the
// error must wrap and each change's outcome.
func (m *model) write(items map[cache.Key]*corev1.Pod, changes []podChange) ([]error, []outcome) {
	var errs []error
	outs := make([]outcome, len(changes))
	for i, ch := range changes {
		k := ch.Key
		if ch.Delete {
			outs[i].prev, outs[i].existed = items[k]
			delete(items, k)
			continue
		}
		p := ch.Object
		if p == nil || (k == cache.Key{} && p.Name == "") {
			errs = append(errs, keyErr(p))
			outs[i].refused = true
			continue
		}
		if k == (cache.Key{}) {
			k = cache.KeyOf(p)
		}
		if err := failure(m.funcs, p); err != nil {
			errs = append(errs, err) // stored, left out of that index
		}
		outs[i].prev, outs[i].existed = items[k]
		items[k] = p
	}
	m.rev++
	return errs, outs
}

func (m *model) apply(changes []podChange) ([]error, []outcome) {
	return m.write(m.items, changes)
}

func (m *model) replace(es []podEntry) []error {
	changes := make([]podChange, len(es))
	for i, e := range es {
		changes[i].Entry = e
	}
	m.items = map[cache.Key]*corev1.Pod{}
	errs, _ := m.write(m.items, changes)
	return errs
}

// addIndexers returns the errors AddIndexers may return, any one of them:
// which stored object it finds failing first is not defined.
func (m *model) addIndexers(add map[string]cache.IndexFunc[*corev1.Pod]) []error {
	for name := range add {
		if _, ok := m.funcs[name]; ok || name == cache.NamespaceIndex {
			return []error{cache.ErrIndexExists}
		}
	}
	var errs []error
	for _, p := range m.items {
		if err := failure(add, p); err != nil && !slices.Contains(errs, err) {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		maps.Copy(m.funcs, add)
	}
	return errs
}

func (m *model) hasIndex(name string) bool {
	_, ok := m.funcs[name]
	return ok || name == cache.NamespaceIndex
}

// valuesOf is the set of values p is indexed under in the index called
// name: none if the index function fails on it.
func (m *model) valuesOf(name string, p *corev1.Pod) []string {
	if name == cache.NamespaceIndex {
		return []string{p.Namespace}
	}
	vals, err := callIndex(m.funcs[name], p)
	if err != nil {
		return nil
	}
	return vals
}

func (m *model) list(ns string, scoped bool, sel labels.Selector) []*corev1.Pod {
	out := []*corev1.Pod{}
	for _, p := range m.items {
		if (!scoped || p.Namespace == ns) && sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out
}

// scopeNow is the declared scope, else the one the objects show.
func (m *model) scopeNow() cache.Scope {
	if m.scope != cache.ScopeUnknown {
		return m.scope
	}
	cluster, namespaced := false, false
	for k := range m.items {
		if k.Namespace == "" {
			cluster = true
		} else {
			namespaced = true
		}
	}
	switch {
	case cluster && !namespaced:
		return cache.ScopeCluster
	case namespaced && !cluster:
		return cache.ScopeNamespaced
	}
	return cache.ScopeUnknown
}

// get is what a Lister get answers: the object, or "wrong scope" or
// "NotFound".
func (m *model) get(k cache.Key, namespaced bool) (*corev1.Pod, string) {
	if p, ok := m.items[k]; ok {
		return p, ""
	}
	switch scope := m.scopeNow(); {
	case namespaced && scope == cache.ScopeCluster, !namespaced && scope == cache.ScopeNamespaced:
		return nil, "wrong scope"
	}
	return nil, "NotFound"
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

// script runs operations against a cache and the model.
type script struct {
	t        testing.TB
	src      source
	rv       int
	w        *podWriter
	st       *podStore
	l        *podLister
	m        *model
	ops      int
	sels     []labels.Selector
	pool     []podEntry // prepared entries, maybe before AddIndexers, maybe by an earlier writer
	lastDesc opDesc
	stats    map[string]int // outcomes per operation, when not nil
}

func newScript(t testing.TB, src source) *script {
	s := &script{t: t, src: src}
	s.sels = parseSelectors(t)
	s.reset()
	return s
}

func parseSelectors(t testing.TB) []labels.Selector {
	var out []labels.Selector
	for _, str := range modelSelectors {
		out = append(out, mustSelector(t, str))
	}
	return out
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
	switch s.src.intn(20) {
	case 0, 1:
		withAnn(p, "fail", "true")
	case 2:
		withAnn(p, "panic", "true")
	}
	return p
}

func (s *script) randomKey() cache.Key {
	return cache.Key{Namespace: s.pick(modelNamespaces), Name: s.pick(modelNames)}
}

// genEntry makes an entry to write: literal, literal with its key,
// prepared now, prepared earlier, or the stored object again.
func (s *script) genEntry() podEntry {
	s.t.Helper()
	switch r := s.src.intn(100); {
	case r < 35:
		return podEntry{Object: s.genPod()}
	case r < 45:
		// A nil object with a key is refused. (A key given with an object
		// must be the object's key, so nameless objects get none.)
		switch p := s.genPod(); {
		case p == nil:
			return podEntry{Key: s.randomKey()}
		case p.Name == "":
			return podEntry{Object: p}
		default:
			return podEntry{Key: cache.KeyOf(p), Object: p}
		}
	case r < 75:
		p := s.genPod()
		want := s.m.prepare(p)
		e, err := s.w.Prepare(p)
		s.checkErr("Prepare", []error{want}, err)
		if err != nil {
			return podEntry{Object: p} // then Apply gets to refuse it
		}
		if e.Key != cache.KeyOf(p) || e.Object != p {
			s.t.Fatalf("op %d: Prepare(%s) = entry %v, %s", s.ops, podDesc(p), e.Key, id(e.Object))
		}
		s.pool = append(s.pool, e)
		if len(s.pool) > 16 {
			s.pool = s.pool[1:]
		}
		return e
	case r < 88 && len(s.pool) > 0:
		return s.pool[s.src.intn(len(s.pool))]
	default:
		keys := slices.SortedFunc(maps.Keys(s.m.items), compareKeys)
		if len(keys) == 0 {
			return podEntry{Object: s.genPod()}
		}
		k := keys[s.src.intn(len(keys))]
		return podEntry{Key: k, Object: s.m.items[k]}
	}
}

func (s *script) genChange() podChange {
	if s.src.intn(5) == 0 {
		return del(s.randomKey())
	}
	return podChange{Entry: s.genEntry()}
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

// reset starts over with a new, empty cache with random options. Prepared
// entries of the old one stay in the pool.
func (s *script) reset() {
	s.t.Helper()
	initial := map[string]cache.IndexFunc[*corev1.Pod]{}
	if s.src.intn(2) == 0 {
		initial = s.pickIndexers()
	}
	var labelKeys []string
	for _, k := range modelLabelKeys {
		if s.src.intn(2) == 0 {
			labelKeys = append(labelKeys, k)
		}
	}
	scope := cache.Scope(s.src.intn(3))
	resource := schema.GroupResource{}
	if s.src.intn(2) == 0 {
		resource = podsResource
	}
	s.lastDesc = opDesc{op: "reset", arg: fmt.Sprintf("indexers=%v, labels=%v, scope=%v, resource=%v",
		slices.Sorted(maps.Keys(initial)), labelKeys, scope, resource)}
	m := newModel()
	m.labelKeys, m.scope = labelKeys, scope
	if !resource.Empty() {
		m.resource = resource
	}
	wantErrs := m.addIndexers(initial)
	opts := podOptions{Indexers: initial, LabelIndexes: labelKeys, Scope: scope, Resource: resource}
	w, err := cache.NewWriter(opts)
	s.checkErr("NewWriter", wantErrs, err)
	if err != nil {
		// Retry without initial indexers.
		opts.Indexers = nil
		w = mustWriter(s.t, opts)
	}
	s.w, s.st, s.l, s.m = w, w.Store(), w.Store().Lister(), m
}

// checkErr fails unless got wraps every error of want, or is nil when want
// holds no error.
func (s *script) checkErr(what string, want []error, got error) {
	s.t.Helper()
	want = slices.DeleteFunc(slices.Clone(want), func(err error) bool { return err == nil })
	if s.stats != nil {
		outcome := "ok"
		if len(want) > 0 {
			var names []string
			for _, err := range want {
				names = append(names, err.Error())
			}
			slices.Sort(names)
			outcome = strings.Join(slices.Compact(names), " + ")
		}
		if what == "AddIndexers" && len(want) == 0 && len(s.m.items) > 0 {
			outcome += " over stored objects"
		}
		s.stats[what+": "+outcome]++
	}
	if len(want) == 0 && got != nil {
		s.t.Fatalf("op %d %s: %s: unexpected error: %v", s.ops, s.lastDesc, what, got)
	}
	if len(want) > 0 && got == nil {
		s.t.Fatalf("op %d %s: %s: no error, want errors.Is %v", s.ops, s.lastDesc, what, want)
	}
	for _, err := range want {
		if !errors.Is(got, err) {
			s.t.Fatalf("op %d %s: %s: error = %v, want errors.Is %v", s.ops, s.lastDesc, what, got, err)
		}
	}
}

// opDesc describes an operation for failure messages; it is formatted only
// when a check fails.
type opDesc struct {
	op      string
	changes []podChange
	arg     any
}

func (d opDesc) String() string {
	var parts []string
	for _, ch := range d.changes {
		switch {
		case ch.Delete:
			parts = append(parts, "delete "+ch.Key.String())
		case ch.Key != (cache.Key{}):
			parts = append(parts, ch.Key.String()+": "+podDesc(ch.Object))
		default:
			parts = append(parts, podDesc(ch.Object))
		}
	}
	if d.arg != nil {
		parts = append(parts, fmt.Sprint(d.arg))
	}
	return d.op + "(" + strings.Join(parts, ", ") + ")"
}

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
	case op < 70:
		changes := make([]podChange, s.src.intn(5))
		for i := range changes {
			changes[i] = s.genChange()
		}
		s.lastDesc = opDesc{op: "Apply", changes: slices.Clone(changes)}
		wantErrs, outs := s.m.apply(changes)
		rev, err := s.w.Apply(changes)
		s.checkErr("Apply", wantErrs, err)
		s.sameRev("Apply", rev)
		for i, ch := range changes {
			if !outs[i].refused && (ch.Prev != outs[i].prev || ch.Existed != outs[i].existed) {
				s.t.Fatalf("op %d %s: change %d: Prev, Existed = %s, %v; want %s, %v",
					s.ops, s.lastDesc, i, podDesc(ch.Prev), ch.Existed, podDesc(outs[i].prev), outs[i].existed)
			}
		}
		for _, ch := range changes {
			if !ch.Delete {
				return ch.Object
			}
		}
		return nil
	case op < 80:
		es := make([]podEntry, s.src.intn(10))
		for i := range es {
			es[i] = s.genEntry()
		}
		changes := make([]podChange, len(es))
		for i, e := range es {
			changes[i].Entry = e
		}
		s.lastDesc = opDesc{op: "Replace", changes: changes}
		wantErrs := s.m.replace(es)
		rev, err := s.w.Replace(es)
		s.checkErr("Replace", wantErrs, err)
		s.sameRev("Replace", rev)
		if len(es) > 0 {
			return es[0].Object
		}
		return nil
	case op < 96:
		add := s.pickIndexers()
		s.lastDesc = opDesc{op: "AddIndexers", arg: slices.Sorted(maps.Keys(add))}
		wantErrs := s.m.addIndexers(add)
		err := s.w.AddIndexers(add)
		if len(wantErrs) > 1 {
			// Any one will do.
			all := slices.Clone(wantErrs)
			wantErrs = slices.DeleteFunc(wantErrs, func(e error) bool { return !errors.Is(err, e) })
			if len(wantErrs) == 0 {
				s.t.Fatalf("op %d %s: AddIndexers: error = %v, want one of %v", s.ops, s.lastDesc, err, all)
			}
		}
		s.checkErr("AddIndexers", wantErrs, err)
		return nil
	default:
		s.reset()
		return nil
	}
}

func (s *script) sameRev(what string, got uint64) {
	s.t.Helper()
	if got != s.m.rev {
		s.t.Fatalf("op %d %s: %s returned revision %d, want %d", s.ops, s.lastDesc, what, got, s.m.rev)
	}
}
