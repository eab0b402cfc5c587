package typed_test

// Reliability tests, continued: handler churn (fault 18), resync (19),
// transform errors and stops at random points (20), managedFields, and a
// handler added while the initial list is being processed.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// tracker is a handler that checks, besides the per-key invariants of its
// recorder (I3, I4), the order of its calls: first the initial Adds of its
// snapshot, each for a distinct key, then live calls only; and that it is
// never called once stopped is set (after Run returned).
type tracker struct {
	rec     *recorder
	stopped *atomic.Bool

	mu          sync.Mutex
	initial     map[cache.Key]string // snapshot: key -> RV of its initial Add
	firstLiveRV int64                // RV of the first live call, 0 if none
	violations  []string
}

func newTracker(stopped *atomic.Bool) *tracker {
	return &tracker{rec: newRecorder(), stopped: stopped, initial: map[cache.Key]string{}}
}

func (tr *tracker) note(k cache.Key, p *corev1.Pod, initial bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.stopped != nil && tr.stopped.Load() {
		tr.violations = append(tr.violations, fmt.Sprintf("I6 %v: handler called after Run returned", k))
	}
	switch {
	case initial && tr.firstLiveRV != 0:
		tr.violations = append(tr.violations, fmt.Sprintf("I4 %v: initial Add after live calls", k))
	case initial:
		if _, dup := tr.initial[k]; dup {
			tr.violations = append(tr.violations, fmt.Sprintf("I4 %v: two initial Adds", k))
		}
		tr.initial[k] = p.ResourceVersion
	case tr.firstLiveRV == 0 && p != nil:
		tr.firstLiveRV = rvOf(p)
	}
}

func (tr *tracker) handler() handler.Funcs[*corev1.Pod] {
	h := tr.rec.handler()
	return handler.Funcs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, initial bool) {
			tr.note(cache.KeyOf(p), p, initial)
			h.AddFunc(p, initial)
		},
		UpdateFunc: func(old, cur *corev1.Pod) {
			tr.note(cache.KeyOf(cur), cur, false)
			h.UpdateFunc(old, cur)
		},
		DeleteFunc: func(d handler.Deleted[*corev1.Pod]) {
			tr.note(d.Key, d.Obj, false)
			h.DeleteFunc(d)
		},
	}
}

func (tr *tracker) problems() []string {
	tr.mu.Lock()
	out := slices.Clone(tr.violations)
	tr.mu.Unlock()
	tr.rec.mu.Lock()
	out = append(out, tr.rec.violations...)
	tr.rec.mu.Unlock()
	return out
}

// opLog is the history of the only writer of a fake: enough to rebuild
// the server's state (key -> RV) at any resourceVersion.
type opLog struct {
	seed map[cache.Key]string
	ops  []logOp
}

type logOp struct {
	rv  int64
	key cache.Key
	del bool
}

