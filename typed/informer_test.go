package typed_test

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

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/informertest"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

func mustInformer(t testing.TB, src source.Source[*corev1.Pod], opts typed.Options[*corev1.Pod]) *typed.Informer[*corev1.Pod] {
	t.Helper()
	inf, err := typed.NewInformer(src, opts)
	if err != nil {
		t.Fatalf("NewInformer: %v", err)
	}
	return inf
}

func TestInformerEndToEnd(t *testing.T) {
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{},
		it.Pod("default", "web-0", map[string]string{"app": "web"}),
		it.Pod("default", "web-1", map[string]string{"app": "web"}),
		it.Pod("default", "db-0", map[string]string{"app": "db"}),
		it.Pod("kube-system", "dns-0", map[string]string{"app": "dns"}),
	)
	inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{LabelIndexes: []string{"app"}})
	rec := it.NewRecorder()
	startSynced(t, inf, rec)
	if got := len(rec.Replay()); got != 4 {
		t.Fatalf("handler saw %d objects after sync, want 4", got)
	}
	for k, evs := range rec.All() {
		if len(evs) != 1 || evs[0].Kind != "add" || !evs[0].Initial {
			t.Errorf("%v: initial events %+v, want one initial add", k, evs)
		}
	}
	web, err := inf.Lister().List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	if err != nil || len(web) != 2 {
		t.Errorf("List(app=web) = %d pods, %v; want 2", len(web), err)
	}
	p, err := inf.Lister().Namespace("default").Get("web-0")
	if err != nil || p.Name != "web-0" {
		t.Errorf("Get(web-0) = %v, %v", p, err)
	}
	if _, err := inf.Lister().Namespace("default").Get("nope"); !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `pods "nope"`) {
		t.Errorf("Get(nope) error = %v, want NotFound naming pods", err)
	}
	if _, err := inf.Lister().Get("web-0"); !errors.Is(err, cache.ErrWrongScope) {
		t.Errorf("cluster Get of a namespaced pod = %v, want ErrWrongScope", err)
	}
	if _, err := fake.Create(it.Pod("default", "web-2", map[string]string{"app": "web"})); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.Update(it.Pod("default", "web-0", map[string]string{"app": "web", "v": "2"})); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.Delete(cache.Key{Namespace: "default", Name: "db-0"}); err != nil {
		t.Fatal(err)
	}
	it.Converge(t, fake, inf.Store(), rec)
	if rv := inf.LastSyncResourceVersion(); rv != fake.ResourceVersion() {
		t.Errorf("LastSyncResourceVersion = %q, want %q", rv, fake.ResourceVersion())
	}
	var deletes []informertest.Event
	for _, e := range rec.Events(cache.Key{Namespace: "default", Name: "db-0"}) {
		if e.Kind == "delete" {
			deletes = append(deletes, e)
		}
	}
	if len(deletes) != 1 || deletes[0].FSU {
		t.Errorf("db-0 deletes = %+v, want one with a known final state", deletes)
	}
}

// TestInformerFaults drives the informer through random watch cuts, a 410
// after compaction and missed deletes while objects churn, then checks
// invariants I1-I4 of docs/reliability.md for two handlers and bounded LIST
// calls (I8).
func TestInformerFaults(t *testing.T) {
	for _, watchList := range []bool{true, false} {
		t.Run(fmt.Sprintf("watchList=%v", watchList), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { faults(t, watchList) })
		})
	}
}

