package typed_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/handler"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// TestReliabilityStopAtRandomMoments stops Run at 1,000 random moments
// (fault 20): right away, during the initial list of up to 2000 objects,
// during live churn with watch cuts, with and without streaming lists,
// resync and a transform, while another goroutine adds a handler. Run
// returns within a generous deadlock guard (I6), no handler is called
// after it returned (I6), AddHandler and Run then return ErrStopped, and no
// goroutine is left (I5, the package's TestMain). Every handler keeps I3
// and I4 up to the stop.
func TestReliabilityStopAtRandomMoments(t *testing.T) {
	fakes := []*sourcetest.Fake[*corev1.Pod]{
		fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}),
		fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(50)...),
		fakeOf(sourcetest.FakeOptions[*corev1.Pod]{Window: 100000}, it.Pods(2000)...),
	}
	rng := seeded(t, 42)
	churnSeed := rng.Uint64()
	// Churn on the mid-sized fake throughout, with watch cuts.
	stopChurn := make(chan struct{})
	var churnWG sync.WaitGroup
	churnWG.Go(func() {
		crng := rand.New(rand.NewPCG(churnSeed, 6))
		for i := 0; ; i++ {
			select {
			case <-stopChurn:
				return
			case <-time.After(200 * time.Microsecond):
			}
			churnOps(t, fakes[1], crng, 5, nil, stopChurn, 0)
			if i%20 == 0 {
				fakes[1].CutWatches()
			}
		}
	})
	defer func() { close(stopChurn); churnWG.Wait() }()

	var problems []string
	for iter := range 1000 {
		fake := fakes[rng.IntN(len(fakes))]
		opts := typed.Options[*corev1.Pod]{NoWatchList: rng.IntN(2) == 0, ErrorHandler: func(error) {}}
		if rng.IntN(4) == 0 {
			opts.ResyncPeriod = time.Millisecond
		}
		if rng.IntN(4) == 0 {
			opts.Transform = func(p *corev1.Pod) (*corev1.Pod, error) { return p, nil }
		}
		inf := mustInformer(t, fake, opts)
		var afterRun atomic.Bool
		first := newTracker(&afterRun)
		if _, err := inf.AddHandler(first.handler()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- inf.Run(ctx) }()
		second := newTracker(&afterRun)
		addDone := make(chan error, 1)
		addDelay := time.Duration(rng.IntN(3000)) * time.Microsecond
		go func() {
			time.Sleep(addDelay)
			_, err := inf.AddHandler(second.handler())
			addDone <- err
		}()
		var delay time.Duration
		switch rng.IntN(4) {
		case 0: // right away
		case 1: // during the initial list
			delay = time.Duration(rng.IntN(500)) * time.Microsecond
		default: // a bit later: sync, live events, resyncs
			delay = time.Duration(rng.IntN(20000)) * time.Microsecond
		}
		time.Sleep(delay)
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("iteration %d: Run = %v", iter, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("iteration %d: I6: Run did not return within a minute of cancel (deadlock)", iter)
		}
		afterRun.Store(true)
		if err := <-addDone; err != nil && !errors.Is(err, typed.ErrStopped) {
			t.Errorf("iteration %d: concurrent AddHandler = %v", iter, err)
		}
		if _, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{}); !errors.Is(err, typed.ErrStopped) {
			t.Errorf("iteration %d: AddHandler after Run returned = %v, want ErrStopped", iter, err)
		}
		if err := inf.Run(context.Background()); !errors.Is(err, typed.ErrStopped) {
			t.Errorf("iteration %d: second Run = %v, want ErrStopped", iter, err)
		}
		// Give a stray handler call the chance to happen, then look.
		runtime.Gosched()
		for _, tr := range []*tracker{first, second} {
			for _, p := range tr.problems() {
				problems = append(problems, fmt.Sprintf("iteration %d (delay %v): %s", iter, delay, p))
			}
		}
	}
	if len(problems) > 0 {
		t.Errorf("%d violations, first: %v", len(problems), problems[:min(10, len(problems))])
	}
}