// churnOps makes n random changes to fake (adds, updates, deletes of a
// population around its initial size) and logs them; with pace > 0 it
// sleeps a millisecond every pace changes, so the changes are spread out.
func churnOps(t *testing.T, fake *source.Fake[*corev1.Pod], rng *rand.Rand, n int, log *opLog, stop <-chan struct{}, pace int) {
	var live []cache.Key
	for _, p := range fake.Items() {
		live = append(live, cache.KeyOf(p))
	}
	for i := range n {
		select {
		case <-stop:
			return
		default:
		}
		var p *corev1.Pod
		var err error
		del := false
		switch r := rng.IntN(100); {
		case r < 30 || len(live) < 10:
			p, err = fake.Add(pod(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("c-%d-%d", rng.Uint32(), i), nil))
			if err == nil {
				live = append(live, cache.KeyOf(p))
			}
		case r < 75:
			k := live[rng.IntN(len(live))]
			p, err = fake.Update(pod(k.Namespace, k.Name, map[string]string{"i": strconv.Itoa(i)}))
		default:
			j := rng.IntN(len(live))
			p, err = fake.Delete(live[j])
			live[j] = live[len(live)-1]
			live = live[:len(live)-1]
			del = true
		}
		if err != nil {
			t.Errorf("churn op %d: %v", i, err)
			return
		}
		if log != nil {
			log.ops = append(log.ops, logOp{rv: rvOf(p), key: cache.KeyOf(p), del: del})
		}
		if pace > 0 && i%pace == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

// TestReliabilityHandlerChurn: 100 goroutines add and remove handlers while
// 10k events flow (fault 18), then half of them keep their last handler.
// Every handler's first calls are one initial Add per cached object, each
// for a distinct key, and the snapshot is exactly the server's state just
// before the handler's first live event (a consistent snapshot); then live
// events, each once (I3, I4 per key, checked for every handler). Handlers
// still registered at the end replay to the final cache (I1, I2). Then the
// informer is stopped in the middle of more churn: no handler is called
// after Run returned, AddHandler afterwards returns ErrStopped (I6), and no
// goroutine is left (I5).
func TestReliabilityHandlerChurn(t *testing.T) {
	leakcheck.Check(t)
	fake := source.NewFake(source.FakeOptions[*corev1.Pod]{Objects: seedPods(300), Window: 20000})
	inf := typed.NewInformer(fake, typed.Options[*corev1.Pod]{})
	var afterRun atomic.Bool
	stop := runInformer(t, inf)
	if err := inf.WaitForSync(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "caught up", func() bool { return inf.LastSyncResourceVersion() == fake.ResourceVersion() })

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
	for i := range 100 {
		wg.Go(func() { churn(uint64(i), stopChurn, i%2 == 0, 10) })
	}
	churnOps(t, fake, rand.New(rand.NewPCG(1, 2)), 10000, log, nil, 0)
	close(stopChurn)
	wg.Wait()

	want := stateOf(fake.Items())
	eventually(t, "cache converges", func() bool { return maps.Equal(want, stateOf(inf.Store().List())) })
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
		eventually(t, fmt.Sprintf("stayer %d converges", i), func() bool { return maps.Equal(want, rg.tr.rec.replay()) })
		checkRecorder(t, rg.tr.rec, want)
	}
	if st := inf.Stats(); st.Relists != 0 {
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
		wg.Go(func() { churn(uint64(1000+i), stopChurn2, false, 5) })
	}
	wg.Go(func() { churnOps(t, fake, rand.New(rand.NewPCG(3, 4)), 1<<30, nil, stopChurn2, 10) })
	time.Sleep(time.Duration(5+rand.IntN(30)) * time.Millisecond)
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

// sameObjectCounter counts OnUpdate calls with old == new (the same
// pointer: a resync) and checks that a resync never delivers a state other
// than the last one the handler got for that key (I3).
type sameObjectCounter struct {
	mu         sync.Mutex
	last       map[cache.Key]string
	resyncs    int
	violations []string
}

func (c *sameObjectCounter) handler() handler.Funcs[*corev1.Pod] {
	c.last = map[cache.Key]string{}
	return handler.Funcs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, _ bool) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.last[cache.KeyOf(p)] = p.ResourceVersion
		},
		UpdateFunc: func(old, cur *corev1.Pod) {
			c.mu.Lock()
			defer c.mu.Unlock()
			k := cache.KeyOf(cur)
			if old == cur {
				c.resyncs++
				if c.last[k] != cur.ResourceVersion {
					c.violations = append(c.violations, fmt.Sprintf("I3 %v: resync delivered RV %s after RV %s", k, cur.ResourceVersion, c.last[k]))
				}
			}
			c.last[k] = cur.ResourceVersion
		},
		DeleteFunc: func(d handler.Deleted[*corev1.Pod]) {
			c.mu.Lock()
			defer c.mu.Unlock()
			delete(c.last, d.Key)
		},
	}
}

func (c *sameObjectCounter) counts() (int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resyncs, slices.Clone(c.violations)
}

