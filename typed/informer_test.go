package typed_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// eventually polls cond until it holds; the bound only guards against a
// hang, it is not a performance assertion.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// start runs inf until the test ends and checks that Run returns nil.
func start[T cache.Object](t *testing.T, inf *typed.Informer[T]) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("Run did not return after cancel")
		}
	})
	return cancel
}

func TestInformerEndToEnd(t *testing.T) {
	leakcheck.Check(t)
	fake := source.NewFake(source.FakeOptions[*corev1.Pod]{Objects: []*corev1.Pod{
		pod("default", "web-0", map[string]string{"app": "web"}),
		pod("default", "web-1", map[string]string{"app": "web"}),
		pod("default", "db-0", map[string]string{"app": "db"}),
		pod("kube-system", "dns-0", map[string]string{"app": "dns"}),
	}})
	inf := typed.NewInformer[*corev1.Pod](fake, typed.Options[*corev1.Pod]{})
	rec := newRecorder()
	reg, err := inf.AddHandler(rec.handler())
	if err != nil {
		t.Fatal(err)
	}
	start(t, inf)
	ctx := context.Background()
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatalf("WaitForSync: %v", err)
	}
	if !typed.WaitForCacheSync(ctx, inf.HasSynced, reg.HasSynced) {
		t.Fatal("WaitForCacheSync returned false")
	}
	// After the registration synced, the handler has seen the initial list.
	if got := len(rec.replay()); got != 4 {
		t.Fatalf("handler saw %d objects after sync, want 4", got)
	}
	for k, evs := range rec.events {
		if len(evs) != 1 || evs[0].Kind != "add" || !evs[0].Initial {
			t.Errorf("%v: initial events %+v, want one initial add", k, evs)
		}
	}

	web, err := inf.Lister().List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(web) != 2 {
		t.Errorf("List(app=web) = %d pods, want 2", len(web))
	}
	p, err := inf.Lister().Namespace("default").Get("web-0")
	if err != nil || p.Name != "web-0" {
		t.Errorf("Get(web-0) = %v, %v", p, err)
	}
	if _, err := inf.Lister().Namespace("default").Get("nope"); !apierrors.IsNotFound(err) {
		t.Errorf("Get(nope) error = %v, want NotFound", err)
	}
	if got := len(inf.Store().List()); got != 4 {
		t.Errorf("Store().List() = %d, want 4", got)
	}

	// Live changes.
	if _, err := fake.Add(pod("default", "web-2", map[string]string{"app": "web"})); err != nil {
		t.Fatal(err)
	}
	upd := pod("default", "web-0", map[string]string{"app": "web", "v": "2"})
	if _, err := fake.Update(upd); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.Delete(cache.Key{Namespace: "default", Name: "db-0"}); err != nil {
		t.Fatal(err)
	}
	want := stateOf(fake.Items())
	eventually(t, "handler converges", func() bool { return maps.Equal(want, rec.replay()) })
	if diff := cmp.Diff(want, stateOf(inf.Store().List())); diff != "" {
		t.Errorf("I1: cache differs from server (-want +got):\n%s", diff)
	}
	rec.check(t, want)
	if rv := inf.LastSyncResourceVersion(); rv != fake.ResourceVersion() {
		t.Errorf("LastSyncResourceVersion = %q, want %q", rv, fake.ResourceVersion())
	}
	if d := rec.deletesOf(cache.Key{Namespace: "default", Name: "db-0"}); len(d) != 1 || d[0].FSU {
		t.Errorf("db-0 deletes = %+v, want one with a known final state", d)
	}
}

// TestInformerFaults drives the informer through random watch cuts, a 410
// after compaction and missed deletes while objects churn, then checks
// invariants I1-I4 of RELIABILITY.md for two handlers and bounded LIST
// calls (I8).
func TestInformerFaults(t *testing.T) {
	for _, watchList := range []bool{true, false} {
		t.Run(fmt.Sprintf("watchList=%v", watchList), func(t *testing.T) {
			// In a synctest bubble backoffs take no real time, and the
			// bubble itself fails the test if a goroutine is left behind.
			synctest.Test(t, func(t *testing.T) { faults(t, watchList) })
		})
	}
}

