package reconcile_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/reconcile"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

func TestNewRefuses(t *testing.T) {
	leakcheck.Check(t)
	inf, err := typed.NewInformer(sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{}), typed.Options[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	ok := reconcile.Func(func(context.Context, cache.Key) error { return nil })
	tests := []struct {
		name string
		inf  *typed.Informer[*corev1.Pod]
		r    reconcile.Reconciler
		opts reconcile.Options[*corev1.Pod]
		want error
	}{
		{"nil informer", nil, ok, reconcile.Options[*corev1.Pod]{}, reconcile.ErrNilInformer},
		{"nil reconciler", inf, nil, reconcile.Options[*corev1.Pod]{}, reconcile.ErrNilReconciler},
		{"negative workers", inf, ok, reconcile.Options[*corev1.Pod]{Workers: -1}, reconcile.ErrBadOptions},
		{"negative retries", inf, ok, reconcile.Options[*corev1.Pod]{MaxRetries: -1}, reconcile.ErrBadOptions},
		{"negative drain", inf, ok, reconcile.Options[*corev1.Pod]{DrainTimeout: -time.Second}, reconcile.ErrBadOptions},
		{"nil predicate", inf, ok, reconcile.Options[*corev1.Pod]{Predicates: []reconcile.Predicate[*corev1.Pod]{nil}}, reconcile.ErrBadOptions},
		{"zero options", inf, ok, reconcile.Options[*corev1.Pod]{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := reconcile.New(tt.inf, tt.r, tt.opts)
			if !errors.Is(err, tt.want) {
				t.Fatalf("New = %v, want %v", err, tt.want)
			}
			if (c == nil) == (tt.want == nil) {
				t.Errorf("New returned controller %v with error %v", c, err)
			}
		})
	}
}

// TestWorkersInParallelNeverSameKey runs 4 workers over keys that keep
// changing while they are reconciled: reconciles overlap, but never two
// of the same key, and every key's last change is reconciled.
func TestWorkersInParallelNeverSameKey(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder(func(context.Context, cache.Key, int) error {
			time.Sleep(time.Second)
			return nil
		})
		e := newEnv(t, pods(8), typed.Options[*corev1.Pod]{}, rec, reconcile.Options[*corev1.Pod]{Workers: 4})
		e.start(t)
		for round := range 5 {
			for i := range 8 {
				touch(t, e.fake, pods(8)[i].Name, string(rune('a'+round)))
			}
			time.Sleep(300 * time.Millisecond)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		e.stop(t)
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.twice) > 0 {
			t.Errorf("keys reconciled twice at once: %v", rec.twice)
		}
		if rec.peak != 4 {
			t.Errorf("at most %d reconciles at once, want 4 (the workers)", rec.peak)
		}
		if len(rec.calls) < 16 {
			t.Errorf("%d reconciles of 8 keys changed 5 times, want at least 16", len(rec.calls))
		}
		if diff := cmp.Diff([]error(nil), e.errs.All()); diff != "" {
			t.Errorf("errors (-want +got):\n%s", diff)
		}
	})
}

// TestRetryAfterTheLimiterDelay fails a key three times: each retry comes
// only once the limiter's delay has passed, the failures are reported with
// their attempt numbers, and the success forgets the key.
func TestRetryAfterTheLimiterDelay(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		rec := newRecorder(func(_ context.Context, _ cache.Key, attempt int) error {
			if attempt <= 3 {
				return boom
			}
			return nil
		})
		lim := workqueue.NewTypedItemExponentialFailureRateLimiter[cache.Key](time.Hour, 10*time.Hour)
		e := newEnv(t, pods(1), typed.Options[*corev1.Pod]{}, rec, reconcile.Options[*corev1.Pod]{RateLimiter: lim})
		e.start(t)
		k := key("p-00000")
		for _, want := range []int{1, 2, 3, 4} {
			synctest.Wait()
			if got := rec.count(k); got != want {
				t.Fatalf("after %d hours' worth of backoff: %d attempts, want %d", want-1, got, want)
			}
			time.Sleep(time.Duration(1<<(want-1))*time.Hour - time.Minute)
			synctest.Wait()
			if got := rec.count(k); got != want {
				t.Fatalf("retry came before the limiter's delay: %d attempts, want %d", got, want)
			}
			time.Sleep(time.Minute)
		}
		if got := lim.NumRequeues(k); got != 0 {
			t.Errorf("NumRequeues after success = %d, want 0 (forgotten)", got)
		}
		var attempts []int
		for _, err := range e.errs.All() {
			var ke *reconcile.KeyError
			if !errors.As(err, &ke) || !errors.Is(err, boom) || ke.Key != k || ke.Dropped {
				t.Errorf("reported %v, want a retried *KeyError for %v wrapping boom", err, k)
				continue
			}
			attempts = append(attempts, ke.Attempts)
		}
		if diff := cmp.Diff([]int{1, 2, 3}, attempts); diff != "" {
			t.Errorf("reported attempts (-want +got):\n%s", diff)
		}
	})
}

