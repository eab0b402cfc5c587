package typed_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/informertest"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

var errTransform = errors.New("transform refuses this object")

// TestReliabilityTransformError makes Options.Transform fail for some
// objects (fault 20), with Options.OnRefused StopAndRelist (the default,
// Quarantine, is TestQuarantine's). During the initial list: the error reaches the
// ErrorHandler and WaitForSync (I6), nothing is published (no half list:
// cache empty, not synced), the informer retries with backoff, boundedly
// (I8), and syncs with the object once the transform stops failing (I1).
// After sync, on live events: the informer does not move its
// resourceVersion past the event it could not take, later changes wait
// behind it, Status carries the error all along (never silently stale,
// I6), and everything converges once the transform recovers (I1, I2-I4).
func TestReliabilityTransformError(t *testing.T) {
	for _, watchList := range []bool{true, false} {
		t.Run(fmt.Sprintf("initial list/watchList=%v", watchList), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { transformInitial(t, watchList) })
		})
		t.Run(fmt.Sprintf("live events/watchList=%v", watchList), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { transformLive(t, watchList) })
		})
	}
}

// failingTransform fails for objects whose name starts with "bad" while
// failing is set, and panics for those whose name starts with "panic".
func failingTransform(failing *atomic.Bool, calls *atomic.Int64) func(*corev1.Pod) (*corev1.Pod, error) {
	return func(p *corev1.Pod) (*corev1.Pod, error) {
		if strings.HasPrefix(p.Name, "bad") && failing.Load() {
			calls.Add(1)
			return nil, fmt.Errorf("%s: %w", p.Name, errTransform)
		}
		return p, nil
	}
}

func transformInitial(t *testing.T, watchList bool) {
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: !watchList}, append(it.Pods(20), it.Pod("ns-0", "bad", nil))...)
	var failing atomic.Bool
	var failures atomic.Int64
	failing.Store(true)
	var errs it.ErrSink
	inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{
		Transform: failingTransform(&failing, &failures), ErrorHandler: errs.Handle, NoWatchList: !watchList, OnRefused: typed.StopAndRelist,
	})
	rec := it.NewRecorder()
	reg, err := inf.AddHandler(rec)
	if err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = inf.WaitForSync(ctx)
	if !errors.Is(err, errTransform) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("I6: WaitForSync = %v, want the transform error and the deadline", err)
	}
	if st := inf.Status(); inf.HasSynced() || !errors.Is(st.LastError, errTransform) {
		t.Errorf("I6: Status = %+v, want not synced, with the transform error", st)
	}
	if errs.Count(it.Is(errTransform)) == 0 {
		t.Errorf("I6: ErrorHandler got no transform error: %v", errs.All())
	}
	if n := inf.Store().Len(); n != 0 || reg.HasSynced() || inf.HasSynced() {
		t.Errorf("published %d objects of a list it could not take (synced %v/%v)", n, inf.HasSynced(), reg.HasSynced())
	}
	// I8: a minute of 800ms..30s jittered backoff is a handful of tries.
	if n := failures.Load(); n < 2 || n > 15 {
		t.Errorf("I8: %d attempts in a minute, want a few (2-15)", n)
	}
	failing.Store(false)
	if err := inf.WaitForSync(context.Background()); err != nil {
		t.Fatal(err)
	}
	it.Converge(t, fake, inf.Store(), rec)
	if st := inf.Status(); st.LastError != nil {
		t.Errorf("Status().LastError = %v after recovery, want nil", st.LastError)
	}
}