func faults(t *testing.T, watchList bool) {
	{
		{
			rng := rand.New(rand.NewPCG(1, uint64(len(fmt.Sprint(watchList)))))
			var seed []*corev1.Pod
			for i := range 300 {
				seed = append(seed, pod(fmt.Sprintf("ns-%d", i%5), fmt.Sprintf("p-%d", i), map[string]string{"i": fmt.Sprint(i % 7)}))
			}
			fake := source.NewFake(source.FakeOptions[*corev1.Pod]{Objects: seed, Window: 100000, NoWatchList: !watchList})
			var errs sync.Map
			inf := typed.NewInformer[*corev1.Pod](fake, typed.Options[*corev1.Pod]{
				ErrorHandler: func(err error) { errs.Store(err.Error(), true) },
			})
			a, b := newRecorder(), newRecorder()
			if _, err := inf.AddHandler(a.handler()); err != nil {
				t.Fatal(err)
			}
			start(t, inf)
			if err := inf.WaitForSync(context.Background()); err != nil {
				t.Fatal(err)
			}
			// b joins after sync: it must get a snapshot, then live events.
			if _, err := inf.AddHandler(b.handler()); err != nil {
				t.Fatal(err)
			}

			next := 300
			live := map[cache.Key]bool{}
			for _, p := range seed {
				live[cache.KeyOf(p)] = true
			}
			// pick returns a random live key; map order is random, so draw
			// from a sorted slice to keep runs reproducible.
			pick := func() cache.Key {
				ks := sortedKeys(toState(live))
				return ks[rng.IntN(len(ks))]
			}
			var missedDeletes []cache.Key
			for op := range 3000 {
				switch r := rng.IntN(100); {
				case r < 30 || len(live) == 0:
					next++
					p := pod(fmt.Sprintf("ns-%d", next%5), fmt.Sprintf("p-%d", next), nil)
					if _, err := fake.Add(p); err != nil {
						t.Fatal(err)
					}
					live[cache.KeyOf(p)] = true
				case r < 70:
					k := pick()
					if _, err := fake.Update(pod(k.Namespace, k.Name, map[string]string{"op": fmt.Sprint(op)})); err != nil {
						t.Fatal(err)
					}
				default:
					k := pick()
					if _, err := fake.Delete(k); err != nil {
						t.Fatal(err)
					}
					delete(live, k)
				}
				switch {
				case op%300 == 150 && len(live) > 0:
					// A missed delete: the event is lost and the history
					// compacted, so only a relist can tell.
					eventually(t, fmt.Sprintf("informer catches up (op %d)", op), func() bool {
						return inf.LastSyncResourceVersion() == fake.ResourceVersion()
					})
					fake.DropEvents(1)
					k := pick()
					if _, err := fake.Delete(k); err != nil {
						t.Fatal(err)
					}
					delete(live, k)
					missedDeletes = append(missedDeletes, k)
					fake.Compact()
					fake.CutWatches()
				case rng.IntN(30) == 0:
					fake.CutWatches()
				}
			}
			want := stateOf(fake.Items())
			eventually(t, "cache converges", func() bool { return maps.Equal(want, stateOf(inf.Store().List())) })
			eventually(t, "handler a converges", func() bool { return maps.Equal(want, a.replay()) })
			eventually(t, "handler b converges", func() bool { return maps.Equal(want, b.replay()) })
			a.check(t, want)
			b.check(t, want)
			for _, k := range missedDeletes {
				if _, back := want[k]; back {
					continue
				}
				for name, r := range map[string]*recorder{"a": a, "b": b} {
					d := r.deletesOf(k)
					if len(d) == 0 || !d[len(d)-1].FSU {
						t.Errorf("handler %s, missed delete of %v: deletes %+v, want the last marked final-state-unknown", name, k, d)
					}
				}
			}
			st := inf.Stats()
			t.Logf("stats %+v, %d missed deletes", st, len(missedDeletes))
			// I8: one relist per forced expiry (10 compactions) plus the
			// initial list; cuts alone never relist.
			if lists := st.Lists + st.WatchLists; lists > 1+len(missedDeletes)*2+1 {
				t.Errorf("I8: %d lists for %d forced expiries", lists, len(missedDeletes))
			}
		}
	}
}

