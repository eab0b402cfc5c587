package typed_test

// Reliability tests for bad answers from the source, one per fault of
// docs/reliability.md (numbers in the comments). Each names the invariants
// (I1-I8) it checks. Tests whose behaviour depends on backoff or time run
// in a synctest bubble: backoffs take no real time and the bubble fails the
// test if a goroutine is left behind.

import (
	"context"
	"errors"
	"fmt"
	"maps"
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

// TestReliabilityWatchErrorEvents injects stream errors carrying a Status
// (fault 11) and malformed frames (fault 12) into the informer's open watch
// and checks the recovery of each: 410 -> exactly one relist; 500, 403 ->
// re-watch from the same resourceVersion, no relist, error reported;
// malformed frames (an unknown event type, events without an object) ->
// never a panic, reported to the ErrorHandler and counted, re-watch without
// a relist. Afterwards: I1 (cache), I2-I4 (handler), I6 (the error reaches
// the caller), I8 (LIST count exact). Both with the streaming initial list
// and with paged LIST.
func TestReliabilityWatchErrorEvents(t *testing.T) {
	nilObj := func(typ watch.EventType) func(*sourcetest.Fake[*corev1.Pod]) {
		return func(f *sourcetest.Fake[*corev1.Pod]) { f.InjectEvent(source.Event[*corev1.Pod]{Type: typ}) }
	}
	cases := []struct {
		name    string
		inject  func(*sourcetest.Fake[*corev1.Pod])
		wantErr func(error) bool // an error the ErrorHandler must get; nil: none at all
		relists int              // exact relists the fault causes
	}{
		{
			name: "410 expired Status",
			inject: func(f *sourcetest.Fake[*corev1.Pod]) {
				f.InjectWatchError(apierrors.NewResourceExpired("too old resource version: 1 (2)"))
			},
			relists: 1,
		},
		{
			name: "410 gone Status",
			//lint:ignore SA1019 the old 410 form servers still send
			inject:  func(f *sourcetest.Fake[*corev1.Pod]) { f.InjectWatchError(apierrors.NewGone("gone")) },
			relists: 1,
		},
		{
			name: "500 internal error",
			inject: func(f *sourcetest.Fake[*corev1.Pod]) {
				f.InjectWatchError(apierrors.NewInternalError(errors.New("etcdserver: no leader")))
			},
			wantErr: apierrors.IsInternalError,
		},
		{
			name: "403 forbidden",
			inject: func(f *sourcetest.Fake[*corev1.Pod]) {
				f.InjectWatchError(apierrors.NewForbidden(podsResource, "", errors.New("RBAC: access denied")))
			},
			wantErr: apierrors.IsForbidden,
		},
		{
			name: "malformed frame",
			inject: func(f *sourcetest.Fake[*corev1.Pod]) {
				f.InjectWatchError(fmt.Errorf("%w: unexpected end of JSON input", source.ErrMalformed))
			},
			wantErr: it.Is(source.ErrMalformed),
		},
		{
			name: "unknown event type",
			inject: func(f *sourcetest.Fake[*corev1.Pod]) {
				f.InjectEvent(source.Event[*corev1.Pod]{Type: "BOGUS", Object: it.Pod("ns-0", "bogus", nil)})
			},
			wantErr: it.Is(source.ErrMalformed),
		},
		{name: "ADDED without an object", inject: nilObj(watch.Added), wantErr: it.Is(source.ErrMalformed)},
		{name: "MODIFIED without an object", inject: nilObj(watch.Modified), wantErr: it.Is(source.ErrMalformed)},
		{name: "DELETED without an object", inject: nilObj(watch.Deleted), wantErr: it.Is(source.ErrMalformed)},
		{name: "BOOKMARK without an object", inject: nilObj(watch.Bookmark), wantErr: it.Is(source.ErrMalformed)},
	}
	for _, tc := range cases {
		for _, watchList := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/watchList=%v", tc.name, watchList), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: !watchList}, it.Pods(30)...)
					var errs it.ErrSink
					inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle, NoWatchList: !watchList})
					rec := it.NewRecorder()
					startSynced(t, inf, rec)
					it.Eventually(t, "watch open", func() bool { return fake.OpenWatches() == 1 })
					it.Converge(t, fake, inf.Store(), rec)
					synctest.Wait()
					before, listsBefore, watchesBefore := inf.Status().Stats, fake.ListCalls(), fake.WatchCalls()

					tc.inject(fake) // must not panic, here or in the informer

					it.Eventually(t, "watch restarted", func() bool {
						return fake.WatchCalls() > watchesBefore && fake.OpenWatches() == 1
					})
					churnFake(t, fake, "after")
					it.Converge(t, fake, inf.Store(), rec)
					synctest.Wait()

					after := inf.Status().Stats
					if got := after.Relists - before.Relists; got != tc.relists {
						t.Errorf("I8: %d relists after the fault, want %d (stats before %+v, after %+v)", got, tc.relists, before, after)
					}
					if !watchList {
						if got := fake.ListCalls() - listsBefore; got != tc.relists {
							t.Errorf("I8: %d LIST calls after the fault, want %d", got, tc.relists)
						}
					}
					if tc.wantErr == nil {
						if got := errs.All(); len(got) != 0 {
							t.Errorf("errors reported for a routine fault: %v", got)
						}
					} else {
						if errs.Count(tc.wantErr) == 0 {
							t.Errorf("I6: the ErrorHandler did not get the fault's error; got %v", errs.All())
						}
						if after.Errors <= before.Errors {
							t.Errorf("I6: Stats.Errors = %d after the fault, was %d: not counted", after.Errors, before.Errors)
						}
					}
					if st := inf.Status(); st.LastError != nil || !inf.HasSynced() {
						t.Errorf("Status after recovery = %+v, want healthy and synced", st)
					}
				})
			})
		}
	}
}

