package source_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/informertest"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// nsView is one namespace of a cluster-wide Fake, as a namespaced client
// of the API server serves it: lists and watches carry that namespace's
// objects alone. hold, if set, is waited on before each of its watch
// events is handed over: a namespace whose stream lags.
type nsView struct {
	f     *sourcetest.Fake[*corev1.Pod]
	ns    string
	hold  func(ctx context.Context) error
	lists *atomic.Int64
}

func (v nsView) Info() source.Info { return v.f.Info() }

func (v nsView) List(ctx context.Context, opts metav1.ListOptions) (source.List[*corev1.Pod], error) {
	if v.lists != nil {
		v.lists.Add(1)
	}
	l, err := v.f.List(ctx, opts)
	l.Items = slices.DeleteFunc(l.Items, func(p *corev1.Pod) bool { return p.Namespace != v.ns })
	return l, err
}

func (v nsView) Watch(ctx context.Context, opts metav1.ListOptions) (source.Watcher[*corev1.Pod], error) {
	w, err := v.f.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &nsViewWatcher{w: w, v: v}, nil
}

type nsViewWatcher struct {
	w source.Watcher[*corev1.Pod]
	v nsView
}

func (w *nsViewWatcher) Next(ctx context.Context) (source.Event[*corev1.Pod], error) {
	for {
		ev, err := w.w.Next(ctx)
		if err != nil || (ev.Type != watch.Bookmark && ev.Object.Namespace != w.v.ns) {
			if err != nil {
				return ev, err
			}
			continue
		}
		if w.v.hold != nil && ev.Type != watch.Bookmark {
			if err := w.v.hold(ctx); err != nil {
				return source.Event[*corev1.Pod]{}, err
			}
		}
		return ev, nil
	}
}

func (w *nsViewWatcher) Stop() { w.w.Stop() }

func nsFake(pods ...*corev1.Pod) *sourcetest.Fake[*corev1.Pod] {
	return sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Resource: schema.GroupResource{Resource: "pods"}, Objects: pods})
}

func viewsOf(f *sourcetest.Fake[*corev1.Pod]) func(string) (source.Source[*corev1.Pod], error) {
	return func(ns string) (source.Source[*corev1.Pod], error) { return nsView{f: f, ns: ns}, nil }
}