// TestRunReturnsWithAStuckHandler: a handler that never returns does not
// keep Run from returning, removed or not. Run waits Options.StopTimeout
// for it, reports it by name as ErrHandlerStuck and returns; the handler's
// goroutine ends when the call returns, and hears of nothing after.
func TestRunReturnsWithAStuckHandler(t *testing.T) {
	for _, remove := range []bool{false, true} {
		t.Run(fmt.Sprintf("removed=%v", remove), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pod("a", "a1", nil))
				var errs []error
				inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{
					StopTimeout:  3 * time.Second,
					ErrorHandler: func(err error) { errs = append(errs, err) },
				})
				release := make(chan struct{})
				var calls atomic.Int32
				reg, err := inf.AddHandlerWithOptions(handler.Funcs[*corev1.Pod]{
					UpdateFunc: func(_, _ *corev1.Pod) {
						if calls.Add(1) == 1 {
							<-release
						}
					},
				}, typed.HandlerOptions{Name: "stuck"})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				ran := make(chan error, 1)
				go func() { ran <- inf.Run(ctx) }()
				if err := typed.WaitForCacheSync(t.Context(), inf, reg); err != nil {
					t.Fatal(err)
				}
				for i := range 2 {
					if _, err := fake.Update(it.Pod("a", "a1", map[string]string{"n": fmt.Sprint(i)})); err != nil {
						t.Fatal(err)
					}
				}
				synctest.Wait() // the first update's call is stuck, the second queued
				if remove {
					if err := inf.RemoveHandler(reg); err != nil {
						t.Fatal(err)
					}
				}
				start := time.Now()
				cancel()
				if err := <-ran; err != nil {
					t.Fatalf("Run = %v", err)
				}
				if waited := time.Since(start); waited != 3*time.Second {
					t.Errorf("Run returned %v after cancel, want StopTimeout (3s; fake time)", waited)
				}
				if len(errs) != 1 || !errors.Is(errs[0], typed.ErrHandlerStuck) || !strings.Contains(errs[0].Error(), "handler stuck") {
					t.Errorf("errors %v, want one ErrHandlerStuck naming the handler", errs)
				}
				close(release)
				synctest.Wait() // the handler's goroutine ends (the bubble checks none is left)
				if n := calls.Load(); n != 1 {
					t.Errorf("%d calls, want 1: nothing is delivered after Run returned", n)
				}
			})
		})
	}
}

// TestRunReturnsWithABlockingErrorHandler: an ErrorHandler that blocks
// (a send on a channel nobody reads once the caller stopped) does not keep
// Run from returning: Run waits StopTimeout for it, then returns; the
// handler gets the rest of the errors once it returns.
func TestRunReturnsWithABlockingErrorHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pod("a", "a1", nil))
		release := make(chan struct{})
		var got atomic.Int32
		inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{
			StopTimeout: 2 * time.Second,
			ErrorHandler: func(error) {
				got.Add(1)
				<-release
			},
		})
		ctx, cancel := context.WithCancel(t.Context())
		ran := make(chan error, 1)
		go func() { ran <- inf.Run(ctx) }()
		if err := inf.WaitForSync(t.Context()); err != nil {
			t.Fatal(err)
		}
		fake.FailWatches(1000, errors.New("boom")) // reported at every re-watch
		fake.CutWatches()
		time.Sleep(time.Minute)
		synctest.Wait()
		if got.Load() == 0 {
			t.Fatal("no error reached the ErrorHandler")
		}
		start := time.Now()
		cancel()
		if err := <-ran; err != nil {
			t.Fatalf("Run = %v", err)
		}
		if waited := time.Since(start); waited != 2*time.Second {
			t.Errorf("Run returned %v after cancel, want StopTimeout (2s; fake time)", waited)
		}
		close(release)
		synctest.Wait() // the reporter hands the rest over and ends
	})
}
