package clientgo_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/clientgo"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// returned runs f on a goroutine and returns a function that reports,
// once every goroutine of the bubble is blocked, whether f has returned.
func returned(f func()) func() bool {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	return func() bool {
		synctest.Wait()
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
}

// The view's Run runs the informer; once it returned the informer is
// stopped, and the view says so and refuses what client-go refuses then.
func TestRunThroughTheView(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(5)...)
		_, v := newView(t, fake, typed.Options[*corev1.Pod]{}, clientgo.Options[*corev1.Pod]{})
		if v.IsStopped() || v.HasSynced() || v.LastSyncResourceVersion() != "" {
			t.Fatalf("before Run: IsStopped %v, HasSynced %v, LastSyncResourceVersion %q", v.IsStopped(), v.HasSynced(), v.LastSyncResourceVersion())
		}
		stopCh := make(chan struct{})
		ran := returned(func() { v.Run(stopCh) })
		if !clientcache.WaitForCacheSync(stopCh, v.HasSynced) {
			t.Fatal("not synced")
		}
		if got, want := v.LastSyncResourceVersion(), fake.ResourceVersion(); got != want {
			t.Errorf("LastSyncResourceVersion = %q, want %q", got, want)
		}
		if ran() || v.IsStopped() {
			t.Fatal("Run returned, or the view says stopped, before stopCh closed")
		}
		c := v.GetController()
		c.Run(stopCh) // does nothing, returns at once
		c.RunWithContext(t.Context())
		if !c.HasSynced() || c.LastSyncResourceVersion() != v.LastSyncResourceVersion() || c.HasSyncedChecker() != v.HasSyncedChecker() {
			t.Errorf("the controller does not report the informer")
		}
		close(stopCh)
		if !ran() {
			t.Fatal("Run did not return after stopCh closed")
		}
		if !v.IsStopped() {
			t.Error("IsStopped false after Run returned")
		}
		if _, err := v.AddEventHandler(newRecorder().handler()); !errors.Is(err, typed.ErrStopped) {
			t.Errorf("AddEventHandler after stop = %v, want ErrStopped", err)
		}
		if err := v.AddIndexers(clientcache.Indexers{"x": appIndex}); !errors.Is(err, typed.ErrStopped) {
			t.Errorf("AddIndexers after stop = %v, want ErrStopped", err)
		}
		again := returned(func() { v.RunWithContext(context.Background()) })
		if !again() {
			t.Error("a second Run, after the informer ran, did not return at once")
		}
		if got := len(v.GetStore().List()); got != 5 {
			t.Errorf("the cache holds %d pods after stop, want the 5 it had", got)
		}
	})
}

// An informer its owner runs: the view's Run does not run it again and
// returns when its own context ends; IsStopped follows the owner's Run.
func TestRunWhileTheOwnerRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(3)...)
		inf, v := newView(t, fake, typed.Options[*corev1.Pod]{}, clientgo.Options[*corev1.Pod]{})
		stopOwner := it.Run(t, inf)
		if err := inf.WaitForSync(t.Context()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		ran := returned(func() { v.RunWithContext(ctx) })
		if ran() {
			t.Fatal("the view's Run returned while its context is live")
		}
		if v.IsStopped() {
			t.Fatal("IsStopped true while the owner runs the informer")
		}
		cancel()
		if !ran() {
			t.Fatal("the view's Run did not return when its context ended")
		}
		if v.IsStopped() {
			t.Fatal("IsStopped true while the owner still runs the informer")
		}
		stopOwner()
		if !v.IsStopped() {
			t.Error("IsStopped false after the owner's Run returned")
		}
	})
}

// A source that refuses the first list as malformed ends the informer: the
// view's Run returns (the error is logged) and the view is stopped.
func TestRunEndsOnAFatalError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: true})
		fake.FailLists(1, apierrors.NewBadRequest("bad selector"))
		_, v := newView(t, fake, typed.Options[*corev1.Pod]{}, clientgo.Options[*corev1.Pod]{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if ran := returned(func() { v.RunWithContext(ctx) }); !ran() {
			t.Fatal("Run did not return after a fatal error")
		}
		if !v.IsStopped() || v.HasSynced() {
			t.Errorf("IsStopped %v, HasSynced %v; want stopped, not synced", v.IsStopped(), v.HasSynced())
		}
	})
}

func TestHasSyncedCheckers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(4)...)
		_, v := newView(t, fake, typed.Options[*corev1.Pod]{}, clientgo.Options[*corev1.Pod]{})
		rec := newRecorder()
		reg, err := v.AddEventHandler(rec.handler())
		if err != nil {
			t.Fatal(err)
		}
		removed, err := v.AddEventHandler(newRecorder().handler())
		if err != nil {
			t.Fatal(err)
		}
		removedDone := removed.HasSyncedChecker().Done()
		if err := v.RemoveEventHandler(removed); err != nil {
			t.Fatal(err)
		}
		checkers := []clientcache.DoneChecker{v.HasSyncedChecker(), reg.HasSyncedChecker()}
		for _, c := range checkers {
			if c.Name() == "" {
				t.Error("a checker without a name")
			}
			if clientcache.IsDone(c) {
				t.Errorf("%s done before the informer ran", c.Name())
			}
		}
		runUntilCleanup(t, v)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // virtual: a hang guard
		defer cancel()
		if !clientcache.WaitFor(ctx, "", checkers...) {
			t.Fatal("the checkers did not finish")
		}
		if !reg.HasSynced() || rec.count() != 4 {
			t.Errorf("registration synced %v after %d calls, want synced after 4", reg.HasSynced(), rec.count())
		}
		synctest.Wait()
		select {
		case <-removedDone:
			t.Error("the checker of a handler removed before it synced finished")
		default:
		}
	})
}