// TestDropAfterMaxRetries fails a key for ever: after MaxRetries retries
// it is dropped, the drop is reported with the key and the last error,
// and nothing retries it until the object changes again.
func TestDropAfterMaxRetries(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder(func(_ context.Context, _ cache.Key, attempt int) error {
			return apierrors.NewConflict(podsResource, "p-00000", errors.New("attempt "+string(rune('0'+attempt))))
		})
		lim := workqueue.NewTypedItemExponentialFailureRateLimiter[cache.Key](time.Second, time.Minute)
		e := newEnv(t, pods(1), typed.Options[*corev1.Pod]{}, rec, reconcile.Options[*corev1.Pod]{RateLimiter: lim, MaxRetries: 2})
		e.start(t)
		k := key("p-00000")
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := rec.count(k); got != 3 {
			t.Fatalf("%d attempts with MaxRetries 2, want 3", got)
		}
		errs := e.errs.All()
		if len(errs) != 3 {
			t.Fatalf("reported %d errors, want 3: %v", len(errs), errs)
		}
		var ke *reconcile.KeyError
		last := errs[2]
		if !errors.As(last, &ke) || !errors.Is(last, reconcile.ErrDropped) || !apierrors.IsConflict(last) {
			t.Fatalf("last report = %v, want a *KeyError wrapping ErrDropped and the Conflict", last)
		}
		if diff := cmp.Diff(reconcile.KeyError{Key: k, Attempts: 3, Dropped: true}, *ke, cmpIgnoreErr); diff != "" {
			t.Errorf("drop report (-want +got):\n%s", diff)
		}
		for _, err := range errs[:2] {
			if errors.Is(err, reconcile.ErrDropped) {
				t.Errorf("reported %v before MaxRetries retries", err)
			}
		}

		touch(t, e.fake, "p-00000", "again")
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := rec.count(k); got != 6 {
			t.Errorf("%d attempts after a change to the dropped key, want 6 (3 more)", got)
		}
	})
}

var cmpIgnoreErr = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Err" }, cmp.Ignore())

// TestPanicIsRetried panics in the first Reconcile: the panic is reported
// with ErrPanic and the stack, and the key is retried like an error.
func TestPanicIsRetried(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder(func(_ context.Context, _ cache.Key, attempt int) error {
			if attempt == 1 {
				panic("reconcile bug")
			}
			return nil
		})
		e := newEnv(t, pods(1), typed.Options[*corev1.Pod]{}, rec, reconcile.Options[*corev1.Pod]{})
		e.start(t)
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := rec.count(key("p-00000")); got != 2 {
			t.Errorf("%d attempts after a panic, want 2", got)
		}
		errs := e.errs.All()
		if len(errs) != 1 || !errors.Is(errs[0], reconcile.ErrPanic) {
			t.Fatalf("reported %v, want one ErrPanic", errs)
		}
		if msg := errs[0].Error(); !strings.Contains(msg, "reconcile bug") || !strings.Contains(msg, "controller_test.go") {
			t.Errorf("panic report %q lacks the value or the stack", msg)
		}
	})
}

// TestLiveChangesBeforeBackgroundWork holds the only worker on the first
// key of 5,000 queued as background work (the initial list, or a resync),
// then makes live changes: a new object, and a change to an object whose
// background key is still queued near the end. Both are reconciled before
// almost all of the background keys.
func TestLiveChangesBeforeBackgroundWork(t *testing.T) {
	leakcheck.Check(t)
	const n = 5000
	for _, resync := range []bool{false, true} {
		name := map[bool]string{false: "initial list", true: "resync"}[resync]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gate := make(chan struct{})
				var hold atomic.Bool
				hold.Store(!resync)
				rec := newRecorder(func(ctx context.Context, _ cache.Key, _ int) error {
					if hold.Swap(false) {
						<-gate
					}
					return nil
				})
				iopts := typed.Options[*corev1.Pod]{}
				if resync {
					iopts.ResyncPeriod = time.Hour
				}
				e := newEnv(t, pods(n), iopts, rec, reconcile.Options[*corev1.Pod]{Workers: 1})
				e.start(t)
				synctest.Wait()
				before := 0
				if resync { // the initial list is done: hold the first key of the resync
					before = len(rec.snapshot())
					hold.Store(true)
					time.Sleep(time.Hour)
					synctest.Wait()
				}
				if got := e.ctrl.Len(); got != n-1 {
					t.Fatalf("%d keys queued, want %d (all but the one in hand)", got, n-1)
				}
				if _, err := e.fake.Create(pods(n + 1)[n]); err != nil {
					t.Fatal(err)
				}
				touch(t, e.fake, "p-04990", "live")
				synctest.Wait()
				close(gate)
				synctest.Wait()

				calls := rec.snapshot()[before:]
				if len(calls) != n+1 {
					t.Fatalf("%d reconciles, want %d (every key once)", len(calls), n+1)
				}
				for _, name := range []string{"p-05000", "p-04990"} {
					i := slices.Index(calls, key(name))
					t.Logf("live change to %s: reconcile %d of %d", name, i+1, n+1)
					if i < 0 || i > 10 {
						t.Errorf("live change to %s reconciled at position %d of %d, want among the first 10", name, i, n+1)
					}
				}
			})
		})
	}
}
