package typed_test

// Reliability tests for handlers: churn (fault 18), a slow handler (16), a
// panicking one (17), and a handler added while the initial list arrives.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/informertest"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// TestReliabilityHandlerChurn: 100 goroutines add and remove handlers while
// 10k events flow (fault 18), then half of them keep their last handler.
// Every handler's first calls are one initial Add per cached object, each
// for a distinct key, and the snapshot is exactly the server's state just
// before the handler's first live event (a consistent snapshot); then live
// events, each once (I3, I4 per key, checked for every handler). Handlers
// still registered at the end replay to the final cache (I1, I2). Then the
// informer is stopped in the middle of more churn: no handler is called
// after Run returned, AddHandler afterwards returns ErrStopped (I6), and no
// goroutine is left (I5, the package's TestMain).
func TestReliabilityHandlerChurn(t *testing.T) {
	rngMain := seeded(t, 0)
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{Window: 20000}, it.Pods(300)...)
	inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{})
	var afterRun atomic.Bool
	stop := it.Run(t, inf)
	if err := inf.WaitForSync(context.Background()); err != nil {
		t.Fatal(err)
	}
	it.Eventually(t, "caught up", func() bool { return inf.LastSyncResourceVersion() == fake.ResourceVersion() })

	log := &opLog{seed: map[cache.Key]string{}}
	for _, p := range fake.Items() {
		log.seed[cache.KeyOf(p)] = p.ResourceVersion
	}
	type reg struct {
		tr    *tracker
		r     *typed.Registration
		stays bool
	}
	var mu sync.Mutex
	var regs []*reg
	// churn adds and removes handlers until stop, waiting up to gapMillis
	// between a removal and the next add.
	churn := func(seed uint64, stop <-chan struct{}, keepLast bool, gapMillis int) {
		rng := rand.New(rand.NewPCG(seed, 7))
		for {
			tr := newTracker(&afterRun)
			r, err := inf.AddHandler(tr.handler())
			if errors.Is(err, typed.ErrStopped) {
				return
			}
			if err != nil {
				t.Errorf("AddHandler: %v", err)
				return
			}
			rg := &reg{tr: tr, r: r}
			mu.Lock()
			regs = append(regs, rg)
			mu.Unlock()
			time.Sleep(time.Duration(rng.IntN(10000)) * time.Microsecond)
			select {
			case <-stop:
				if keepLast {
					rg.stays = true
					return
				}
			default:
			}
			if err := inf.RemoveHandler(r); err != nil {
				t.Errorf("RemoveHandler: %v", err)
			}
			select {
			case <-stop:
				if !keepLast {
					return
				}
			case <-time.After(time.Duration(rng.IntN(gapMillis)) * time.Millisecond):
			}
		}
	}

	// Phase 1: 10k events while handlers churn.
	stopChurn := make(chan struct{})
	var wg sync.WaitGroup
	base := rngMain.Uint64()
	for i := range 100 {
		wg.Go(func() { churn(base+uint64(i), stopChurn, i%2 == 0, 10) })
	}
	churnOps(t, fake, rand.New(rand.NewPCG(base, 2)), 10000, log, nil, 0)
	close(stopChurn)
	wg.Wait()

	want := informertest.StateOf(fake.Items())
	it.Eventually(t, "cache converges", func() bool { return maps.Equal(want, informertest.StateOf(inf.Store().List())) })
	var stayers []*reg
	for _, rg := range regs {
		if rg.stays {
			stayers = append(stayers, rg)
		}
	}
	if len(stayers) != 50 {
		t.Fatalf("%d handlers stayed, want 50", len(stayers))
	}
	for i, rg := range stayers {
		it.Eventually(t, fmt.Sprintf("stayer %d converges", i), func() bool { return maps.Equal(want, rg.tr.rec.Replay()) })
		rg.tr.rec.Check(t, want)
	}
	if st := inf.Status().Stats; st.Relists != 0 {
		t.Fatalf("relists happened (%+v): the snapshot check below assumes none", st)
	}

	// Consistent snapshots: a handler whose first live event has RV F saw
	// as its snapshot exactly the server's state at F-1 (every change makes
	// one event with the next RV, and none is dropped).
	type snap struct {
		at   int64
		got  map[cache.Key]string
		name string
	}
	var snaps []snap
	for i, rg := range regs {
		rg.tr.mu.Lock()
		if rg.tr.firstLiveRV != 0 {
			snaps = append(snaps, snap{at: rg.tr.firstLiveRV - 1, got: maps.Clone(rg.tr.initial), name: fmt.Sprintf("handler %d", i)})
		}
		rg.tr.mu.Unlock()
	}
	slices.SortFunc(snaps, func(a, b snap) int { return int(a.at - b.at) })
	cur, next := maps.Clone(log.seed), 0
	for _, s := range snaps {
		for ; next < len(log.ops) && log.ops[next].rv <= s.at; next++ {
			op := log.ops[next]
			if op.del {
				delete(cur, op.key)
			} else {
				cur[op.key] = strconv.FormatInt(op.rv, 10)
			}
		}
		if !maps.Equal(cur, s.got) {
			t.Errorf("%s: snapshot is not the server's state at RV %d (-want +got):\n%s", s.name, s.at, cmp.Diff(cur, s.got))
			break
		}
	}
	t.Logf("%d handlers registered, %d snapshots checked against the server's history", len(regs), len(snaps))
	if len(snaps) < 10 {
		t.Errorf("only %d snapshots checked: the test tests little", len(snaps))
	}

	// Phase 2: stop in the middle of handler and event churn.
	stopChurn2 := make(chan struct{})
	for i := range 100 {
		wg.Go(func() { churn(base+uint64(1000+i), stopChurn2, false, 5) })
	}
	wg.Go(func() { churnOps(t, fake, rand.New(rand.NewPCG(base, 4)), 1<<30, nil, stopChurn2, 10) })
	time.Sleep(time.Duration(5+rngMain.IntN(30)) * time.Millisecond)
	stop()
	afterRun.Store(true)
	if _, err := inf.AddHandler(newTracker(&afterRun).handler()); !errors.Is(err, typed.ErrStopped) {
		t.Errorf("AddHandler after Run returned = %v, want ErrStopped", err)
	}
	close(stopChurn2)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	bad := 0
	for i, rg := range regs {
		if p := rg.tr.problems(); len(p) > 0 {
			bad++
			if bad <= 5 {
				t.Errorf("handler %d: %d violations, first: %v", i, len(p), p[:min(5, len(p))])
			}
		}
	}
}

