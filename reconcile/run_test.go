package reconcile_test

import (
	"context"
	"errors"
	"sync"
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
	"github.com/typedinformer/informer/typed"
)

// TestDrainLetsInFlightFinish cancels Run while two workers are in
// Reconcile and more keys are queued: Run waits for the two, whose context
// stays live, starts no other key, and returns nil.
func TestDrainLetsInFlightFinish(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		var canceled atomic.Int64
		rec := newRecorder(func(ctx context.Context, _ cache.Key, _ int) error {
			<-gate
			if ctx.Err() != nil {
				canceled.Add(1)
			}
			return nil
		})
		e := newEnv(t, pods(10), typed.Options[*corev1.Pod]{}, rec, reconcile.Options[*corev1.Pod]{Workers: 2})
		e.start(t)
		synctest.Wait()
		if got := len(rec.snapshot()); got != 2 {
			t.Fatalf("%d reconciles started, want 2 (the workers)", got)
		}
		e.cancel()
		synctest.Wait()
		select {
		case err := <-e.runErr:
			t.Fatalf("Run returned %v with two reconciles in progress", err)
		default:
		}
		touch(t, e.fake, "p-00009", "after cancel") // must not start anything
		close(gate)
		if err := <-e.runErr; err != nil {
			t.Errorf("Run = %v after the drain, want nil", err)
		}
		e.cancel = nil
		e.infStop()
		if got := len(rec.snapshot()); got != 2 {
			t.Errorf("%d reconciles in all, want the 2 in progress at cancel", got)
		}
		if got := canceled.Load(); got != 0 {
			t.Errorf("%d in-flight reconciles saw their context canceled during the drain", got)
		}
		if errs := e.errs.All(); len(errs) != 0 {
			t.Errorf("errors: %v", errs)
		}
	})
}

// TestDrainTimeout holds a reconcile past Options.DrainTimeout: its
// context is then canceled, ErrDrainTimeout reported, and Run returns nil
// once it has returned.
func TestDrainTimeout(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder(func(ctx context.Context, _ cache.Key, _ int) error {
			<-ctx.Done()
			return ctx.Err()
		})
		e := newEnv(t, pods(1), typed.Options[*corev1.Pod]{}, rec, reconcile.Options[*corev1.Pod]{DrainTimeout: time.Minute})
		e.start(t)
		synctest.Wait()
		e.cancel()
		time.Sleep(time.Minute - time.Second)
		synctest.Wait()
		select {
		case err := <-e.runErr:
			t.Fatalf("Run returned %v before the drain timeout", err)
		default:
		}
		if err := <-e.runErr; err != nil {
			t.Errorf("Run = %v after the drain timeout, want nil", err)
		}
		e.cancel = nil
		e.infStop()
		var timeouts int
		for _, err := range e.errs.All() {
			if errors.Is(err, reconcile.ErrDrainTimeout) {
				timeouts++
			} else if !errors.Is(err, context.Canceled) {
				t.Errorf("unexpected error %v", err)
			}
		}
		if timeouts != 1 {
			t.Errorf("%d ErrDrainTimeout reports, want 1: %v", timeouts, e.errs.All())
		}
	})
}

func TestRunTwice(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, pods(1), typed.Options[*corev1.Pod]{}, newRecorder(nil), reconcile.Options[*corev1.Pod]{})
		e.start(t)
		synctest.Wait() // the first Run has started: it waits for ctx
		if err := e.ctrl.Run(t.Context()); !errors.Is(err, typed.ErrRunning) {
			t.Errorf("Run while running = %v, want typed.ErrRunning", err)
		}
		e.stop(t)
		if err := e.ctrl.Run(t.Context()); !errors.Is(err, typed.ErrStopped) {
			t.Errorf("Run after it returned = %v, want typed.ErrStopped", err)
		}
	})
}

// TestRunReturnsSyncError: an informer that cannot sync (Forbidden) makes
// Run return the informer's *typed.NotSyncedError, without reconciling.
func TestRunReturnsSyncError(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder(nil)
		quiet := typed.Options[*corev1.Pod]{ErrorHandler: func(error) {}}
		e := newEnv(t, pods(3), quiet, rec, reconcile.Options[*corev1.Pod]{})
		forbidden := apierrors.NewForbidden(podsResource, "", errors.New("injected: RBAC"))
		e.fake.FailLists(1000, forbidden)
		e.fake.FailWatches(1000, forbidden)
		stop := e.runInformer(t)
		defer stop()
		err := e.ctrl.Run(t.Context())
		var ns *typed.NotSyncedError
		if !errors.As(err, &ns) || !apierrors.IsForbidden(err) {
			t.Errorf("Run = %v, want a *typed.NotSyncedError caused by Forbidden", err)
		}
		if got := len(rec.snapshot()); got != 0 {
			t.Errorf("%d reconciles without a sync", got)
		}
	})
}