// TestReliabilityResync checks Options.ResyncPeriod (fault 19): a quiet
// resync gives exactly one OnUpdate(obj, obj) (the same pointer) per cached
// object per period and never a LIST, neither a paged one nor a streaming
// one (I8); updates racing resyncs yield the updates' semantics, the last
// event per key is the final RV and no older RV follows a newer one (I2,
// I3); resyncs that fire before any handler is added and before the first
// sync neither deadlock nor disturb the initial Adds (I4, I6).
func TestReliabilityResync(t *testing.T) {
	for _, watchList := range []bool{true, false} {
		t.Run(fmt.Sprintf("quiet/watchList=%v", watchList), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := source.NewFake(source.FakeOptions[*corev1.Pod]{Objects: seedPods(20), NoWatchList: !watchList})
				inf := typed.NewInformer(fake, typed.Options[*corev1.Pod]{ResyncPeriod: time.Minute})
				var c sameObjectCounter
				rec := newRecorder()
				for _, h := range []handler.Funcs[*corev1.Pod]{c.handler(), rec.handler()} {
					if _, err := inf.AddHandler(h); err != nil {
						t.Fatal(err)
					}
				}
				runInformer(t, inf)
				if err := inf.WaitForSync(context.Background()); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				lists, stats := fake.ListCalls(), inf.Stats()
				time.Sleep(3*time.Minute + 30*time.Second)
				synctest.Wait()
				resyncs, bad := c.counts()
				if resyncs != 3*20 {
					t.Errorf("%d resync updates in 3.5 periods, want %d (3 per object)", resyncs, 3*20)
				}
				if len(bad) > 0 {
					t.Errorf("resync violations: %v", bad)
				}
				after := inf.Stats()
				if diff := cmp.Diff(stats, after); diff != "" {
					t.Errorf("I8: resync changed the list/watch counters (-before +after):\n%s", diff)
				}
				if got := fake.ListCalls(); got != lists {
					t.Errorf("I8: resync made %d LIST calls", got-lists)
				}
				checkRecorder(t, rec, stateOf(fake.Items()))
			})
		})
	}

	t.Run("racing updates", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fake := source.NewFake(source.FakeOptions[*corev1.Pod]{Objects: seedPods(6), NoWatchList: true})
			const period = 10 * time.Millisecond
			inf := typed.NewInformer(fake, typed.Options[*corev1.Pod]{ResyncPeriod: period})
			var c sameObjectCounter
			rec := newRecorder()
			for _, h := range []handler.Funcs[*corev1.Pod]{c.handler(), rec.handler()} {
				if _, err := inf.AddHandler(h); err != nil {
					t.Fatal(err)
				}
			}
			runInformer(t, inf)
			if err := inf.WaitForSync(context.Background()); err != nil {
				t.Fatal(err)
			}
			keys := sortedKeys(stateOf(fake.Items()))
			var wg sync.WaitGroup
			for w := range 3 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 9))
					for i := range 300 {
						k := keys[rng.IntN(len(keys))]
						if _, err := fake.Update(pod(k.Namespace, k.Name, map[string]string{"w": fmt.Sprint(w), "i": fmt.Sprint(i)})); err != nil {
							t.Error(err)
							return
						}
						// Wake up on resync ticks, so updates and resyncs
						// run at the same instant.
						time.Sleep(time.Duration(rng.IntN(3)) * period)
					}
				})
			}
			wg.Wait()
			converge(t, fake, inf, rec)
			synctest.Wait()
			resyncs, bad := c.counts()
			if resyncs == 0 {
				t.Error("no resync happened: the test tests nothing")
			}
			if len(bad) > 0 {
				t.Errorf("%d resync violations, first: %v", len(bad), bad[:min(5, len(bad))])
			}
			if got := fake.ListCalls(); got != 1 {
				t.Errorf("I8: %d LIST calls, want 1 (resync never lists)", got)
			}
			if st := inf.Stats(); st.Lists != 1 || st.Relists != 0 {
				t.Errorf("I8: stats %+v, want one list and no relist", st)
			}
		})
	})

	t.Run("before handlers and before sync", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fake := source.NewFake(source.FakeOptions[*corev1.Pod]{Objects: seedPods(25), NoWatchList: true})
			fake.FailLists(4, nil) // several backoffs, many resync ticks, before the first sync
			inf := typed.NewInformer(fake, typed.Options[*corev1.Pod]{ResyncPeriod: 10 * time.Millisecond, ErrorHandler: func(error) {}})
			early := newTracker(nil)
			earlyReg, err := inf.AddHandler(early.handler())
			if err != nil {
				t.Fatal(err)
			}
			var resyncs atomic.Int64
			runInformer(t, inf)
			// Resyncs tick on an empty, unsynced cache.
			time.Sleep(500 * time.Millisecond)
			if inf.HasSynced() {
				t.Fatal("synced despite failing lists: the test tests nothing")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if err := inf.WaitForSync(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // resyncs with one handler
			late := newTracker(nil)
			lateReg, err := inf.AddHandler(late.handler())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{UpdateFunc: func(old, cur *corev1.Pod) {
				if old == cur {
					resyncs.Add(1)
				}
			}}); err != nil {
				t.Fatal(err)
			}
			if !typed.WaitForCacheSync(ctx, earlyReg.HasSynced, lateReg.HasSynced) {
				t.Fatal("registrations did not sync: deadlock?")
			}
			churnFake(t, fake, "x")
			converge(t, fake, inf, early.rec, late.rec)
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			for name, tr := range map[string]*tracker{"early": early, "late": late} {
				if p := tr.problems(); len(p) > 0 {
					t.Errorf("%s handler: %v", name, p)
				}
				tr.mu.Lock()
				n := len(tr.initial)
				tr.mu.Unlock()
				if n != 25 {
					t.Errorf("%s handler got %d initial Adds, want 25", name, n)
				}
			}
			if resyncs.Load() == 0 {
				t.Error("no resync reached the last handler")
			}
		})
	})
}