func faults(t *testing.T, watchList bool) {
	rng := seeded(t, 1)
	var seed []*corev1.Pod
	for i := range 300 {
		seed = append(seed, it.Pod(fmt.Sprintf("ns-%d", i%5), fmt.Sprintf("p-%d", i), map[string]string{"i": fmt.Sprint(i % 7)}))
	}
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{Window: 100000, NoWatchList: !watchList}, seed...)
	inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{ErrorHandler: func(error) {}})
	a, b := it.NewRecorder(), it.NewRecorder()
	startSynced(t, inf, a)
	// b joins after sync: it must get a snapshot, then live events.
	if _, err := inf.AddHandler(b); err != nil {
		t.Fatal(err)
	}
	next := 300
	var live []cache.Key
	for _, p := range seed {
		live = append(live, cache.KeyOf(p))
	}
	pick := func() (int, cache.Key) { i := rng.IntN(len(live)); return i, live[i] }
	drop := func(i int) { live[i] = live[len(live)-1]; live = live[:len(live)-1] }
	var missedDeletes []cache.Key
	for op := range 3000 {
		switch r := rng.IntN(100); {
		case r < 30 || len(live) == 0:
			next++
			p := it.Pod(fmt.Sprintf("ns-%d", next%5), fmt.Sprintf("p-%d", next), nil)
			if _, err := fake.Create(p); err != nil {
				t.Fatal(err)
			}
			live = append(live, cache.KeyOf(p))
		case r < 70:
			_, k := pick()
			if _, err := fake.Update(it.Pod(k.Namespace, k.Name, map[string]string{"op": fmt.Sprint(op)})); err != nil {
				t.Fatal(err)
			}
		default:
			i, k := pick()
			if _, err := fake.Delete(k); err != nil {
				t.Fatal(err)
			}
			drop(i)
		}
		switch {
		case op%300 == 150 && len(live) > 0:
			// A missed delete: the event is lost and the history compacted,
			// so only a relist can tell.
			it.Eventually(t, fmt.Sprintf("informer catches up (op %d)", op), func() bool {
				return inf.LastSyncResourceVersion() == fake.ResourceVersion()
			})
			fake.DropEvents(1)
			i, k := pick()
			if _, err := fake.Delete(k); err != nil {
				t.Fatal(err)
			}
			drop(i)
			missedDeletes = append(missedDeletes, k)
			fake.Compact()
			fake.CutWatches()
		case rng.IntN(30) == 0:
			fake.CutWatches()
		}
	}
	it.Converge(t, fake, inf.Store(), a, b)
	want := informertest.StateOf(fake.Items())
	for _, k := range missedDeletes {
		if _, back := want[k]; back {
			continue
		}
		for name, r := range map[string]*informertest.Recorder[*corev1.Pod]{"a": a, "b": b} {
			evs := r.Events(k)
			if len(evs) == 0 || evs[len(evs)-1].Kind != "delete" || !evs[len(evs)-1].FSU {
				t.Errorf("handler %s, missed delete of %v: events %+v, want the last a delete marked final-state-unknown", name, k, evs)
			}
		}
	}
	st := inf.Status().Stats
	t.Logf("stats %+v, %d missed deletes", st, len(missedDeletes))
	// I8: one relist per forced expiry; cuts alone never relist. Without
	// streaming lists on the server, the first streaming attempt is refused
	// and counted once.
	refused := 0
	if !watchList {
		refused = 1
	}
	if st.Relists > len(missedDeletes) || st.Lists+st.WatchLists > 1+len(missedDeletes)+refused {
		t.Errorf("I8: %d relists, %d lists for %d forced expiries", st.Relists, st.Lists+st.WatchLists, len(missedDeletes))
	}
}

