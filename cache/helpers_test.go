package cache_test

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
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
	return cache.KeyOf(p).String() + "@" + p.ResourceVersion
}

func collect[T any](seq func(func(T) bool)) []T {
	var out []T
	for v := range seq {
		out = append(out, v)
	}
	return out
}

func mustIndexer(t testing.TB, opts cache.IndexerOptions[*corev1.Pod]) *cache.Indexer[*corev1.Pod] {
	t.Helper()
	x, err := cache.NewIndexer(opts)
	if err != nil {
		t.Fatalf("NewIndexer: %v", err)
	}
	return x
}

func mustAdd(t testing.TB, x *cache.Indexer[*corev1.Pod], pods ...*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		if err := x.Add(p); err != nil {
			t.Fatalf("Add(%s): %v", id(p), err)
		}
	}
}

var errBoom = errors.New("boom")

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

// byTags is a multi-valued index function: the comma-separated values of
// the "tags" annotation. It fails for pods annotated fail=true.
func byTags(p *corev1.Pod) ([]string, error) {
	if p == nil {
		return nil, cache.ErrNilObject
	}
	if p.Annotations["fail"] == "true" {
		return nil, fmt.Errorf("pod %s: %w", p.Name, errBoom)
	}
	t := p.Annotations["tags"]
	if t == "" {
		return nil, nil
	}
	return strings.Split(t, ","), nil
}

// indexState is everything the queries of one index return.
type indexState struct {
	Values    []string
	ByIndex   map[string][]string
	IndexKeys map[string][]cache.Key
}

// state is every observable query result of an Indexer, in a comparable
// form. Two Indexers with equal states answer every query alike.
type state struct {
	IDs     []string
	Keys    []cache.Key
	Len     int
	AllIDs  []string
	Indexes map[string]indexState
}

func snapshotState(t testing.TB, x *cache.Indexer[*corev1.Pod]) state {
	t.Helper()
	s := state{
		IDs:     ids(x.List()),
		Keys:    sortedKeys(x.ListKeys()),
		Len:     x.Len(),
		AllIDs:  ids(collect(x.Values())),
		Indexes: map[string]indexState{},
	}
	for name := range x.GetIndexers() {
		is := indexState{
			Values:    x.ListIndexFuncValues(name),
			ByIndex:   map[string][]string{},
			IndexKeys: map[string][]cache.Key{},
		}
		for _, v := range is.Values {
			objs, err := x.ByIndex(name, v)
			if err != nil {
				t.Fatalf("ByIndex(%q, %q): %v", name, v, err)
			}
			is.ByIndex[v] = ids(objs)
			keys, err := x.IndexKeys(name, v)
			if err != nil {
				t.Fatalf("IndexKeys(%q, %q): %v", name, v, err)
			}
			is.IndexKeys[v] = sortedKeys(keys)
		}
		s.Indexes[name] = is
	}
	return s
}

func everything() labels.Selector { return labels.Everything() }

func mustSelector(t testing.TB, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatalf("labels.Parse(%q): %v", s, err)
	}
	return sel
}