func transformLive(t *testing.T, watchList bool) {
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: !watchList}, append(it.Pods(20), it.Pod("ns-0", "bad", nil))...)
	var failing atomic.Bool
	var failures atomic.Int64
	var errs it.ErrSink
	inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{
		Transform: failingTransform(&failing, &failures), ErrorHandler: errs.Handle, NoWatchList: !watchList, OnRefused: typed.StopAndRelist,
	})
	rec := it.NewRecorder()
	startSynced(t, inf, rec)
	it.Eventually(t, "watch open", func() bool { return fake.OpenWatches() == 1 })
	it.Converge(t, fake, inf.Store(), rec)
	synctest.Wait()
	before := informertest.StateOf(inf.Store().List())
	rvBefore := inf.LastSyncResourceVersion()
	listsBefore := inf.Status().Stats

	failing.Store(true)
	badKey := cache.Key{Namespace: "ns-0", Name: "bad"}
	if _, err := fake.Update(it.Pod("ns-0", "bad", map[string]string{"v": "2"})); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.Create(it.Pod("ns-1", "bad-new", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.Update(it.Pod("ns-0", "p-0", map[string]string{"v": "2"})); err != nil {
		t.Fatal(err)
	}
	for range 6 { // a minute, in steps
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if st := inf.Status(); !errors.Is(st.LastError, errTransform) {
			t.Fatalf("I6: Status = %+v while the transform fails, want its error", st)
		}
		if rv := inf.LastSyncResourceVersion(); rv != rvBefore {
			t.Fatalf("resourceVersion moved from %s to %s past an event the cache did not take", rvBefore, rv)
		}
		if diff := cmp.Diff(before, informertest.StateOf(inf.Store().List())); diff != "" {
			t.Fatalf("cache changed past the failed event (-before +now):\n%s", diff)
		}
	}
	if got := rec.Replay()[badKey]; got != before[badKey] {
		t.Errorf("handler state of %v = %q, want the last taken %q", badKey, got, before[badKey])
	}
	after := inf.Status().Stats
	if n := (after.Lists + after.WatchLists) - (listsBefore.Lists + listsBefore.WatchLists); n < 1 || n > 15 {
		t.Errorf("I8: %d relists in a minute of failing transform, want a few (1-15)", n)
	}
	if errs.Count(it.Is(errTransform)) == 0 {
		t.Errorf("I6: ErrorHandler got no transform error: %v", errs.All())
	}
	failing.Store(false)
	it.Converge(t, fake, inf.Store(), rec)
	synctest.Wait()
	if st := inf.Status(); !inf.HasSynced() || st.LastError != nil {
		t.Errorf("Status after recovery = %+v", st)
	}
}

// A panicking Transform is an error like any other: reported, the object
// refused, the process alive.
func TestTransformPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pod("ns", "panic", nil))
		var errs it.ErrSink
		inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle, Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
			if p.Name == "panic" {
				panic("transform boom")
			}
			return p, nil
		}})
		it.Run(t, inf)
		it.Eventually(t, "panic reported", func() bool { return errs.Count(it.Is(typed.ErrTransformPanic)) > 0 })
		if err := errs.All()[0]; !strings.Contains(err.Error(), "transform boom") || !strings.Contains(err.Error(), "ns/panic") {
			t.Errorf("error %q lacks the panic value or the object", err)
		}
		if _, err := fake.Delete(cache.Key{Namespace: "ns", Name: "panic"}); err != nil {
			t.Fatal(err)
		}
		it.Eventually(t, "synced once the object is gone", inf.HasSynced)
	})
}