func TestInformerHandlerPanicAndRemove(t *testing.T) {
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pod("a", "x", nil), it.Pod("a", "y", nil))
	var errs it.ErrSink
	inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle})
	bad, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{AddFunc: func(*corev1.Pod, bool) { panic("boom") }})
	if err != nil {
		t.Fatal(err)
	}
	good := it.NewRecorder()
	goodReg, err := inf.AddHandler(good)
	if err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)
	if err := typed.WaitForCacheSync(t.Context(), inf, bad, goodReg); err != nil {
		t.Fatal(err)
	}
	if bad.Panics() != 2 {
		t.Errorf("Panics() = %d, want 2", bad.Panics())
	}
	// Reported by the informer's one reporting goroutine, after the calls.
	it.Eventually(t, "both panics reported", func() bool { return errs.Count(it.Is(typed.ErrHandlerPanic)) >= 2 })
	if n := errs.Count(it.Is(typed.ErrHandlerPanic)); n != 2 {
		t.Errorf("%d panics reported to the ErrorHandler, want 2: %v", n, errs.All())
	}
	if err := inf.RemoveHandler(bad); err != nil {
		t.Fatal(err)
	}
	if err := inf.RemoveHandler(bad); !errors.Is(err, typed.ErrUnknownHandler) {
		t.Errorf("second RemoveHandler = %v, want ErrUnknownHandler", err)
	}
	if _, err := fake.Create(it.Pod("a", "z", nil)); err != nil {
		t.Fatal(err)
	}
	it.Eventually(t, "good handler sees z", func() bool { return len(good.Replay()) == 3 })
	if bad.Panics() != 2 {
		t.Errorf("removed handler still called: Panics() = %d", bad.Panics())
	}
}

func TestInformerWaitForSyncForbidden(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{})
		forbidden := apierrors.NewForbidden(podsResource, "", errors.New("user cannot list pods"))
		fake.FailLists(1000, forbidden)
		fake.FailWatches(1000, forbidden)
		inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{ErrorHandler: func(error) {}})
		reg, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{})
		if err != nil {
			t.Fatal(err)
		}
		it.Run(t, inf)
		err = typed.WaitForCacheSync(context.Background(), inf, reg)
		if !apierrors.IsForbidden(err) {
			t.Fatalf("WaitForCacheSync = %v, want an error that IsForbidden", err)
		}
		var nse *typed.NotSyncedError
		if !errors.As(err, &nse) || nse.Informer != "pods" {
			t.Errorf("WaitForCacheSync error %#v, want a *NotSyncedError naming the informer", err)
		}
		for _, want := range []string{"informer pods not synced", "forbidden"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		if strings.Contains(err.Error(), "handler") {
			t.Errorf("error %q repeats the cause for the informer's handler", err)
		}
		if err := reg.WaitForSync(context.Background()); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "handler pods#1 not synced") {
			t.Errorf("the registration's own wait = %v, want it to name the handler and say Forbidden", err)
		}
		if st := inf.Status(); inf.HasSynced() || !apierrors.IsForbidden(st.LastError) || st.StaleSince.IsZero() {
			t.Errorf("Status = %+v (synced %v), want not synced, the 403, and since when", st, inf.HasSynced())
		}
		// Once allowed, it syncs without a restart, and the error clears.
		fake.FailLists(0, nil)
		fake.FailWatches(0, nil)
		it.Eventually(t, "synced after the grant", inf.HasSynced)
		if err := typed.WaitForCacheSync(context.Background(), inf, reg); err != nil {
			t.Fatal(err)
		}
		if st := inf.Status(); st.LastError != nil || !st.LastErrorTime.IsZero() || !st.StaleSince.IsZero() {
			t.Errorf("Status after grant = %+v, want no error", st)
		}
	})
}