func TestInformerHandlerPanicAndRemove(t *testing.T) {
	leakcheck.Check(t)
	fake := source.NewFake(source.FakeOptions[*corev1.Pod]{Objects: []*corev1.Pod{pod("a", "x", nil), pod("a", "y", nil)}})
	var panics sync.Map
	inf := typed.NewInformer[*corev1.Pod](fake, typed.Options[*corev1.Pod]{
		ErrorHandler: func(err error) {
			if errors.Is(err, typed.ErrHandlerPanic) {
				panics.Store(err.Error(), true)
			}
		},
	})
	bad, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{AddFunc: func(*corev1.Pod, bool) { panic("boom") }})
	if err != nil {
		t.Fatal(err)
	}
	good := newRecorder()
	goodReg, _ := inf.AddHandler(good.handler())
	start(t, inf)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !typed.WaitForCacheSync(ctx, inf.HasSynced, bad.HasSynced, goodReg.HasSynced) {
		t.Fatal("not synced")
	}
	if bad.Panics() != 2 {
		t.Errorf("Panics() = %d, want 2", bad.Panics())
	}
	n := 0
	panics.Range(func(any, any) bool { n++; return true })
	if n == 0 {
		t.Error("no panic reported to the ErrorHandler")
	}
	if err := inf.RemoveHandler(bad); err != nil {
		t.Fatal(err)
	}
	if err := inf.RemoveHandler(bad); !errors.Is(err, typed.ErrUnknownHandler) {
		t.Errorf("second RemoveHandler = %v, want ErrUnknownHandler", err)
	}
	_, _ = fake.Add(pod("a", "z", nil))
	eventually(t, "good handler sees z", func() bool { return len(good.replay()) == 3 })
	if bad.Panics() != 2 {
		t.Errorf("removed handler still called: Panics() = %d", bad.Panics())
	}
}

func TestInformerWaitForSyncForbidden(t *testing.T) {
	synctest.Test(t, waitForSyncForbidden)
}