var errTransform = errors.New("transform refuses this object")

// TestReliabilityTransformError makes Options.Transform fail for some
// objects (fault 20). During the initial list: the error reaches the
// ErrorHandler and WaitForSync (I6), nothing is published (no half list:
// cache empty, not synced), the informer retries with backoff, boundedly
// (I8), and syncs with the object once the transform stops failing (I1).
// After sync, on live events: the informer does not move its
// resourceVersion past the event it could not take, later changes wait
// behind it, SyncStatus carries the error all along (never silently stale,
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
// failing is set.
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
	seed := append(seedPods(20), pod("ns-0", "bad", nil))
	fake := source.NewFake(source.FakeOptions[*corev1.Pod]{Objects: seed, NoWatchList: !watchList})
	var failing atomic.Bool
	var failures atomic.Int64
	failing.Store(true)
	var errs errSink
	inf := typed.NewInformer(fake, typed.Options[*corev1.Pod]{
		Transform: failingTransform(&failing, &failures), ErrorHandler: errs.handle,
	})
	rec := newRecorder()
	reg, err := inf.AddHandler(rec.handler())
	if err != nil {
		t.Fatal(err)
	}
	runInformer(t, inf)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = inf.WaitForSync(ctx)
	if !errors.Is(err, errTransform) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("I6: WaitForSync = %v, want the transform error and the deadline", err)
	}
	if st := inf.SyncStatus(); st.Synced || !errors.Is(st.LastError, errTransform) {
		t.Errorf("I6: SyncStatus = %+v, want not synced, with the transform error", st)
	}
	if errs.count(isErr(errTransform)) == 0 {
		t.Errorf("I6: ErrorHandler got no transform error: %v", errs.all())
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
	converge(t, fake, inf, rec)
	if st := inf.SyncStatus(); st.LastError != nil {
		t.Errorf("SyncStatus.LastError = %v after recovery, want nil", st.LastError)
	}
}