// An object the cache cannot index is refused before it enters the queue:
// the error is reported (I6), the cache never holds it and the informer does
// not move past it (the reflector relists after a backoff rather than drop
// it). Meanwhile 8 goroutines add handlers, and the error handler calls back
// into the informer: neither may deadlock with the writer.
func TestInformerIndexErrorWhileAddingHandlers(t *testing.T) {
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{})
	var inf *typed.Informer[*corev1.Pod]
	var reported atomic.Int64
	var err error
	inf, err = typed.NewInformer(fake, typed.Options[*corev1.Pod]{
		OnRefused: typed.StopAndRelist,
		Indexers: cache.Indexers[*corev1.Pod]{"strict": func(p *corev1.Pod) ([]string, error) {
			if strings.HasPrefix(p.Name, "bad-") {
				return nil, errors.New("no index value for bad pods")
			}
			return []string{p.Name}, nil
		}},
		ErrorHandler: func(error) {
			reported.Add(1)
			_ = inf.HasSynced()
			_ = inf.Status()
			_, _ = inf.Lister().List(labels.Everything())
			_, _ = inf.AddHandler(handler.Funcs[*corev1.Pod]{})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	ran := make(chan error, 1)
	go func() { ran <- inf.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 100 {
			_, _ = fake.Create(it.Pod("a", fmt.Sprintf("good-%d", i), nil))
		}
		for i := range 50 {
			_, _ = fake.Create(it.Pod("a", fmt.Sprintf("bad-%d", i), nil))
		}
	}()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if _, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); <-done; close(finished) }()
	select {
	case <-finished:
	case <-time.After(time.Minute):
		t.Fatal("deadlock: AddHandler and the writer did not finish")
	}
	it.Eventually(t, "good pods cached", func() bool { return inf.Store().Len() == 100 })
	it.Eventually(t, "index error reported", func() bool {
		err := inf.Status().LastError
		return reported.Load() > 0 && err != nil && strings.Contains(err.Error(), "no index value for bad pods")
	})
	for _, p := range inf.Store().List() {
		if strings.HasPrefix(p.Name, "bad-") {
			t.Errorf("cache holds %s, which its index refuses", p.Name)
		}
	}
	if rv := inf.LastSyncResourceVersion(); rv == fake.ResourceVersion() {
		t.Errorf("LastSyncResourceVersion %s moved past the refused objects", rv)
	}
}

// Invalid construction fails at construction, with an error that says
// what is wrong; nothing is started.
// noManagedFields is a fake that says its objects come without
// managedFields, as FromConfig's do by default.
type noManagedFields struct{ *sourcetest.Fake[*corev1.Pod] }

func (s noManagedFields) Info() source.Info {
	i := s.Fake.Info()
	i.NoManagedFields = true
	return i
}

func TestNewInformerErrors(t *testing.T) {
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{})
	var nilFake *sourcetest.Fake[*corev1.Pod]
	cases := []struct {
		name string
		src  source.Source[*corev1.Pod]
		opts typed.Options[*corev1.Pod]
		want error
		text string
	}{
		{name: "nil source", src: nil, want: source.ErrNilSource, text: "nil source"},
		{name: "typed nil source", src: nilFake, want: source.ErrNilSource, text: "Source[*v1.Pod]"},
		{name: "index on the namespace index's name", src: fake, opts: typed.Options[*corev1.Pod]{
			Indexers: cache.Indexers[*corev1.Pod]{cache.NamespaceIndex: func(*corev1.Pod) ([]string, error) { return nil, nil }},
		}, want: cache.ErrIndexExists, text: `"namespace"`},
		{name: "nil index function", src: fake, opts: typed.Options[*corev1.Pod]{
			Indexers: cache.Indexers[*corev1.Pod]{"x": nil},
		}, text: `index "x": nil index function`},
		{name: "bad label index key", src: fake, opts: typed.Options[*corev1.Pod]{LabelIndexes: []string{"not a key"}}, text: `label index "not a key"`},
		{name: "duplicate label index", src: fake, opts: typed.Options[*corev1.Pod]{LabelIndexes: []string{"app", "app"}}, want: cache.ErrIndexExists},
		{name: "managedFields kept from a source that drops them", src: noManagedFields{fake}, opts: typed.Options[*corev1.Pod]{KeepManagedFields: true},
			text: "the source drops managedFields"},
		{name: "negative page size", src: fake, opts: typed.Options[*corev1.Pod]{PageSize: -1}, text: "PageSize -1"},
		{name: "negative watch timeout", src: fake, opts: typed.Options[*corev1.Pod]{MinWatchTimeout: -time.Second}, text: "MinWatchTimeout -1s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inf, err := typed.NewInformer(tc.src, tc.opts)
			if err == nil || inf != nil {
				t.Fatalf("NewInformer = %v, %v; want an error", inf, err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("error %v, want it to wrap %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("error %q does not say %q", err, tc.text)
			}
		})
	}
	if n := fake.ListCalls() + fake.WatchCalls(); n != 0 {
		t.Errorf("%d requests from failed constructions, want 0", n)
	}
}