func waitForSyncForbidden(t *testing.T) {
	fake := source.NewFake(source.FakeOptions[*corev1.Pod]{})
	forbidden := apierrors.NewForbidden(podsResource, "", errors.New("user cannot list pods"))
	fake.FailLists(1000, forbidden)
	fake.FailWatches(1000, forbidden)
	inf := typed.NewInformer[*corev1.Pod](fake, typed.Options[*corev1.Pod]{ErrorHandler: func(error) {}})
	start(t, inf)
	err := inf.WaitForSync(context.Background())
	if !apierrors.IsForbidden(err) {
		t.Fatalf("WaitForSync = %v, want an error that IsForbidden", err)
	}
	var nse *typed.NotSyncedError
	if !errors.As(err, &nse) {
		t.Errorf("WaitForSync error %T, want *NotSyncedError", err)
	}
	if st := inf.SyncStatus(); st.Synced || !apierrors.IsForbidden(st.LastError) {
		t.Errorf("SyncStatus = %+v", st)
	}
	// Once allowed, it syncs without a restart.
	fake.FailLists(0, nil)
	fake.FailWatches(0, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		err := inf.WaitForSync(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("did not sync after the grant: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st := inf.SyncStatus(); !st.Synced || st.LastError != nil {
		t.Errorf("SyncStatus after grant = %+v", st)
	}
}

// An object the cache cannot index is refused before it enters the queue:
// the error is reported (I6), the cache never holds it and the informer does
// not move past it (the reflector relists after a backoff rather than drop
// it). Meanwhile 8 goroutines add handlers, and the error handler calls back
// into the informer: neither may deadlock with the dispatch path.
func TestInformerIndexErrorWhileAddingHandlers(t *testing.T) {
	leakcheck.Check(t)
	fake := source.NewFake(source.FakeOptions[*corev1.Pod]{})
	var inf *typed.Informer[*corev1.Pod]
	var reported atomic.Int64
	inf = typed.NewInformer[*corev1.Pod](fake, typed.Options[*corev1.Pod]{
		Indexers: cache.Indexers[*corev1.Pod]{"strict": func(p *corev1.Pod) ([]string, error) {
			if strings.HasPrefix(p.Name, "bad-") {
				return nil, errors.New("no index value for bad pods")
			}
			return []string{p.Name}, nil
		}},
		ErrorHandler: func(error) {
			reported.Add(1)
			_ = inf.HasSynced()
			_ = inf.SyncStatus()
			_, _ = inf.Lister().List(labels.Everything())
		},
	})
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
			_, _ = fake.Add(pod("a", fmt.Sprintf("good-%d", i), nil))
		}
		for i := range 50 {
			_, _ = fake.Add(pod("a", fmt.Sprintf("bad-%d", i), nil))
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
	case <-time.After(60 * time.Second):
		t.Fatal("deadlock: AddHandler and dispatch did not finish")
	}
	eventually(t, "good pods cached", func() bool { return inf.Store().Len() == 100 })
	eventually(t, "index error reported", func() bool {
		err := inf.SyncStatus().LastError
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

// An invalid Options.Indexers (a name the built-in namespace index holds)
// is not silently dropped: Run and WaitForSync return it.
func TestInformerInvalidIndexers(t *testing.T) {
	leakcheck.Check(t)
	fake := source.NewFake(source.FakeOptions[*corev1.Pod]{})
	inf := typed.NewInformer[*corev1.Pod](fake, typed.Options[*corev1.Pod]{
		Indexers: cache.Indexers[*corev1.Pod]{cache.NamespaceIndex: cache.IndexByNamespace[*corev1.Pod]},
	})
	if err := inf.Run(context.Background()); !errors.Is(err, cache.ErrIndexExists) {
		t.Errorf("Run = %v, want ErrIndexExists", err)
	}
	if err := inf.WaitForSync(context.Background()); !errors.Is(err, cache.ErrIndexExists) {
		t.Errorf("WaitForSync = %v, want ErrIndexExists", err)
	}
	if n := fake.ListCalls() + fake.WatchCalls(); n != 0 {
		t.Errorf("%d requests from a misconfigured informer, want 0", n)
	}
}

// An in-stream error that is recovered by a re-watch (no relist) clears
// SyncStatus.LastError once events flow again: a non-nil LastError after
// sync means the cache may be stale, so it must not linger (I6).
func TestInformerLastErrorClearsAfterRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := source.NewFake(source.FakeOptions[*corev1.Pod]{Objects: []*corev1.Pod{pod("a", "x", nil)}})
		inf := typed.NewInformer[*corev1.Pod](fake, typed.Options[*corev1.Pod]{ErrorHandler: func(error) {}})
		start(t, inf)
		if err := inf.WaitForSync(context.Background()); err != nil {
			t.Fatal(err)
		}
		fake.InjectWatchError(apierrors.NewInternalError(errors.New("etcdserver: no leader")))
		eventually(t, "error recorded", func() bool { return inf.SyncStatus().LastError != nil })
		if !apierrors.IsInternalError(inf.SyncStatus().LastError) {
			t.Errorf("LastError = %v, want the 500", inf.SyncStatus().LastError)
		}
		synctest.Wait()
		if _, err := fake.Add(pod("a", "y", nil)); err != nil {
			t.Fatal(err)
		}
		eventually(t, "event after recovery", func() bool { return inf.Store().Len() == 2 })
		if st := inf.SyncStatus(); st.LastError != nil || !st.Synced {
			t.Errorf("SyncStatus after recovery = %+v, want synced and no error", st)
		}
		if st := inf.Stats(); st.Relists != 0 {
			t.Errorf("%d relists for an in-stream 500, want 0", st.Relists)
		}
	})
}