// nilFirstSource streams one event without an object into the first
// streaming list, before the initial events: a source that breaks the
// contract of source.Event (fault 12).
type nilFirstSource struct {
	*sourcetest.Fake[*corev1.Pod]
	typ  watch.EventType
	done atomic.Bool
}

func (s *nilFirstSource) Watch(ctx context.Context, opts metav1.ListOptions) (source.Watcher[*corev1.Pod], error) {
	w, err := s.Fake.Watch(ctx, opts)
	if err != nil || opts.SendInitialEvents == nil || !s.done.CompareAndSwap(false, true) {
		return w, err
	}
	return &prependWatcher{Watcher: w, first: source.Event[*corev1.Pod]{Type: s.typ}}, nil
}

type prependWatcher struct {
	source.Watcher[*corev1.Pod]
	first source.Event[*corev1.Pod]
	sent  bool
}

func (w *prependWatcher) Next(ctx context.Context) (source.Event[*corev1.Pod], error) {
	if !w.sent {
		w.sent = true
		return w.first, nil
	}
	return w.Watcher.Next(ctx)
}

// TestReliabilityNilObjectInStreamingList feeds an event without an object
// into the streaming initial list (fault 12): never a panic, the error is
// reported, and the informer still syncs and converges (I1, I2-I4).
func TestReliabilityNilObjectInStreamingList(t *testing.T) {
	for _, typ := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark} {
		t.Run(string(typ), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := &nilFirstSource{Fake: fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(10)...), typ: typ}
				var errs it.ErrSink
				inf := mustInformer(t, src, typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle})
				rec := it.NewRecorder()
				startSynced(t, inf, rec)
				if !src.done.Load() {
					t.Fatal("the bad event was never streamed: the test tests nothing")
				}
				churnFake(t, src.Fake, "after")
				it.Converge(t, src.Fake, inf.Store(), rec)
				if errs.Count(it.Is(source.ErrMalformed)) != 1 {
					t.Errorf("I6: errors %v, want the malformed event reported once", errs.All())
				}
			})
		})
	}
}

// lwHarness is a client-go ListWatch whose watches are watch.FakeWatchers
// the test drives by hand.
type lwHarness struct {
	mu       sync.Mutex
	watchers []*watch.FakeWatcher
	list     func() (runtime.Object, error)
	lists    atomic.Int64
}

func (h *lwHarness) listWatch() *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			h.lists.Add(1)
			return h.list()
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			w := watch.NewFake()
			h.mu.Lock()
			defer h.mu.Unlock()
			h.watchers = append(h.watchers, w)
			return w, nil
		},
	}
}