// One lifecycle: Run twice at once is ErrRunning, after it returned
// ErrStopped; AddHandler and the waits after Run returned say so too.
func TestInformerLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pod("a", "x", nil))
		inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{})
		unsynced, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- inf.Run(ctx) }()
		if err := inf.WaitForSync(ctx); err != nil {
			t.Fatal(err)
		}
		if err := inf.Run(ctx); !errors.Is(err, typed.ErrRunning) {
			t.Errorf("Run while running = %v, want ErrRunning", err)
		}
		if err := inf.RemoveHandler(unsynced); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil after cancel", err)
		}
		if err := inf.Run(context.Background()); !errors.Is(err, typed.ErrStopped) {
			t.Errorf("Run after Run returned = %v, want ErrStopped", err)
		}
		if _, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{}); !errors.Is(err, typed.ErrStopped) {
			t.Errorf("AddHandler after Run returned = %v, want ErrStopped", err)
		}
		if err := inf.WaitForSync(context.Background()); err != nil {
			t.Errorf("WaitForSync of a synced, stopped informer = %v, want nil", err)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{})
		fake.FailLists(1<<30, apierrors.NewInternalError(errors.New("down")))
		fake.FailWatches(1<<30, apierrors.NewInternalError(errors.New("down")))
		inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{ErrorHandler: func(error) {}})
		reg, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{})
		if err != nil {
			t.Fatal(err)
		}
		stop := it.Run(t, inf)
		time.Sleep(10 * time.Second)
		stop()
		for name, s := range map[string]typed.Syncer{"informer": inf, "handler": reg} {
			err := s.WaitForSync(context.Background())
			if !errors.Is(err, typed.ErrStopped) || !apierrors.IsInternalError(err) {
				t.Errorf("%s WaitForSync after an unsynced stop = %v, want ErrStopped with the last error", name, err)
			}
		}
	})
	// The same after an error that needs someone to fix it (Forbidden):
	// the wait says the informer stopped, not only the cause.
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{})
		forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
		fake.FailLists(1<<30, forbidden)
		fake.FailWatches(1<<30, forbidden)
		inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{ErrorHandler: func(error) {}})
		stop := it.Run(t, inf)
		time.Sleep(10 * time.Second)
		if err := inf.WaitForSync(context.Background()); errors.Is(err, typed.ErrStopped) || !apierrors.IsForbidden(err) {
			t.Errorf("WaitForSync while running and forbidden = %v, want the Forbidden without ErrStopped", err)
		}
		stop()
		if err := inf.WaitForSync(context.Background()); !errors.Is(err, typed.ErrStopped) || !apierrors.IsForbidden(err) {
			t.Errorf("WaitForSync after a forbidden stop = %v, want ErrStopped with the Forbidden", err)
		}
	})
}

// A LIST the server refuses as malformed before the first sync cannot be
// fixed by retrying: Run returns the error and the waits end with it.
func TestInformerRunReturnsFatalError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: true})
		fake.FailLists(1<<30, apierrors.NewBadRequest("invalid label selector"))
		var errs it.ErrSink
		inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle})
		err := inf.Run(context.Background())
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "informer pods") {
			t.Fatalf("Run = %v, want the BadRequest naming the informer", err)
		}
		if err := inf.WaitForSync(context.Background()); !errors.Is(err, typed.ErrStopped) || !apierrors.IsBadRequest(err) {
			t.Errorf("WaitForSync = %v, want ErrStopped and the cause", err)
		}
		if n := fake.ListCalls(); n != 1 {
			t.Errorf("%d LISTs, want 1: a malformed request is not retried before the first sync", n)
		}
	})
}