func mustSet(t *testing.T, names ...string) *source.Namespaces {
	t.Helper()
	set, err := source.NewNamespaces(names...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// The source contract, as an API server keeps it, holds for a set of two
// namespaces over one fake: lists (paged too), watches from a version,
// 410 after compaction, selectors and Stop. The set does not stream lists,
// and refuses to.
func TestConformanceInNamespaces(t *testing.T) {
	sourcetest.Run(t, fakeCase(true, func(f *sourcetest.Fake[*corev1.Pod]) (source.Source[*corev1.Pod], error) {
		set, err := source.NewNamespaces(conformanceNS, "other")
		if err != nil {
			return nil, err
		}
		return source.InNamespaces(set, viewsOf(f))
	}))
}

// stateIn is the fake's objects in the namespaces of set.
func stateIn(f *sourcetest.Fake[*corev1.Pod], set *source.Namespaces) informertest.State {
	return informertest.StateOf(slices.DeleteFunc(f.Items(), func(p *corev1.Pod) bool { return !set.Has(p.Namespace) }))
}

func podsIn(nss []string, n int) []*corev1.Pod {
	var pods []*corev1.Pod
	for _, ns := range nss {
		for i := range n {
			pods = append(pods, it.Pod(ns, fmt.Sprintf("p-%d", i), map[string]string{"app": "web"}))
		}
	}
	return pods
}

// One informer over a set of namespaces: one cache and one lister of the
// set's objects alone, paged lists across namespaces, and namespaces added
// and removed while it runs: the added one's objects arrive as additions,
// the removed one's leave as deletions, and the handler's events replay to
// the cache (I1-I4).
func TestInNamespacesInformer(t *testing.T) {
	fake := nsFake(podsIn([]string{"a", "b", "c"}, 10)...)
	set := mustSet(t, "a", "b")
	var lists atomic.Int64
	src, err := source.InNamespaces(set, func(ns string) (source.Source[*corev1.Pod], error) {
		return nsView{f: fake, ns: ns, lists: &lists}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var errs it.ErrSink
	inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{PageSize: 3, ErrorHandler: errs.Handle})
	if err != nil {
		t.Fatal(err)
	}
	rec := it.NewRecorder()
	reg, err := inf.AddHandler(rec)
	if err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)
	if err := typed.WaitForCacheSync(t.Context(), inf, reg); err != nil {
		t.Fatal(err)
	}
	if got := count(inf.Lister().ListSeq(labels.Everything())); got != 20 {
		t.Errorf("lister holds %d pods after the first list of {a, b}, want 20", got)
	}
	if got := count(inf.Lister().Namespace("c").ListSeq(labels.Everything())); got != 0 {
		t.Errorf("lister holds %d pods of c, outside the set", got)
	}
	it.ConvergeTo(t, stateIn(fake, set), inf.Store(), rec)

	// Changes inside and outside the set; a write read back through the
	// cache.
	if _, err := fake.Create(it.Pod("c", "outside", nil)); err != nil {
		t.Fatal(err)
	}
	created, err := fake.Create(it.Pod("b", "inside", nil))
	if err != nil {
		t.Fatal(err)
	}
	// Namespace a has no change: its stream passes the write's version
	// at its next bookmark (kube-apiserver sends one about every minute).
	fake.Bookmark()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := inf.WaitForResourceVersion(ctx, created.ResourceVersion); err != nil {
		t.Fatal(err)
	}
	if _, ok := inf.Store().GetByKey(cache.KeyOf(created)); !ok {
		t.Error("WaitForResourceVersion returned before the write it waited for was in the cache")
	}
	it.ConvergeTo(t, stateIn(fake, set), inf.Store(), rec)

	if err := set.Add("c"); err != nil {
		t.Fatal(err)
	}
	it.ConvergeTo(t, stateIn(fake, set), inf.Store(), rec)
	if got := count(inf.Lister().Namespace("c").ListSeq(labels.Everything())); got != 11 {
		t.Errorf("after Add(c): %d pods of c, want 11", got)
	}
	if err := set.Remove("a"); err != nil {
		t.Fatal(err)
	}
	it.ConvergeTo(t, stateIn(fake, set), inf.Store(), rec)
	if got := it.Count(rec, "delete"); got != 10 {
		t.Errorf("after Remove(a): %d deletions, want a's 10", got)
	}
	if got := inf.Status().Stats.Relists; got != 2 {
		t.Errorf("%d relists, want 2: one per change of the set", got)
	}
	for _, err := range errs.All() {
		if !apierrors.IsResourceExpired(err) {
			t.Errorf("unexpected error: %v", err)
		}
	}
}

// A namespace whose stream lags behind the others does not let the cache
// claim a version it has not reached: a wait for a write in the lagging
// namespace ends only once that write is applied, although later events
// of another namespace were. A watch that ends resumes each namespace
// from its own place: nothing lost, no relist.
func TestInNamespacesLaggingStream(t *testing.T) {
	fake := nsFake(podsIn([]string{"a", "b"}, 2)...)
	set := mustSet(t, "a", "b")
	release := make(chan struct{})
	var holding atomic.Bool
	src, err := source.InNamespaces(set, func(ns string) (source.Source[*corev1.Pod], error) {
		v := nsView{f: fake, ns: ns}
		if ns == "b" {
			v.hold = func(ctx context.Context) error {
				if !holding.Load() {
					return nil
				}
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		return v, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)
	if err := inf.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	holding.Store(true)
	late, err := fake.Create(it.Pod("b", "late", nil))
	if err != nil {
		t.Fatal(err)
	}
	early, err := fake.Create(it.Pod("a", "early", nil))
	if err != nil {
		t.Fatal(err)
	}
	it.Eventually(t, "a's later event applied", func() bool {
		_, ok := inf.Store().GetByKey(cache.KeyOf(early))
		return ok
	})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := inf.WaitForResourceVersion(ctx, late.ResourceVersion); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitForResourceVersion(%s) of b's held write: %v, want it to wait (the cache has not applied it)", late.ResourceVersion, err)
	}
	close(release)
	ctx, cancel = context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := inf.WaitForResourceVersion(ctx, late.ResourceVersion); err != nil {
		t.Fatal(err)
	}
	if _, ok := inf.Store().GetByKey(cache.KeyOf(late)); !ok {
		t.Fatal("the wait for b's write ended without it in the cache")
	}

	// Cut the watches with a change of b not yet seen by a: both
	// resume where they are.
	holding.Store(false)
	for i := range 5 {
		if _, err := fake.Create(it.Pod("a", fmt.Sprintf("x-%d", i), nil)); err != nil {
			t.Fatal(err)
		}
		fake.CutWatches()
		if _, err := fake.Create(it.Pod("b", fmt.Sprintf("x-%d", i), nil)); err != nil {
			t.Fatal(err)
		}
	}
	it.ConvergeTo(t, stateIn(fake, set), inf.Store())
	if got := inf.Status().Stats.Relists; got != 0 {
		t.Errorf("%d relists after cut watches, want 0: each namespace resumes", got)
	}
}

// A namespace removed while the list of the set is in flight: the list
// that read it is not applied, the informer lists the set again, and the
// removed namespace's objects never reach the cache.
func TestInNamespacesRemovedMidList(t *testing.T) {
	fake := nsFake(podsIn([]string{"a", "b", "c"}, 3)...)
	set := mustSet(t, "a", "b", "c")
	inB := make(chan struct{})
	var once sync.Once
	src, err := source.InNamespaces(set, func(ns string) (source.Source[*corev1.Pod], error) {
		v := nsView{f: fake, ns: ns}
		if ns != "b" {
			return v, nil
		}
		return listHook{nsView: v, before: func() {
			once.Do(func() {
				close(inB)
				it.Eventually(t, "b removed", func() bool { return !set.Has("b") })
			})
		}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var errs it.ErrSink
	inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle})
	if err != nil {
		t.Fatal(err)
	}
	rec := it.NewRecorder()
	if _, err := inf.AddHandler(rec); err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)
	<-inB
	if err := set.Remove("b"); err != nil {
		t.Fatal(err)
	}
	if err := inf.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	it.ConvergeTo(t, stateIn(fake, set), inf.Store(), rec)
	if adds, dels := it.Count(rec, "add"), it.Count(rec, "delete"); adds != 6 || dels != 0 {
		t.Errorf("handler saw %d additions and %d deletions, want a's and c's 6 and none: b's objects reached it", adds, dels)
	}
	for _, err := range errs.All() {
		t.Errorf("unexpected error: %v", err)
	}
}

func count[T any](seq iter.Seq[T]) int {
	n := 0
	for range seq {
		n++
	}
	return n
}

// listHook runs before at every List of its namespace.
type listHook struct {
	nsView
	before func()
}

func (h listHook) List(ctx context.Context, opts metav1.ListOptions) (source.List[*corev1.Pod], error) {
	h.before()
	return h.nsView.List(ctx, opts)
}

// Bad sets and bad sources fail at once, with the reason.
func TestNamespacesRefused(t *testing.T) {
	for _, names := range [][]string{nil, {"a", "a"}, {""}, {"Bad_NS"}} {
		if _, err := source.NewNamespaces(names...); !errors.Is(err, source.ErrNamespaceSet) {
			t.Errorf("NewNamespaces(%q): %v, want ErrNamespaceSet", names, err)
		}
	}
	set := mustSet(t, "a", "b")
	for _, tc := range []struct {
		what string
		err  error
	}{
		{"Add(a), in the set", set.Add("a")},
		{"Add(c, c)", set.Add("c", "c")},
		{"Remove(z), not in the set", set.Remove("z")},
		{"Remove(a, b), every one", set.Remove("a", "b")},
		{"Set()", set.Set()},
	} {
		if !errors.Is(tc.err, source.ErrNamespaceSet) {
			t.Errorf("%s: %v, want ErrNamespaceSet", tc.what, tc.err)
		}
	}
	if got := set.String(); got != "a,b" {
		t.Errorf("refused changes changed the set: %s", got)
	}
	if err := set.Set("b", "a"); err != nil || set.String() != "a,b" {
		t.Errorf("Set(b, a) of {a, b}: %v, %s", err, set)
	}

	fake := nsFake()
	if _, err := source.InNamespaces[*corev1.Pod](nil, viewsOf(fake)); !errors.Is(err, source.ErrNamespaceSet) {
		t.Errorf("nil set: %v", err)
	}
	if _, err := source.InNamespaces[*corev1.Pod](set, nil); err == nil {
		t.Error("nil function accepted")
	}
	boom := errors.New("no client")
	_, err := source.InNamespaces(set, func(ns string) (source.Source[*corev1.Pod], error) {
		if ns == "b" {
			return nil, boom
		}
		return nsView{f: fake, ns: ns}, nil
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "namespace b") {
		t.Errorf("a namespace's source fails: %v, want its error naming the namespace", err)
	}
	_, err = source.InNamespaces(set, func(string) (source.Source[*corev1.Pod], error) { return nil, nil })
	if !errors.Is(err, source.ErrNilSource) {
		t.Errorf("a nil source: %v, want ErrNilSource", err)
	}
	nodes := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Node]{Resource: schema.GroupResource{Resource: "nodes"}, Scope: cache.ScopeCluster})
	_, err = source.InNamespaces(set, func(string) (source.Source[*corev1.Node], error) { return nodes, nil })
	if !errors.Is(err, source.ErrNamespaceSet) {
		t.Errorf("a cluster-scoped resource: %v, want ErrNamespaceSet", err)
	}
}