// provider is a workqueue.MetricsProvider that counts, per metric and
// queue name, what the workqueue reports.
type provider struct {
	mu     sync.Mutex
	counts map[string]float64 // "name/metric" -> adds, retries, depth
}

type counter struct {
	p   *provider
	key string
}

func (c counter) add(d float64)   { c.p.mu.Lock(); c.p.counts[c.key] += d; c.p.mu.Unlock() }
func (c counter) Inc()            { c.add(1) }
func (c counter) Dec()            { c.add(-1) }
func (c counter) Set(float64)     {}
func (c counter) Observe(float64) {}

func (p *provider) metric(name, what string) counter { return counter{p, name + "/" + what} }

func (p *provider) NewDepthMetric(n string) workqueue.GaugeMetric  { return p.metric(n, "depth") }
func (p *provider) NewAddsMetric(n string) workqueue.CounterMetric { return p.metric(n, "adds") }
func (p *provider) NewLatencyMetric(n string) workqueue.HistogramMetric {
	return p.metric(n, "latency")
}
func (p *provider) NewWorkDurationMetric(n string) workqueue.HistogramMetric {
	return p.metric(n, "duration")
}
func (p *provider) NewUnfinishedWorkSecondsMetric(n string) workqueue.SettableGaugeMetric {
	return p.metric(n, "unfinished")
}
func (p *provider) NewLongestRunningProcessorSecondsMetric(n string) workqueue.SettableGaugeMetric {
	return p.metric(n, "longest")
}
func (p *provider) NewRetriesMetric(n string) workqueue.CounterMetric { return p.metric(n, "retries") }

// TestWorkqueueMetrics gives the controller a MetricsProvider and no
// Name: the workqueue reports under the informer's name, with the adds of
// three keys, two retries, and an empty queue at the end.
func TestWorkqueueMetrics(t *testing.T) {
	leakcheck.Check(t)
	for _, tt := range []struct{ name, want string }{{"", "pods"}, {"my-controller", "my-controller"}} {
		t.Run(tt.want, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &provider{counts: map[string]float64{}}
				rec := newRecorder(func(_ context.Context, k cache.Key, attempt int) error {
					if k.Name == "p-00001" && attempt <= 2 {
						return errors.New("retry me")
					}
					return nil
				})
				e := newEnv(t, pods(3), typed.Options[*corev1.Pod]{}, rec, reconcile.Options[*corev1.Pod]{
					Name: tt.name, MetricsProvider: p, RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[cache.Key](time.Second, time.Minute),
				})
				e.start(t)
				time.Sleep(time.Minute)
				synctest.Wait()
				e.stop(t)
				p.mu.Lock()
				got := map[string]float64{}
				for _, m := range []string{"adds", "retries", "depth"} {
					got[m] = p.counts[tt.want+"/"+m]
				}
				p.mu.Unlock()
				if diff := cmp.Diff(map[string]float64{"adds": 5, "retries": 2, "depth": 0}, got); diff != "" {
					t.Errorf("metrics of queue %q (-want +got):\n%s", tt.want, diff)
				}
			})
		})
	}
}

// TestInformerStops stops the informer under a running controller: Run
// drains and says so with typed.ErrStopped.
func TestInformerStops(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder(nil)
		e := newEnv(t, pods(3), typed.Options[*corev1.Pod]{}, rec, reconcile.Options[*corev1.Pod]{})
		stopInformer := e.runInformer(t)
		done := make(chan error, 1)
		go func() { done <- e.ctrl.Run(t.Context()) }()
		synctest.Wait()
		stopInformer()
		if err := <-done; !errors.Is(err, typed.ErrStopped) {
			t.Errorf("Run = %v after the informer stopped, want typed.ErrStopped", err)
		}
		if got := len(rec.snapshot()); got != 3 {
			t.Errorf("%d reconciles, want 3", got)
		}
	})
}