// An in-stream error that is recovered by a re-watch (no relist) clears
// Status().LastError as soon as the new watch is established, without
// waiting for the next event: a non-nil LastError after sync means the
// cache may be stale, so it must not linger on a quiet resource (I6).
func TestInformerLastErrorClearsAfterRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pod("a", "x", nil))
		var errs it.ErrSink
		inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle})
		startSynced(t, inf)
		it.Eventually(t, "watch open", func() bool { return fake.OpenWatches() == 1 })
		watches := fake.WatchCalls()
		fake.InjectWatchError(apierrors.NewInternalError(errors.New("etcdserver: no leader")))
		it.Eventually(t, "error recorded", func() bool { return inf.Status().LastError != nil })
		at := time.Now()
		st := inf.Status()
		if !apierrors.IsInternalError(st.LastError) || st.LastErrorTime.After(at) || st.StaleSince.IsZero() {
			t.Errorf("Status = %+v, want the 500 with its time", st)
		}
		// No event comes: the re-watch alone must clear the error.
		it.Eventually(t, "re-watch", func() bool { return fake.WatchCalls() > watches && fake.OpenWatches() == 1 })
		synctest.Wait()
		if st := inf.Status(); st.LastError != nil || !st.StaleSince.IsZero() {
			t.Errorf("Status after the re-watch = %+v, want healthy", st)
		}
		if st := inf.Status().Stats; st.Relists != 0 || st.Errors != 1 {
			t.Errorf("stats %+v, want 0 relists and 1 error for an in-stream 500", st)
		}
		if got := errs.All(); len(got) != 1 {
			t.Errorf("ErrorHandler got %d errors, want the 500 once: %v", len(got), got)
		}
	})
}

// Errors name each layer once: the informer, the phase, the object, the
// cause, without repeated package prefixes.
func TestErrorMessages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: true}, it.Pod("ns", "bad", nil))
		var errs it.ErrSink
		inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{
			ErrorHandler: errs.Handle, OnRefused: typed.StopAndRelist,
			Indexers: cache.Indexers[*corev1.Pod]{"strict": func(*corev1.Pod) ([]string, error) {
				return nil, errors.New("boom")
			}},
		})
		it.Run(t, inf)
		it.Eventually(t, "error reported", func() bool { return len(errs.All()) > 0 })
		got := errs.All()[0].Error()
		if want := `informer pods: refused ns/bad at resourceVersion 101: index "strict": boom`; got != want {
			t.Errorf("error = %q, want %q", got, want)
		}
		for _, word := range []string{"informer", "cache:", "refused", "index"} {
			if n := strings.Count(got, word); n > 1 {
				t.Errorf("error %q names %q %d times", got, word, n)
			}
		}
	})
}

// The initial list is handed to handlers with isInInitialList set, and a
// registration's sync means its handler got every initial object.
func TestRegistrationSync(t *testing.T) {
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(500)...)
	inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{})
	var before, after atomic.Int64
	slow := func(n *atomic.Int64) handler.Funcs[*corev1.Pod] {
		return handler.Funcs[*corev1.Pod]{AddFunc: func(_ *corev1.Pod, initial bool) {
			if initial {
				time.Sleep(10 * time.Microsecond)
				n.Add(1)
			}
		}}
	}
	early, err := inf.AddHandler(slow(&before))
	if err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)
	if err := inf.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	late, err := inf.AddHandler(slow(&after))
	if err != nil {
		t.Fatal(err)
	}
	if err := typed.WaitForCacheSync(t.Context(), early, late); err != nil {
		t.Fatal(err)
	}
	if before.Load() != 500 || after.Load() != 500 {
		t.Errorf("initial adds at sync: early %d, late %d, want 500 each", before.Load(), after.Load())
	}
	if !maps.Equal(informertest.StateOf(fake.Items()), informertest.StateOf(inf.Store().List())) {
		t.Error("cache differs from the server after sync")
	}
}