func (h *lwHarness) nWatchers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.watchers)
}

func (h *lwHarness) watcher(i int) *watch.FakeWatcher {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.watchers[i]
}

func svc(ns, name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "11"}}
}

func lwSource(t *testing.T, h *lwHarness) source.Source[*corev1.Pod] {
	t.Helper()
	src, err := source.FromListerWatcher[*corev1.Pod](h.listWatch())
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// TestReliabilityWrongType drives a Pod informer over a client-go
// ListWatch (source.FromListerWatcher) whose watch sends a *corev1.Service,
// a typed nil *corev1.Pod, a nil object, an ERROR carrying a non-Status
// object and an unknown event type (faults 11-13): each gives a clear error
// at the source boundary naming the types (I6), no handler call for it, no
// panic, and a re-watch; a valid event afterwards is delivered (I1, I2-I4).
// A list that returns a ServiceList makes WaitForSync end at its context
// deadline with an error that carries the wrong-type error (I6), with
// bounded retries (I8).
func TestReliabilityWrongType(t *testing.T) {
	t.Run("watch", func(t *testing.T) { synctest.Test(t, wrongTypeWatch) })
	t.Run("list", func(t *testing.T) { synctest.Test(t, wrongTypeList) })
}

func wrongTypeWatch(t *testing.T) {
	pods := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
	for i := range 3 {
		p := it.Pod("ns", fmt.Sprintf("p-%d", i), nil)
		p.ResourceVersion, p.UID = fmt.Sprint(i+1), "u"
		pods.Items = append(pods.Items, *p)
	}
	h := &lwHarness{list: func() (runtime.Object, error) { return pods.DeepCopy(), nil }}
	var errs it.ErrSink
	inf := mustInformer(t, lwSource(t, h), typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle, NoWatchList: true})
	rec := it.NewRecorder()
	startSynced(t, inf, rec)
	bad := []struct {
		ev   watch.Event
		want []string // substrings of the error the ErrorHandler gets
	}{
		{watch.Event{Type: watch.Added, Object: svc("ns", "svc-x")}, []string{"*v1.Pod", "*v1.Service"}},
		{watch.Event{Type: watch.Modified, Object: svc("ns", "p-0")}, []string{"*v1.Pod", "*v1.Service"}},
		{watch.Event{Type: watch.Added, Object: (*corev1.Pod)(nil)}, []string{"*v1.Pod", "nil"}},
		{watch.Event{Type: watch.Deleted}, []string{"*v1.Pod", "nil"}},
		{watch.Event{Type: watch.Error, Object: it.Pod("ns", "not-a-status", nil)}, []string{"*v1.Pod"}},
		{watch.Event{Type: watch.Error}, []string{"without a status"}},
		{watch.Event{Type: "BOGUS", Object: it.Pod("ns", "bogus", nil)}, []string{"BOGUS"}},
	}
	for i, b := range bad {
		it.Eventually(t, fmt.Sprintf("watch %d", i), func() bool { return h.nWatchers() == i+1 })
		nErrs := len(errs.All())
		h.watcher(i).Action(b.ev.Type, b.ev.Object) // blocks until the informer took it
		it.Eventually(t, fmt.Sprintf("error for event %d reported", i), func() bool { return len(errs.All()) > nErrs })
		got := errs.All()[nErrs]
		for _, s := range b.want {
			if !strings.Contains(got.Error(), s) {
				t.Errorf("event %d (%s %T): error %q does not name %q", i, b.ev.Type, b.ev.Object, got, s)
			}
		}
		if !errors.Is(got, source.ErrWrongType) && !errors.Is(got, source.ErrNilObject) && !errors.Is(got, source.ErrMalformed) {
			t.Errorf("event %d: error %v wraps none of ErrWrongType, ErrNilObject, ErrMalformed", i, got)
		}
	}
	if n := errs.Count(it.Is(source.ErrWrongType)); n != 2 {
		t.Errorf("%d ErrWrongType errors, want 2: %v", n, errs.All())
	}
	// A valid event after all that is delivered.
	good := it.Pod("ns", "p-new", nil)
	good.ResourceVersion, good.UID = "12", "u"
	it.Eventually(t, "last watch", func() bool { return h.nWatchers() == len(bad)+1 })
	h.watcher(len(bad)).Add(good)
	want := informertest.State{}
	for i := range pods.Items {
		want[cache.KeyOf(&pods.Items[i])] = pods.Items[i].ResourceVersion + "/u"
	}
	want[cache.KeyOf(good)] = "12/u"
	it.Eventually(t, "handler sees the valid pod", func() bool { return maps.Equal(want, rec.Replay()) })
	synctest.Wait()
	if diff := cmp.Diff(want, informertest.StateOf(inf.Store().List())); diff != "" {
		t.Errorf("I1: cache (-want +got):\n%s", diff)
	}
	rec.Check(t, want)
	// No handler call for the bad events: 3 initial adds and one live add.
	calls := 0
	for _, evs := range rec.All() {
		calls += len(evs)
	}
	if calls != 4 {
		t.Errorf("handler got %d calls, want 4 (none for the bad events): %v", calls, rec.All())
	}
	if h.lists.Load() != 1 {
		t.Errorf("I8: %d LISTs; bad frames must not cause relists", h.lists.Load())
	}
}