// slowHandler wraps a handler so that every call first sleeps (virtual time
// in a bubble).
func slowHandler(h handler.Handler[*corev1.Pod], d time.Duration) handler.Funcs[*corev1.Pod] {
	return handler.Funcs[*corev1.Pod]{
		AddFunc:    func(p *corev1.Pod, initial bool) { time.Sleep(d); h.OnAdd(p, initial) },
		UpdateFunc: func(old, cur *corev1.Pod) { time.Sleep(d); h.OnUpdate(old, cur) },
		DeleteFunc: func(del handler.Deleted[*corev1.Pod]) { time.Sleep(d); h.OnDelete(del) },
	}
}

// TestReliabilitySlowHandler runs a handler that takes a second per event
// beside a fast one (fault 16). The fast one converges with no (virtual)
// time passing while the slow one is still far behind, its backlog visible
// in Registration.Pending; the slow one still ends on each key's final
// state. Checks I1, I2-I4 for both, and I6 (backlog visible).
func TestReliabilitySlowHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(120)...)
		inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{})
		fast, slow := it.NewRecorder(), it.NewRecorder()
		fastReg, err := inf.AddHandler(fast)
		if err != nil {
			t.Fatal(err)
		}
		slowReg, err := inf.AddHandler(slowHandler(slow, time.Second))
		if err != nil {
			t.Fatal(err)
		}
		it.Run(t, inf)
		if err := inf.WaitForSync(context.Background()); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		for i := range 100 {
			switch i % 3 {
			case 0:
				_, err = fake.Create(it.Pod("ns-9", fmt.Sprintf("n-%d", i), nil))
			case 1: // p-(i-1) is in ns-0 and never deleted
				_, err = fake.Update(it.Pod("ns-0", fmt.Sprintf("p-%d", i-1), map[string]string{"i": fmt.Sprint(i)}))
			case 2: // p-i is in ns-2
				_, err = fake.Delete(cache.Key{Namespace: "ns-2", Name: fmt.Sprintf("p-%d", i)})
			}
			if err != nil {
				t.Fatalf("op %d: %v", i, err)
			}
		}
		want := informertest.StateOf(fake.Items())
		synctest.Wait() // everything but the slow handler's sleep is idle
		if diff := cmp.Diff(want, fast.Replay()); diff != "" {
			t.Errorf("fast handler delayed by the slow one: not converged while the slow one sleeps (-want +got):\n%s", diff)
		}
		if d := time.Since(t0); d != 0 {
			t.Errorf("fast handler converged after %v of virtual time, want 0: it waited for the slow one", d)
		}
		if p := fastReg.Pending(); p != 0 {
			t.Errorf("fast Pending() = %d, want 0", p)
		}
		backlog := slowReg.Pending()
		if backlog <= 0 {
			t.Errorf("I6: slow Pending() = %d while it is behind, want > 0", backlog)
		}
		if maps.Equal(want, slow.Replay()) {
			t.Errorf("slow handler already converged: the test tests nothing")
		}
		t.Logf("slow backlog %d", backlog)
		for i := 0; slowReg.Pending() > 0; i++ {
			if i > 1000 {
				t.Fatalf("slow handler stuck at Pending() = %d", slowReg.Pending())
			}
			time.Sleep(time.Second)
		}
		synctest.Wait()
		if diff := cmp.Diff(want, informertest.StateOf(inf.Store().List())); diff != "" {
			t.Errorf("I1: cache (-want +got):\n%s", diff)
		}
		fast.Check(t, want)
		slow.Check(t, want)
	})
}

