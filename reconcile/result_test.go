package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/reconcile"
	"github.com/typedinformer/informer/typed"
)

// TestRequeueAfter: a key whose Reconcile returns RequeueAfter(d) comes
// back after d exactly (virtual time), nothing is reported, and its
// backoff starts again: a failure after the requeue waits the limiter's
// first step, not the next one.
func TestRequeueAfter(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		var at []time.Duration
		start := time.Now()
		rec := newRecorder(func(_ context.Context, _ cache.Key, attempt int) error {
			at = append(at, time.Since(start))
			switch attempt {
			case 1, 2:
				return boom // backoff: 1h, then 2h
			case 3:
				return fmt.Errorf("polling: %w", reconcile.RequeueAfter(30*time.Minute))
			case 4:
				return boom // after the requeue: 1h again
			}
			return nil
		})
		lim := workqueue.NewTypedItemExponentialFailureRateLimiter[cache.Key](time.Hour, 10*time.Hour)
		e := newEnv(t, pods(1), typed.Options[*corev1.Pod]{}, rec, reconcile.Options[*corev1.Pod]{RateLimiter: lim})
		e.start(t)
		time.Sleep(24 * time.Hour)
		synctest.Wait()
		want := []time.Duration{0, time.Hour, 3 * time.Hour, 3*time.Hour + 30*time.Minute, 4*time.Hour + 30*time.Minute}
		if diff := cmp.Diff(want, at); diff != "" {
			t.Errorf("reconcile times (-want +got):\n%s", diff)
		}
		var attempts []int
		for _, err := range e.errs.All() {
			var ke *reconcile.KeyError
			if !errors.As(err, &ke) || !errors.Is(err, boom) {
				t.Errorf("reported %v, want only the boom failures", err)
				continue
			}
			attempts = append(attempts, ke.Attempts)
		}
		if diff := cmp.Diff([]int{1, 2, 1}, attempts); diff != "" {
			t.Errorf("reported attempts (-want +got); a requeue must reset them:\n%s", diff)
		}
		s := e.ctrl.Status()
		if got := (reconcile.Outcomes{Success: 1, Error: 3, RequeueAfter: 1}); s.Reconciles != got {
			t.Errorf("Status().Reconciles = %+v, want %+v", s.Reconciles, got)
		}
		if s.Latency.Count != 5 {
			t.Errorf("Status().Latency.Count = %d, want 5", s.Latency.Count)
		}
	})
}

// TestRequeueNow: RequeueAfter(0) reconciles the key again at once, and
// a key that changes meanwhile is still reconciled once per change.
func TestRequeueNow(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder(func(_ context.Context, _ cache.Key, attempt int) error {
			if attempt < 3 {
				return reconcile.RequeueAfter(0)
			}
			return nil
		})
		e := newEnv(t, pods(1), typed.Options[*corev1.Pod]{}, rec, reconcile.Options[*corev1.Pod]{})
		e.start(t)
		synctest.Wait()
		if got := rec.count(key("p-00000")); got != 3 {
			t.Errorf("reconciled %d times, want 3 (two requeues)", got)
		}
		if errs := e.errs.All(); len(errs) != 0 {
			t.Errorf("reported %v, want nothing: a requeue is not a failure", errs)
		}
		if got := e.ctrl.Status().Reconciles.Requeue; got != 2 {
			t.Errorf("Status().Reconciles.Requeue = %d, want 2", got)
		}
	})
}

// TestTerminalNotRetried: a terminal error is reported once with Terminal
// set, counted, never retried; the next change reconciles the key again.
func TestTerminalNotRetried(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		invalid := errors.New("spec.replicas: must be positive")
		rec := newRecorder(func(_ context.Context, _ cache.Key, attempt int) error {
			if attempt == 1 {
				return reconcile.Terminal(invalid)
			}
			return nil
		})
		lim := workqueue.NewTypedItemExponentialFailureRateLimiter[cache.Key](time.Millisecond, time.Second)
		e := newEnv(t, pods(1), typed.Options[*corev1.Pod]{}, rec, reconcile.Options[*corev1.Pod]{RateLimiter: lim})
		e.start(t)
		time.Sleep(time.Hour)
		synctest.Wait()
		k := key("p-00000")
		if got := rec.count(k); got != 1 {
			t.Fatalf("reconciled %d times after a terminal error, want 1", got)
		}
		errs := e.errs.All()
		var ke *reconcile.KeyError
		if len(errs) != 1 || !errors.As(errs[0], &ke) || !ke.Terminal || ke.Key != k ||
			!errors.Is(errs[0], reconcile.ErrTerminal) || !errors.Is(errs[0], invalid) {
			t.Fatalf("reported %v, want one *KeyError with Terminal set wrapping ErrTerminal and the cause", errs)
		}
		s := e.ctrl.Status()
		if s.Reconciles.Terminal != 1 || s.Reconciles.Error != 1 || s.LastError == nil {
			t.Errorf("Status() = %+v, want one terminal error, counted as an error, and LastError set", s.Reconciles)
		}
		touch(t, e.fake, "p-00000", "again")
		synctest.Wait()
		if got := rec.count(k); got != 2 {
			t.Errorf("reconciled %d times after a change, want 2", got)
		}
	})
}

// TestTriggerAndPeriodic: keys sent on Options.Trigger are reconciled
// (also keys of no cached object), and with Periodic every cached key is
// reconciled once a round, each round between Periodic and Periodic
// times 1+PeriodicJitter after the last.
func TestTriggerAndPeriodic(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		trigger := make(chan cache.Key)
		start := time.Now()
		var rounds []time.Duration
		rec := newRecorder(func(_ context.Context, key cache.Key, _ int) error {
			if key.Name == "p-00000" {
				rounds = append(rounds, time.Since(start))
			}
			return nil
		})
		e := newEnv(t, pods(3), typed.Options[*corev1.Pod]{}, rec, reconcile.Options[*corev1.Pod]{
			Trigger: trigger, Periodic: time.Hour, PeriodicJitter: 0.5,
		})
		e.start(t)
		synctest.Wait()
		trigger <- cache.Key{Namespace: "elsewhere", Name: "external"}
		synctest.Wait()
		if got := rec.count(cache.Key{Namespace: "elsewhere", Name: "external"}); got != 1 {
			t.Errorf("a triggered key was reconciled %d times, want 1", got)
		}
		close(trigger) // a closed trigger ends its loop, nothing else
		time.Sleep(10 * time.Hour)
		synctest.Wait()
		for _, name := range []string{"p-00000", "p-00001", "p-00002"} {
			if n := rec.count(key(name)); n < 7 || n > 11 {
				t.Errorf("%s reconciled %d times in 10h with Periodic 1h, jitter 0.5; want 1 + 6..10 rounds", name, n)
			}
		}
		for i := 1; i < len(rounds); i++ {
			if d := rounds[i] - rounds[i-1]; d < time.Hour || d > 90*time.Minute {
				t.Errorf("round %d came %v after the one before, want 1h..1h30m", i, d)
			}
		}
	})
}
