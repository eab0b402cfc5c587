package fifo_test

import (
	"cmp"
	"context"
	"iter"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
)

// Shared helpers for the fifo tests: pod builders, a printable view of popped
// items, consumers that apply popped deltas to a store, and KnownObjects
// adapters.

type (
	pod   = *corev1.Pod
	queue = fifo.Queue[*corev1.Pod]
	item  = fifo.Item[*corev1.Pod]
	delta = fifo.Delta[*corev1.Pod]
	opts  = fifo.Options[*corev1.Pod]
)

// mkPod returns a pod; rv tells test objects apart in views.
func mkPod(ns, name, rv string) pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
}

// p is mkPod in namespace "ns".
func p(name, rv string) pod { return mkPod("ns", name, rv) }

// podID names an object by key and resourceVersion; the zero object is
// "<nil>". Every test object has a distinct name+RV, so equal IDs mean the
// same object.
func podID(o pod) string {
	if o == nil {
		return "<nil>"
	}
	return cache.KeyOf(o).String() + "@" + o.ResourceVersion
}

// dv is a printable Delta.
type dv struct {
	Type string
	Obj  string
	FSU  bool
}

// iv is a printable popped Item with its isInInitialList flag.
type iv struct {
	Key     string
	Deltas  []dv
	Initial bool
}

func viewDelta(d delta, id func(pod) string) dv {
	return dv{Type: d.Type.String(), Obj: id(d.Object), FSU: d.FinalStateUnknown}
}

// viewItem copies it (its slices are reused by the queue after process).
func viewItem(it item, initial bool, id func(pod) string) iv {
	out := iv{Key: it.Key.String(), Initial: initial}
	for _, d := range it.Deltas {
		out.Deltas = append(out.Deltas, viewDelta(d, id))
	}
	return out
}

// ivEqual is a fast equality for views; failures print gocmp.Diff.
func ivEqual(a, b iv) bool {
	return a.Key == b.Key && a.Initial == b.Initial && slices.Equal(a.Deltas, b.Deltas)
}

// Delta view constructors for expectations.
func add(o pod) dv  { return dv{Type: "Added", Obj: podID(o)} }
func upd(o pod) dv  { return dv{Type: "Updated", Obj: podID(o)} }
func del(o pod) dv  { return dv{Type: "Deleted", Obj: podID(o)} }
func rep(o pod) dv  { return dv{Type: "Replaced", Obj: podID(o)} }
func syn(o pod) dv  { return dv{Type: "Sync", Obj: podID(o)} }
func tomb(o pod) dv { return dv{Type: "Deleted", Obj: podID(o), FSU: true} }
func it(key string, initial bool, ds ...dv) iv {
	return iv{Key: key, Deltas: ds, Initial: initial}
}

// apply is what an informer does with a popped item: Deleted removes the key,
// every other delta stores its object.
func apply(store *cache.Indexer[pod], it item) {
	for _, d := range it.Deltas {
		if d.Type == fifo.Deleted {
			store.DeleteKey(it.Key)
		} else if err := store.Set(it.Key, d.Object); err != nil {
			panic(err)
		}
	}
}

func newStore(t testing.TB) *cache.Indexer[pod] {
	t.Helper()
	x, err := cache.NewIndexer(cache.IndexerOptions[pod]{})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// sortedKnown is a KnownObjects over an Indexer whose Keys come out sorted by
// their string form, so that inferred deletions from KnownObjects are queued
// in a deterministic order.
type sortedKnown struct{ x *cache.Indexer[pod] }

func (s sortedKnown) Keys() iter.Seq[cache.Key] {
	keys := s.x.ListKeys()
	slices.SortFunc(keys, func(a, b cache.Key) int { return cmp.Compare(a.String(), b.String()) })
	return slices.Values(keys)
}

func (s sortedKnown) GetByKey(k cache.Key) (pod, bool, error) { return s.x.GetByKey(k) }

// fakeKnown is a fixed KnownObjects; keys listed in ghosts are yielded by
// Keys but not found by GetByKey, like a store changing under the queue.
type fakeKnown struct {
	objs   []pod
	ghosts []cache.Key
}

func (f fakeKnown) Keys() iter.Seq[cache.Key] {
	return func(yield func(cache.Key) bool) {
		for _, o := range f.objs {
			if !yield(cache.KeyOf(o)) {
				return
			}
		}
		for _, k := range f.ghosts {
			if !yield(k) {
				return
			}
		}
	}
}

func (f fakeKnown) GetByKey(k cache.Key) (pod, bool, error) {
	for _, o := range f.objs {
		if cache.KeyOf(o) == k {
			return o, true, nil
		}
	}
	return nil, false, nil
}

// popCtx bounds a pop that must not block in a test.
func popCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// popOne pops one item, applies it to store (if not nil) and returns its
// view; it fails the test if the queue is empty.
func popOne(t testing.TB, q *queue, store *cache.Indexer[pod]) iv {
	t.Helper()
	if q.Len() == 0 {
		t.Fatalf("popOne: queue is empty")
	}
	var got iv
	err := q.Pop(popCtx(t), func(it item, initial bool) error {
		got = viewItem(it, initial, podID)
		if store != nil {
			apply(store, it)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Pop: %v", err)
	}
	return got
}

// drain pops every queued item one by one.
func drain(t testing.TB, q *queue, store *cache.Indexer[pod]) []iv {
	t.Helper()
	var out []iv
	for q.Len() > 0 {
		out = append(out, popOne(t, q, store))
	}
	return out
}

// orderings runs f for both orderings as subtests.
func orderings(t *testing.T, f func(t *testing.T, o fifo.Ordering)) {
	for _, o := range []fifo.Ordering{fifo.InOrder, fifo.PerKey} {
		t.Run(orderingName(o), func(t *testing.T) { f(t, o) })
	}
}

func orderingName(o fifo.Ordering) string {
	if o == fifo.PerKey {
		return "PerKey"
	}
	return "InOrder"
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