// TestReliabilityPanickingHandler runs handlers that panic during the
// initial list and later (fault 17): one on every third call (it records
// the call first), one on every call. Another handler is unaffected (I2-I4);
// every panic reaches the ErrorHandler wrapped in ErrHandlerPanic with its
// value and the handler's name (I6) and is counted in Registration.Panics;
// the panicking handlers' registrations still sync and they keep getting
// calls, so the one that records still ends on the final state (I2).
func TestReliabilityPanickingHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(30)...)
		var errs it.ErrSink
		inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle})
		good, flaky := it.NewRecorder(), it.NewRecorder()
		goodReg, err := inf.AddHandler(good)
		if err != nil {
			t.Fatal(err)
		}
		var flakyCalls, flakyPanics, alwaysCalls atomic.Int64
		maybePanic := func() {
			if flakyCalls.Add(1)%3 == 0 {
				flakyPanics.Add(1)
				panic(fmt.Sprintf("flaky boom %d", flakyCalls.Load()))
			}
		}
		fh := flaky
		flakyReg, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{
			AddFunc:    func(p *corev1.Pod, initial bool) { fh.OnAdd(p, initial); maybePanic() },
			UpdateFunc: func(old, cur *corev1.Pod) { fh.OnUpdate(old, cur); maybePanic() },
			DeleteFunc: func(d handler.Deleted[*corev1.Pod]) { fh.OnDelete(d); maybePanic() },
		})
		if err != nil {
			t.Fatal(err)
		}
		boom := func() { alwaysCalls.Add(1); panic("always boom") }
		alwaysReg, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{
			AddFunc:    func(*corev1.Pod, bool) { boom() },
			UpdateFunc: func(_, _ *corev1.Pod) { boom() },
			DeleteFunc: func(handler.Deleted[*corev1.Pod]) { boom() },
		})
		if err != nil {
			t.Fatal(err)
		}
		it.Run(t, inf)
		if err := typed.WaitForCacheSync(context.Background(), inf, goodReg, flakyReg, alwaysReg); err != nil {
			t.Fatal(err)
		}
		if flakyPanics.Load() == 0 || alwaysCalls.Load() != 30 {
			t.Fatalf("no panic during the initial list: flaky %d, always %d calls", flakyPanics.Load(), alwaysCalls.Load())
		}
		churnFake(t, fake, "1")
		churnFake(t, fake, "2")
		it.Converge(t, fake, inf.Store(), good, flaky)
		synctest.Wait()

		if got, want := flakyReg.Panics(), flakyPanics.Load(); got != want {
			t.Errorf("flaky Panics() = %d, want %d", got, want)
		}
		if got, want := alwaysReg.Panics(), alwaysCalls.Load(); got != want {
			t.Errorf("always Panics() = %d, want %d (one per call)", got, want)
		}
		if goodReg.Panics() != 0 {
			t.Errorf("good Panics() = %d", goodReg.Panics())
		}
		wantPanics := int(flakyPanics.Load() + alwaysCalls.Load())
		if n := errs.Count(it.Is(typed.ErrHandlerPanic)); n != wantPanics {
			t.Errorf("I6: %d ErrHandlerPanic errors reported, want %d", n, wantPanics)
		}
		for _, err := range errs.All() {
			switch {
			case !errors.Is(err, typed.ErrHandlerPanic):
				t.Errorf("unexpected error %v", err)
			case !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), "handler pods#"):
				t.Errorf("panic report %q lacks the panic value or the handler's name", err)
			}
		}
		if alwaysCalls.Load() <= 30 {
			t.Errorf("always-panicking handler got %d calls, want calls after the initial list too", alwaysCalls.Load())
		}
	})
}