// A checker waiting on an informer that cannot sync (Forbidden) keeps
// waiting, and holds no goroutine: the bubble ends.
func TestCheckerOfAForbiddenInformerEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: true})
		fake.FailLists(1<<30, apierrors.NewForbidden(podsResource, "", errors.New("no RBAC")))
		_, v := newView(t, fake, typed.Options[*corev1.Pod]{}, clientgo.Options[*corev1.Pod]{})
		reg, err := v.AddEventHandler(newRecorder().handler())
		if err != nil {
			t.Fatal(err)
		}
		done, regDone := v.HasSyncedChecker().Done(), reg.HasSyncedChecker().Done()
		stop := runUntilCleanup(t, v)
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		for _, ch := range []<-chan struct{}{done, regDone} {
			select {
			case <-ch:
				t.Fatal("a checker finished for an informer that did not sync")
			default:
			}
		}
		stop()
	})
}

// The checkers of a view whose informer never runs hold no goroutine
// (synctest fails a bubble that ends with one blocked).
func TestCheckersOfAnInformerThatNeverRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, v := newView(t, fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}), typed.Options[*corev1.Pod]{}, clientgo.Options[*corev1.Pod]{})
		reg, err := v.AddEventHandler(newRecorder().handler())
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []clientcache.DoneChecker{v.HasSyncedChecker(), reg.HasSyncedChecker()} {
			if clientcache.IsDone(c) {
				t.Errorf("%s done for an informer that never ran", c.Name())
			}
		}
		if v.IsStopped() {
			t.Error("IsStopped for an informer that never ran")
		}
	})
}

func TestRemoveEventHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(3)...)
		_, v := newView(t, fake, typed.Options[*corev1.Pod]{}, clientgo.Options[*corev1.Pod]{})
		_, other := newView(t, fake, typed.Options[*corev1.Pod]{}, clientgo.Options[*corev1.Pod]{})
		kept, gone, otherRec := newRecorder(), newRecorder(), newRecorder()
		if _, err := v.AddEventHandler(kept.handler()); err != nil {
			t.Fatal(err)
		}
		goneReg, err := v.AddEventHandlerWithResyncPeriod(gone.handler(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		otherReg, err := other.AddEventHandlerWithOptions(otherRec.handler(), clientcache.HandlerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		runUntilCleanup(t, v)
		runUntilCleanup(t, other)
		it.Eventually(t, "initial adds", func() bool { return kept.count() == 3 && gone.count() == 3 && otherRec.count() == 3 })

		cg := clientcache.NewSharedIndexInformer(fake.ListerWatcher(), &corev1.Pod{}, 0, clientcache.Indexers{})
		foreign, err := cg.AddEventHandler(newRecorder().handler())
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name    string
			handle  clientcache.ResourceEventHandlerRegistration
			wantErr error
		}{
			{"remove", goneReg, nil},
			{"remove again", goneReg, nil},
			{"another view's registration", otherReg, nil},
			{"client-go's registration", foreign, clientgo.ErrForeignRegistration},
			{"nil", nil, clientgo.ErrForeignRegistration},
		} {
			if err := v.RemoveEventHandler(tc.handle); !errors.Is(err, tc.wantErr) {
				t.Errorf("%s: RemoveEventHandler = %v, want %v", tc.name, err, tc.wantErr)
			}
		}
		if _, err := fake.Create(it.Pod("ns-0", "after", nil)); err != nil {
			t.Fatal(err)
		}
		it.Eventually(t, "the kept handlers hear the create", func() bool { return kept.count() == 4 && otherRec.count() == 4 })
		synctest.Wait()
		if n := gone.count(); n != 3 {
			t.Errorf("the removed handler got %d calls, want the 3 before its removal", n)
		}
		if _, err := v.AddEventHandler(nil); err == nil {
			t.Error("AddEventHandler(nil) succeeded")
		}
	})
}

// watchErrors records what a client-go watch error handler gets.
type watchErrors struct {
	mu    sync.Mutex
	names []string
	errs  []error
}

func (w *watchErrors) handle(_ context.Context, r *clientcache.Reflector, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.names = append(w.names, r.Name())
	w.errs = append(w.errs, err)
}

func (w *watchErrors) all() ([]string, []error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.names...), append([]error(nil), w.errs...)
}