func wrongTypeList(t *testing.T) {
	h := &lwHarness{list: func() (runtime.Object, error) {
		return &corev1.ServiceList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: []corev1.Service{*svc("ns", "s")}}, nil
	}}
	var errs it.ErrSink
	inf := mustInformer(t, lwSource(t, h), typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle, NoWatchList: true})
	var calls atomic.Int64
	if _, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{
		AddFunc:    func(*corev1.Pod, bool) { calls.Add(1) },
		UpdateFunc: func(_, _ *corev1.Pod) { calls.Add(1) },
		DeleteFunc: func(handler.Deleted[*corev1.Pod]) { calls.Add(1) },
	}); err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := inf.WaitForSync(ctx)
	if err == nil {
		t.Fatal("WaitForSync = nil for a list of the wrong type")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitForSync = %v, want it to wrap context.DeadlineExceeded", err)
	}
	if !errors.Is(err, source.ErrWrongType) {
		t.Errorf("I6: WaitForSync = %v, want it to carry source.ErrWrongType", err)
	}
	for _, s := range []string{"*v1.Pod", "*v1.Service"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("I6: WaitForSync error %q does not name %s", err, s)
		}
	}
	if errs.Count(it.Is(source.ErrWrongType)) == 0 {
		t.Errorf("I6: ErrorHandler got no ErrWrongType: %v", errs.All())
	}
	if st := inf.Status(); inf.HasSynced() || !errors.Is(st.LastError, source.ErrWrongType) {
		t.Errorf("Status = %+v, want not synced with the wrong-type error", st)
	}
	if n := inf.Store().Len(); n != 0 || calls.Load() != 0 {
		t.Errorf("cache has %d objects, handler got %d calls; want none", n, calls.Load())
	}
	// I8: retried with backoff (800ms doubling, jittered), not in a loop.
	if n := h.lists.Load(); n < 2 || n > 10 {
		t.Errorf("I8: %d LIST attempts in 10s, want a few (2-10)", n)
	}
}

// TestTypedNilsAreRefused: a nil *Informer given to WaitForCacheSync, or a
// nil pointer given to AddHandler as the handler, is an error, not a panic
// on another goroutine.
func TestTypedNilsAreRefused(t *testing.T) {
	var nilInf *typed.Informer[*corev1.Pod]
	if err := typed.WaitForCacheSync(t.Context(), nilInf); err == nil || !strings.Contains(err.Error(), "syncer 0 is nil") {
		t.Errorf("WaitForCacheSync(nil *Informer) = %v, want the nil syncer named", err)
	}
	inf := mustInformer(t, fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}), typed.Options[*corev1.Pod]{})
	var rec *informertest.Recorder[*corev1.Pod]
	if _, err := inf.AddHandler(rec); err == nil || !strings.Contains(err.Error(), "nil handler") {
		t.Errorf("AddHandler(nil *Recorder) = %v, want a nil handler error", err)
	}
}