// TestReliabilityLateHandlerDuringInitialList adds a handler while the
// informer is still receiving a 20k-object initial list (the list is held
// half way by an index function, which runs as each object arrives, so the
// moment is certain): the late handler, like one added before Run, gets
// exactly one Add per object (all marked initial), its registration syncs,
// and then it gets live events once (I2, I4).
func TestReliabilityLateHandlerDuringInitialList(t *testing.T) {
	const n = 20000
	for _, watchList := range []bool{true, false} {
		t.Run(fmt.Sprintf("watchList=%v", watchList), func(t *testing.T) {
			fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: !watchList}, it.Pods(n)...)
			var indexed atomic.Int64
			reached, gate := make(chan struct{}), make(chan struct{})
			var openGate sync.Once
			release := func() { openGate.Do(func() { close(gate) }) }
			defer release()
			inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{NoWatchList: !watchList, Indexers: cache.Indexers[*corev1.Pod]{
				"gate": func(*corev1.Pod) ([]string, error) {
					if indexed.Add(1) == n/2 {
						close(reached)
						<-gate
					}
					return nil, nil
				},
			}})
			early, late := newTracker(nil), newTracker(nil)
			earlyReg, err := inf.AddHandler(early.handler())
			if err != nil {
				t.Fatal(err)
			}
			it.Run(t, inf)
			select {
			case <-reached:
			case <-time.After(2 * time.Minute):
				t.Fatal("initial list never reached the gate")
			}
			lateReg, err := inf.AddHandler(late.handler())
			if err != nil {
				t.Fatal(err)
			}
			if inf.HasSynced() || inf.Store().Len() != 0 {
				t.Fatalf("half the list arrived and the informer is synced (%v) with %d objects: not atomic", inf.HasSynced(), inf.Store().Len())
			}
			release()
			if err := typed.WaitForCacheSync(t.Context(), inf, earlyReg, lateReg); err != nil {
				t.Fatal(err)
			}
			for name, tr := range map[string]*tracker{"early": early, "late": late} {
				if got := tr.initialCount(); got != n {
					t.Errorf("%s handler: %d initial Adds, want %d", name, got, n)
				}
				if calls := tr.callCount(); calls != n {
					t.Errorf("%s handler: %d calls for %d objects, want exactly one each", name, calls, n)
				}
			}
			if _, err := fake.Update(it.Pod("ns-0", "p-0", map[string]string{"live": "1"})); err != nil {
				t.Fatal(err)
			}
			it.Converge(t, fake, inf.Store(), early.rec, late.rec)
			for name, tr := range map[string]*tracker{"early": early, "late": late} {
				if p := tr.problems(); len(p) > 0 {
					t.Errorf("%s handler: %d violations, first: %v", name, len(p), p[:min(5, len(p))])
				}
				evs := tr.rec.Events(cache.Key{Namespace: "ns-0", Name: "p-0"})
				if len(evs) != 2 || evs[1].Kind != "update" {
					t.Errorf("%s handler: events of p-0 = %+v, want the initial Add and one Update", name, evs)
				}
			}
		})
	}
}