func TestSettersWithoutHooks(t *testing.T) {
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{})
	_, v := newView(t, fake, typed.Options[*corev1.Pod]{}, clientgo.Options[*corev1.Pod]{})
	if err := v.SetTransform(func(o any) (any, error) { return o, nil }); !errors.Is(err, clientgo.ErrNoHooks) {
		t.Errorf("SetTransform = %v, want ErrNoHooks", err)
	}
	if err := v.SetWatchErrorHandler(func(*clientcache.Reflector, error) {}); !errors.Is(err, clientgo.ErrNoHooks) {
		t.Errorf("SetWatchErrorHandler = %v, want ErrNoHooks", err)
	}
}

func TestSettersWithHooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(3)...)
		var hooks clientgo.Hooks[*corev1.Pod]
		inf, v := newView(t, fake, typed.Options[*corev1.Pod]{Name: "hooked", ErrorHandler: hooks.HandleError, Transform: hooks.Transform},
			clientgo.Options[*corev1.Pod]{Hooks: &hooks})
		var werrs watchErrors
		if err := v.SetWatchErrorHandlerWithContext(werrs.handle); err != nil {
			t.Fatalf("SetWatchErrorHandlerWithContext before start = %v", err)
		}
		if err := v.SetTransform(func(o any) (any, error) {
			p := o.(*corev1.Pod)
			p.Labels = map[string]string{"transformed": "yes"}
			return p, nil
		}); err != nil {
			t.Fatalf("SetTransform before start = %v", err)
		}
		// A handler that panics (once): its panic is not a watch error.
		var once sync.Once
		if _, err := v.AddEventHandler(clientcache.ResourceEventHandlerFuncs{AddFunc: func(any) { once.Do(func() { panic("boom") }) }}); err != nil {
			t.Fatal(err)
		}
		runUntilCleanup(t, v)
		if err := inf.WaitForSync(t.Context()); err != nil {
			t.Fatal(err)
		}
		for _, p := range inf.Store().List() {
			if p.Labels["transformed"] != "yes" {
				t.Errorf("%s/%s not transformed: %v", p.Namespace, p.Name, p.Labels)
			}
		}
		for _, set := range []func() error{
			func() error { return v.SetTransform(nil) },
			func() error { return v.SetWatchErrorHandler(nil) },
			func() error { return v.SetWatchErrorHandlerWithContext(werrs.handle) },
		} {
			if err := set(); !errors.Is(err, typed.ErrRunning) {
				t.Errorf("a setter after start = %v, want typed.ErrRunning", err)
			}
		}
		fake.FailWatches(2, apierrors.NewServiceUnavailable("down"))
		time.Sleep(2 * time.Second)
		fake.CutWatches()
		it.Eventually(t, "watch errors reach the handler", func() bool { _, errs := werrs.all(); return len(errs) >= 2 })
		names, errs := werrs.all()
		for i, err := range errs {
			var se *source.Error
			if !errors.As(err, &se) || !apierrors.IsServiceUnavailable(err) || names[i] != "hooked" {
				t.Errorf("watch error handler got %v from reflector %q, want a 503 source error from \"hooked\"", err, names[i])
			}
			if errors.Is(err, typed.ErrHandlerPanic) {
				t.Errorf("a handler panic reached the watch error handler: %v", err)
			}
		}
	})
}

// A transform that returns another type refuses the object: the informer
// quarantines it (its default), reports why, and syncs without it; nothing
// panics.
func TestTransformOfTheWrongType(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(2)...)
		var hooks clientgo.Hooks[*corev1.Pod]
		inf, v := newView(t, fake, typed.Options[*corev1.Pod]{ErrorHandler: hooks.HandleError, Transform: hooks.Transform},
			clientgo.Options[*corev1.Pod]{Hooks: &hooks})
		if err := v.SetTransform(func(o any) (any, error) { return &corev1.Node{}, nil }); err != nil {
			t.Fatal(err)
		}
		runUntilCleanup(t, v)
		it.Eventually(t, "both objects are quarantined", func() bool { return len(inf.Status().Quarantined) == 2 })
		for _, q := range inf.Status().Quarantined {
			if !errors.Is(q.Reason, clientgo.ErrWrongType) {
				t.Errorf("%v quarantined for %v, want ErrWrongType", q.Key, q.Reason)
			}
		}
		it.Eventually(t, "the view syncs without them", v.HasSynced)
		if n := len(v.GetStore().List()); n != 0 {
			t.Errorf("the store holds %d objects, want none", n)
		}
	})
}

func TestHooksDefaults(t *testing.T) {
	var hooks clientgo.Hooks[*corev1.Pod]
	p := it.Pod("ns", "p", nil)
	if got, err := hooks.Transform(p); got != p || err != nil {
		t.Errorf("Transform without a function = (%v, %v), want the object itself", got, err)
	}
	// Without a handler set: client-go's default handler, and a log line
	// for other errors; neither panics.
	hooks.HandleError(&source.Error{Phase: source.PhaseWatch, Err: apierrors.NewServiceUnavailable("down")})
	hooks.HandleError(errors.New("not a watch error"))
	hooks.HandleError(nil)
}