func transformLive(t *testing.T, watchList bool) {
	seed := append(seedPods(20), pod("ns-0", "bad", nil))
	fake := source.NewFake(source.FakeOptions[*corev1.Pod]{Objects: seed, NoWatchList: !watchList})
	var failing atomic.Bool
	var failures atomic.Int64
	var errs errSink
	inf := typed.NewInformer(fake, typed.Options[*corev1.Pod]{
		Transform: failingTransform(&failing, &failures), ErrorHandler: errs.handle,
	})
	rec := newRecorder()
	if _, err := inf.AddHandler(rec.handler()); err != nil {
		t.Fatal(err)
	}
	runInformer(t, inf)
	if err := inf.WaitForSync(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "watch open", func() bool { return fake.OpenWatches() == 1 })
	converge(t, fake, inf, rec)
	synctest.Wait()
	before := stateOf(inf.Store().List())
	rvBefore := inf.LastSyncResourceVersion()
	listsBefore := inf.Stats()

	failing.Store(true)
	badKey := cache.Key{Namespace: "ns-0", Name: "bad"}
	if _, err := fake.Update(pod("ns-0", "bad", map[string]string{"v": "2"})); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.Add(pod("ns-1", "bad-new", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.Update(pod("ns-0", "p-0", map[string]string{"v": "2"})); err != nil {
		t.Fatal(err)
	}
	for range 6 { // a minute, in steps
		time.Sleep(10 * time.Second)
		synctest.Wait()
		st := inf.SyncStatus()
		if !errors.Is(st.LastError, errTransform) {
			t.Fatalf("I6: SyncStatus = %+v while the transform fails, want its error", st)
		}
		if rv := inf.LastSyncResourceVersion(); rv != rvBefore {
			t.Fatalf("resourceVersion moved from %s to %s past an event the cache did not take", rvBefore, rv)
		}
		if diff := cmp.Diff(before, stateOf(inf.Store().List())); diff != "" {
			t.Fatalf("cache changed past the failed event (-before +now):\n%s", diff)
		}
	}
	if got := rec.replay()[badKey]; got != before[badKey] {
		t.Errorf("handler state of %v = %q, want the last taken %q", badKey, got, before[badKey])
	}
	after := inf.Stats()
	if n := (after.Lists + after.WatchLists) - (listsBefore.Lists + listsBefore.WatchLists); n < 1 || n > 15 {
		t.Errorf("I8: %d relists in a minute of failing transform, want a few (1-15)", n)
	}
	if errs.count(isErr(errTransform)) == 0 {
		t.Errorf("I6: ErrorHandler got no transform error: %v", errs.all())
	}
	failing.Store(false)
	converge(t, fake, inf, rec)
	synctest.Wait()
	if st := inf.SyncStatus(); !st.Synced || st.LastError != nil {
		t.Errorf("SyncStatus after recovery = %+v", st)
	}
}

// TestReliabilityStopAtRandomMoments stops Run at 200 random moments
// (fault 20): right away, during the initial list of up to 2000 objects,
// during live churn with watch cuts, with and without streaming lists,
// resync and a transform, while another goroutine adds a handler. Run
// returns within a generous deadlock guard (I6), no handler is called
// after it returned (I6), AddHandler then returns ErrStopped, and no
// goroutine is left (I5, leakcheck over the whole test). Every handler
// keeps I3 and I4 up to the stop.
func TestReliabilityStopAtRandomMoments(t *testing.T) {
	leakcheck.Check(t)
	fakes := []*source.Fake[*corev1.Pod]{
		source.NewFake(source.FakeOptions[*corev1.Pod]{}),
		source.NewFake(source.FakeOptions[*corev1.Pod]{Objects: seedPods(50)}),
		source.NewFake(source.FakeOptions[*corev1.Pod]{Objects: seedPods(2000), Window: 100000}),
	}
	// Churn on the mid-sized fake throughout, with watch cuts.
	stopChurn := make(chan struct{})
	var churnWG sync.WaitGroup
	churnWG.Go(func() {
		rng := rand.New(rand.NewPCG(5, 6))
		for i := 0; ; i++ {
			select {
			case <-stopChurn:
				return
			case <-time.After(200 * time.Microsecond):
			}
			churnOps(t, fakes[1], rng, 5, nil, stopChurn, 0)
			if i%20 == 0 {
				fakes[1].CutWatches()
			}
		}
	})
	defer func() { close(stopChurn); churnWG.Wait() }()

	rng := rand.New(rand.NewPCG(42, 42))
	var problems []string
	for it := range 200 {
		fake := fakes[rng.IntN(len(fakes))]
		opts := typed.Options[*corev1.Pod]{NoWatchList: rng.IntN(2) == 0, ErrorHandler: func(error) {}}
		if rng.IntN(4) == 0 {
			opts.ResyncPeriod = time.Millisecond
		}
		if rng.IntN(4) == 0 {
			opts.Transform = func(p *corev1.Pod) (*corev1.Pod, error) { return p, nil }
		}
		inf := typed.NewInformer(fake, opts)
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
				t.Errorf("iteration %d: Run = %v", it, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("iteration %d: I6: Run did not return within a minute of cancel (deadlock)", it)
		}
		afterRun.Store(true)
		if err := <-addDone; err != nil && !errors.Is(err, typed.ErrStopped) {
			t.Errorf("iteration %d: concurrent AddHandler = %v", it, err)
		}
		if _, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{}); !errors.Is(err, typed.ErrStopped) {
			t.Errorf("iteration %d: AddHandler after Run returned = %v, want ErrStopped", it, err)
		}
		if err := inf.Run(context.Background()); !errors.Is(err, typed.ErrStopped) {
			t.Errorf("iteration %d: second Run = %v, want ErrStopped", it, err)
		}
		// Give a stray handler call the chance to happen, then look.
		runtime.Gosched()
		for _, tr := range []*tracker{first, second} {
			for _, p := range tr.problems() {
				problems = append(problems, fmt.Sprintf("iteration %d (delay %v): %s", it, delay, p))
			}
		}
	}
	if len(problems) > 0 {
		t.Errorf("%d violations, first: %v", len(problems), problems[:min(10, len(problems))])
	}
}

// managedFieldsPod is a pod with a managedFields entry.
func managedFieldsPod(ns, name string) *corev1.Pod {
	p := pod(ns, name, nil)
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
				fake := source.NewFake(source.FakeOptions[*corev1.Pod]{
					Objects: []*corev1.Pod{managedFieldsPod("ns", "a"), managedFieldsPod("ns", "b")},
				})
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
				inf := typed.NewInformer(fake, typed.Options[*corev1.Pod]{
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
				runInformer(t, inf)
				if err := inf.WaitForSync(context.Background()); err != nil {
					t.Fatal(err)
				}
				if _, err := fake.Add(managedFieldsPod("ns", "c")); err != nil {
					t.Fatal(err)
				}
				if _, err := fake.Update(managedFieldsPod("ns", "a")); err != nil {
					t.Fatal(err)
				}
				converge(t, fake, inf)
				synctest.Wait()
				for _, p := range inf.Store().List() {
					note("cache", p)
				}
				want := map[string]int{"transform": 0, "handler": 0, "cache": 0}
				if keep {
					// 2 listed + 1 added + 1 updated; the cache holds 3.
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

// blockedOnMutex waits until a goroutine is blocked on a mutex inside fn.
func blockedOnMutex(t *testing.T, fn string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, fn) && strings.Contains(g, "sync.(*Mutex).") {
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("no goroutine blocked on a mutex in %s", fn)
}

// TestReliabilityLateHandlerDuringInitialList adds a handler while the
// informer is still applying a 20k-object initial list (held at a known
// point by an index function, so the moment is certain): the late handler,
// like one added before Run, gets exactly one Add per object (all marked
// initial), its HasSynced becomes true, and then it gets live events once
// (I2, I4).
func TestReliabilityLateHandlerDuringInitialList(t *testing.T) {
	leakcheck.Check(t)
	const n = 20000
	fake := source.NewFake(source.FakeOptions[*corev1.Pod]{Objects: seedPods(n)})
	var indexed, afterLate atomic.Int64
	var lateAdded atomic.Bool
	reached, gate := make(chan struct{}), make(chan struct{})
	var openGate sync.Once
	release := func() { openGate.Do(func() { close(gate) }) }
	defer release()
	inf := typed.NewInformer(fake, typed.Options[*corev1.Pod]{Indexers: cache.Indexers[*corev1.Pod]{
		"gate": func(*corev1.Pod) ([]string, error) {
			// The informer runs index functions twice per object: when
			// the object enters the queue (so an object the cache would
			// refuse is refused there) and when it is applied. The list's
			// n objects all enter the queue first; calls n+1 to 2n are the
			// dispatch of the initial list.
			switch indexed.Add(1) {
			case n + n/4:
				close(reached)
				<-gate
			case n + 3*n/4:
				// Hold the end of the list until the late handler is in,
				// so it certainly joined before the list was done.
				for deadline := time.Now().Add(time.Minute); !lateAdded.Load() && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
			}
			if lateAdded.Load() {
				afterLate.Add(1)
			}
			return nil, nil
		},
	}})
	early, late := newTracker(nil), newTracker(nil)
	earlyReg, err := inf.AddHandler(early.handler())
	if err != nil {
		t.Fatal(err)
	}
	runInformer(t, inf)
	select {
	case <-reached:
	case <-time.After(2 * time.Minute):
		t.Fatal("initial list never reached the gate")
	}
	regc := make(chan *typed.Registration, 1)
	go func() {
		reg, err := inf.AddHandler(late.handler())
		if err != nil {
			t.Error(err)
		}
		lateAdded.Store(true)
		regc <- reg
	}()
	blockedOnMutex(t, "typed.(*Informer[...]).AddHandler")
	release()
	lateReg := <-regc
	if err := inf.WaitForSync(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if !typed.WaitForCacheSync(ctx, earlyReg.HasSynced, lateReg.HasSynced) {
		t.Fatal("registrations did not sync")
	}
	if afterLate.Load() == 0 {
		t.Fatal("the late handler joined after the initial list was applied: the test tests nothing")
	}
	t.Logf("late handler joined with %d of %d objects still to apply", afterLate.Load(), n)
	for name, tr := range map[string]*tracker{"early": early, "late": late} {
		tr.mu.Lock()
		got := len(tr.initial)
		tr.mu.Unlock()
		if got != n {
			t.Errorf("%s handler: %d initial Adds, want %d", name, got, n)
		}
		tr.rec.mu.Lock()
		calls := 0
		for _, evs := range tr.rec.events {
			calls += len(evs)
		}
		tr.rec.mu.Unlock()
		if calls != n {
			t.Errorf("%s handler: %d calls for %d objects, want exactly one each", name, calls, n)
		}
	}
	if _, err := fake.Update(pod("ns-0", "p-0", map[string]string{"live": "1"})); err != nil {
		t.Fatal(err)
	}
	converge(t, fake, inf, early.rec, late.rec)
	for name, tr := range map[string]*tracker{"early": early, "late": late} {
		if p := tr.problems(); len(p) > 0 {
			t.Errorf("%s handler: %d violations, first: %v", name, len(p), p[:min(5, len(p))])
		}
		tr.rec.mu.Lock()
		evs := tr.rec.events[cache.Key{Namespace: "ns-0", Name: "p-0"}]
		tr.rec.mu.Unlock()
		if len(evs) != 2 || evs[1].Kind != "update" {
			t.Errorf("%s handler: events of p-0 = %+v, want the initial Add and one Update", name, evs)
		}
	}
}