// managedFieldsPod is a pod with a managedFields entry.
func managedFieldsPod(ns, name string) *corev1.Pod {
	p := it.Pod(ns, name, nil)
	p.ManagedFields = []metav1.ManagedFieldsEntry{{
		Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{}}}`)},
	}}
	return p
}

// TestReliabilityManagedFields: managedFields are dropped by default before
// Transform runs and before anything is cached or handed to a handler,
// for the initial list and live events alike, and kept with
// Options.KeepManagedFields.
func TestReliabilityManagedFields(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, managedFieldsPod("ns", "a"), managedFieldsPod("ns", "b"))
				var mu sync.Mutex
				seen := map[string]int{} // where -> objects with managedFields
				note := func(where string, p *corev1.Pod) {
					mu.Lock()
					defer mu.Unlock()
					seen[where] += 0
					if len(p.ManagedFields) > 0 {
						seen[where]++
					}
				}
				inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{
					KeepManagedFields: keep,
					Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
						note("transform", p)
						return p, nil
					},
				})
				if _, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{
					AddFunc:    func(p *corev1.Pod, _ bool) { note("handler", p) },
					UpdateFunc: func(_, p *corev1.Pod) { note("handler", p) },
				}); err != nil {
					t.Fatal(err)
				}
				it.Run(t, inf)
				if err := inf.WaitForSync(context.Background()); err != nil {
					t.Fatal(err)
				}
				if _, err := fake.Create(managedFieldsPod("ns", "c")); err != nil {
					t.Fatal(err)
				}
				if _, err := fake.Update(managedFieldsPod("ns", "a")); err != nil {
					t.Fatal(err)
				}
				it.Converge(t, fake, inf.Store())
				synctest.Wait()
				for _, p := range inf.Store().List() {
					note("cache", p)
				}
				want := map[string]int{"transform": 0, "handler": 0, "cache": 0}
				if keep {
					// 2 listed + 1 created + 1 updated; the cache holds 3.
					want = map[string]int{"transform": 4, "handler": 4, "cache": 3}
				}
				mu.Lock()
				defer mu.Unlock()
				if diff := cmp.Diff(want, seen); diff != "" {
					t.Errorf("objects with managedFields, by where they were seen (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// sharedLW hands the same objects, by pointer, to every consumer: a list
// and a watch.Broadcaster, as an in-process source shared by two
// informers does.
type sharedLW struct {
	list    []*corev1.Pod
	b       *watch.Broadcaster
	watches atomic.Int32 // watches registered with b
}

func (s *sharedLW) List(metav1.ListOptions) (runtime.Object, error) {
	l := &metav1.List{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
	for _, p := range s.list {
		l.Items = append(l.Items, runtime.RawExtension{Object: p})
	}
	return l, nil
}

// Watch refuses streaming lists, as a server without them does, so both
// informers list.
func (s *sharedLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		return nil, apierrors.NewBadRequest("no streaming lists here")
	}
	w, err := s.b.Watch()
	if err == nil {
		s.watches.Add(1)
	}
	return w, err
}

// Regression: dropping managedFields used to call SetManagedFields(nil) on
// the object the source handed over, so every other reader of that object
// (here a client-go informer fed by the same source) lost its managedFields
// too, and the write raced with them. The informer now trims a copy: the
// source's objects keep their managedFields, under -race, while our cache
// holds them without.
func TestManagedFieldsNotMutated(t *testing.T) {
	shared := &sharedLW{list: []*corev1.Pod{managedFieldsPod("ns", "a")}, b: watch.NewBroadcaster(10, watch.WaitIfChannelFull)}
	defer shared.b.Shutdown()
	ours := mustInformer(t, lwSourceOf(t, shared), typed.Options[*corev1.Pod]{NoWatchList: true})
	theirs := toolscache.NewSharedIndexInformer(shared, &corev1.Pod{}, 0, toolscache.Indexers{})
	it.Run(t, ours)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { theirs.RunWithContext(ctx) })
	if err := ours.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	toolscache.WaitForCacheSync(ctx.Done(), theirs.HasSynced)
	// A broadcaster tells only the watchers it has: both watches must be
	// open before the event, or one informer never hears of it.
	it.Eventually(t, "both informers watch", func() bool { return shared.watches.Load() == 2 })
	live := managedFieldsPod("ns", "b")
	live.ResourceVersion = "11"
	if err := shared.b.Action(watch.Added, live); err != nil {
		t.Fatal(err)
	}
	it.Eventually(t, "both informers have b", func() bool {
		_, ok := ours.Store().GetByKey(cache.Key{Namespace: "ns", Name: "b"})
		_, theirsOK, _ := theirs.GetStore().GetByKey("ns/b")
		return ok && theirsOK
	})
	for _, p := range append(shared.list, live) {
		if len(p.ManagedFields) != 1 {
			t.Errorf("the source's %s lost its managedFields: the informer wrote to an object it does not own", p.Name)
		}
	}
	for _, p := range ours.Store().List() {
		if len(p.ManagedFields) != 0 {
			t.Errorf("our cache holds %s with managedFields, want them dropped", p.Name)
		}
	}
	obj, _, _ := theirs.GetStore().GetByKey("ns/b")
	if p := obj.(*corev1.Pod); len(p.ManagedFields) != 1 {
		t.Errorf("client-go's cache holds %s without managedFields", p.Name)
	}
}

func lwSourceOf(t *testing.T, lw toolscache.ListerWatcher) source.Source[*corev1.Pod] {
	t.Helper()
	src, err := source.FromListerWatcher[*corev1.Pod](lw)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// Unstructured objects are trimmed on a copy too: their metadata map is
// shared with the source's object otherwise.
func TestManagedFieldsNotMutatedUnstructured(t *testing.T) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Thing")
	u.SetNamespace("ns")
	u.SetName("a")
	u.SetResourceVersion("5")
	u.SetManagedFields(managedFieldsPod("ns", "a").ManagedFields)
	lw := &toolscache.ListWatch{
		ListFunc: func(metav1.ListOptions) (runtime.Object, error) {
			return &unstructured.UnstructuredList{Object: map[string]any{"metadata": map[string]any{"resourceVersion": "5"}}, Items: []unstructured.Unstructured{*u}}, nil
		},
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}
	src, err := source.FromListerWatcher[*unstructured.Unstructured](lw)
	if err != nil {
		t.Fatal(err)
	}
	inf, err := typed.NewInformer(src, typed.Options[*unstructured.Unstructured]{NoWatchList: true})
	if err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)
	if err := inf.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, ok := inf.Store().GetByKey(cache.Key{Namespace: "ns", Name: "a"})
	if !ok || len(got.GetManagedFields()) != 0 {
		t.Errorf("cached object %v has managedFields %v, want none", ok, got.GetManagedFields())
	}
	if len(u.GetManagedFields()) != 1 {
		t.Error("the source's object lost its managedFields")
	}
}
