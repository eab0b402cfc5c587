package cache_test

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
)

type (
	podWriter  = cache.Writer[*corev1.Pod]
	podStore   = cache.Store[*corev1.Pod]
	podLister  = cache.Lister[*corev1.Pod]
	podChange  = cache.Change[*corev1.Pod]
	podEntry   = cache.Entry[*corev1.Pod]
	podOptions = cache.Options[*corev1.Pod]
	podIndexes = cache.Indexers[*corev1.Pod]
)

var podsResource = schema.GroupResource{Resource: "pods"}

// newPod returns a pod; labels are given as alternating key, value.
func newPod(ns, name, rv string, kv ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
	if len(kv) > 0 {
		p.Labels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
	return p
}

// withAnn sets annotations, given as alternating key, value.
func withAnn(p *corev1.Pod, kv ...string) *corev1.Pod {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		p.Annotations[kv[i]] = kv[i+1]
	}
	return p
}

func compareKeys(a, b cache.Key) int {
	if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

func sortedKeys(ks []cache.Key) []cache.Key {
	ks = slices.Clone(ks)
	slices.SortFunc(ks, compareKeys)
	if ks == nil {
		ks = []cache.Key{}
	}
	return ks
}

// ids names each pod by its key and resource version, sorted, so that a
// comparison also catches a stale object stored under the right key.
func ids(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		if p == nil {
			out = append(out, "<nil>")
			continue
		}
		out = append(out, id(p))
	}
	slices.Sort(out)
	return out
}

func id(p *corev1.Pod) string {
	if p == nil {
		return "<nil>"
	}
	return cache.KeyOf(p).String() + "@" + p.ResourceVersion
}

func collect[T any](seq func(func(T) bool)) []T {
	var out []T
	for v := range seq {
		out = append(out, v)
	}
	return out
}

func mustWriter(t testing.TB, opts podOptions) *podWriter {
	t.Helper()
	w, err := cache.NewWriter(opts)
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	return w
}

// put is a change that stores p as a literal entry: Apply computes its key
// and index values.
func put(p *corev1.Pod) podChange { return podChange{Entry: podEntry{Object: p}} }

// del is a change that removes k.
func del(k cache.Key) podChange { return podChange{Entry: podEntry{Key: k}, Delete: true} }

// delPod is a change that removes p's key.
func delPod(p *corev1.Pod) podChange { return del(cache.KeyOf(p)) }

// mustApply applies changes as one batch and returns them with Prev and
// Existed filled in.
func mustApply(t testing.TB, w *podWriter, changes ...podChange) []podChange {
	t.Helper()
	if _, err := w.Apply(changes); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return changes
}

// mustPut stores pods, one Apply each.
func mustPut(t testing.TB, w *podWriter, pods ...*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		if _, err := w.Apply([]podChange{put(p)}); err != nil {
			t.Fatalf("Apply(put %s): %v", id(p), err)
		}
	}
}

// entries makes literal entries of pods, for Replace.
func entries(pods ...*corev1.Pod) []podEntry {
	out := make([]podEntry, len(pods))
	for i, p := range pods {
		out[i].Object = p
	}
	return out
}

var errBoom = errors.New("boom")

// byTags is a multi-valued index function: the comma-separated values of
// the "tags" annotation. It fails for pods annotated fail=true.
func byTags(p *corev1.Pod) ([]string, error) {
	if p.Annotations["fail"] == "true" {
		return nil, fmt.Errorf("pod %s: %w", p.Name, errBoom)
	}
	t := p.Annotations["tags"]
	if t == "" {
		return nil, nil
	}
	return strings.Split(t, ","), nil
}

// byLabel is an index function over one label's value, as a custom index.
func byLabel(key string) cache.IndexFunc[*corev1.Pod] {
	return func(p *corev1.Pod) ([]string, error) {
		if v, ok := p.Labels[key]; ok {
			return []string{v}, nil
		}
		return nil, nil
	}
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

// counted wraps an index function with a call counter.
func counted(n *atomic.Int64, f cache.IndexFunc[*corev1.Pod]) cache.IndexFunc[*corev1.Pod] {
	return func(p *corev1.Pod) ([]string, error) {
		n.Add(1)
		return f(p)
	}
}

// state is every observable query result of a store over the given
// indexes, in a comparable form. Two stores with equal states answer those
// queries alike.
type state struct {
	IDs     []string
	Keys    []cache.Key
	Len     int
	AllIDs  []string
	Rev     uint64
	Indexes map[string]map[string][]string // index -> value -> ids
}

// stateOf reads st; the namespace index is always included.
func stateOf(t testing.TB, st *podStore, indexNames ...string) state {
	t.Helper()
	objs, rev := st.Snapshot()
	s := state{
		IDs:     ids(st.List()),
		Keys:    sortedKeys(st.ListKeys()),
		Len:     st.Len(),
		AllIDs:  ids(objs),
		Rev:     rev,
		Indexes: map[string]map[string][]string{},
	}
	for _, name := range append([]string{cache.NamespaceIndex}, indexNames...) {
		vals, err := st.IndexValues(name)
		if err != nil {
			s.Indexes[name] = nil // absent
			continue
		}
		byValue := map[string][]string{}
		for _, v := range vals {
			got, err := st.ByIndex(name, v)
			if err != nil {
				t.Fatalf("ByIndex(%q, %q): %v", name, v, err)
			}
			byValue[v] = ids(got)
		}
		s.Indexes[name] = byValue
	}
	return s
}

func mustSelector(t testing.TB, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatalf("labels.Parse(%q): %v", s, err)
	}
	return sel
}

// wantErrIs fails t unless err wraps want, or is nil when want is nil.
func wantErrIs(t testing.TB, what string, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("%s: unexpected error: %v", what, err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("%s: error = %v, want errors.Is %v", what, err, want)
	}
}
