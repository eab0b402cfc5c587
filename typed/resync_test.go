package typed_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
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
				fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: !watchList}, it.Pods(20)...)
				inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{ResyncPeriod: time.Minute, NoWatchList: !watchList})
				var c sameObjectCounter
				if _, err := inf.AddHandler(c.handler()); err != nil {
					t.Fatal(err)
				}
				rec := it.NewRecorder()
				startSynced(t, inf, rec)
				synctest.Wait()
				lists, stats := fake.ListCalls(), inf.Status().Stats
				time.Sleep(3*time.Minute + 30*time.Second)
				synctest.Wait()
				resyncs, bad := c.counts()
				if resyncs != 3*20 {
					t.Errorf("%d resync updates in 3.5 periods, want %d (3 per object)", resyncs, 3*20)
				}
				if len(bad) > 0 {
					t.Errorf("resync violations: %v", bad)
				}
				if diff := cmp.Diff(stats, inf.Status().Stats); diff != "" {
					t.Errorf("I8: resync changed the list/watch counters (-before +after):\n%s", diff)
				}
				if got := fake.ListCalls(); got != lists {
					t.Errorf("I8: resync made %d LIST calls", got-lists)
				}
				rec.Check(t, informertest.StateOf(fake.Items()))
			})
		})
	}

	t.Run("racing updates", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: true}, it.Pods(6)...)
			const period = 10 * time.Millisecond
			inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{ResyncPeriod: period, NoWatchList: true})
			var c sameObjectCounter
			if _, err := inf.AddHandler(c.handler()); err != nil {
				t.Fatal(err)
			}
			rec := it.NewRecorder()
			startSynced(t, inf, rec)
			var keys []cache.Key
			for _, p := range fake.Items() {
				keys = append(keys, cache.KeyOf(p))
			}
			base := seeded(t, 9).Uint64()
			var wg sync.WaitGroup
			for w := range 3 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(base+uint64(w), 9))
					for i := range 300 {
						k := keys[rng.IntN(len(keys))]
						if _, err := fake.Update(it.Pod(k.Namespace, k.Name, map[string]string{"w": fmt.Sprint(w), "i": fmt.Sprint(i)})); err != nil {
							t.Error(err)
							return
						}
						// Wake up on resync ticks, so updates and resyncs run
						// at the same instant.
						time.Sleep(time.Duration(rng.IntN(3)) * period)
					}
				})
			}
			wg.Wait()
			it.Converge(t, fake, inf.Store(), rec)
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
			if st := inf.Status().Stats; st.Lists != 1 || st.Relists != 0 {
				t.Errorf("I8: stats %+v, want one list and no relist", st)
			}
		})
	})

	t.Run("before handlers and before sync", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: true}, it.Pods(25)...)
			fake.FailLists(4, nil) // several backoffs, many resync ticks, before the first sync
			inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{ResyncPeriod: 10 * time.Millisecond, ErrorHandler: func(error) {}, NoWatchList: true})
			early := newTracker(nil)
			earlyReg, err := inf.AddHandler(early.handler())
			if err != nil {
				t.Fatal(err)
			}
			var resyncs atomic.Int64
			it.Run(t, inf)
			time.Sleep(500 * time.Millisecond) // resyncs tick on an empty, unsynced cache
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
			if err := typed.WaitForCacheSync(ctx, earlyReg, lateReg); err != nil {
				t.Fatal(err)
			}
			churnFake(t, fake, "x")
			it.Converge(t, fake, inf.Store(), early.rec, late.rec)
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			for name, tr := range map[string]*tracker{"early": early, "late": late} {
				if p := tr.problems(); len(p) > 0 {
					t.Errorf("%s handler: %v", name, p)
				}
				if n := tr.initialCount(); n != 25 {
					t.Errorf("%s handler got %d initial Adds, want 25", name, n)
				}
			}
			if resyncs.Load() == 0 {
				t.Error("no resync reached the last handler")
			}
		})
	})
}
