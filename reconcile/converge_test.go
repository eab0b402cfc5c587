package reconcile_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
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

// TestConverges makes random creates, updates and deletes, with resyncs,
// while 4 workers reconcile with random durations and random failures:
// once everything is quiet, the last reconcile of every key saw the
// object's final state (or its deletion), so no change was lost between
// the two levels of the queue, the retries and the workers. Each seed is
// a subtest: replay one with -run 'TestConverges/seed=N$'.
func TestConverges(t *testing.T) {
	leakcheck.Check(t)
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { converge(t, seed) })
	}
}

func converge(t *testing.T, seed uint64) {
	synctest.Test(t, func(t *testing.T) {
		rnd := rand.New(rand.NewPCG(seed, seed*0x9e3779b97f4a7c15))
		var mu sync.Mutex // guards rnd and seen
		seen := map[cache.Key]string{}
		var inf *typed.Informer[*corev1.Pod]
		r := reconcile.Func(func(ctx context.Context, k cache.Key) error {
			mu.Lock()
			d := time.Duration(rnd.IntN(50)) * time.Millisecond
			fail := rnd.IntN(10) == 0
			mu.Unlock()
			time.Sleep(d)
			if fail {
				return fmt.Errorf("random failure of %v", k)
			}
			state := "deleted"
			p, err := inf.Lister().Namespace(k.Namespace).Get(k.Name)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return err
			default:
				state = p.ResourceVersion
			}
			mu.Lock()
			seen[k] = state
			mu.Unlock()
			return nil
		})
		rl := workqueue.NewTypedItemExponentialFailureRateLimiter[cache.Key](time.Millisecond, time.Second)
		e := newEnv(t, pods(200), typed.Options[*corev1.Pod]{ResyncPeriod: 300 * time.Millisecond}, r,
			reconcile.Options[*corev1.Pod]{Workers: 4, RateLimiter: rl, ErrorHandler: func(error) {}})
		inf = e.inf
		e.start(t)
		deleted := map[cache.Key]bool{}
		for range 2000 {
			mu.Lock()
			i, op := rnd.IntN(250), rnd.IntN(10)
			mu.Unlock()
			k := key(fmt.Sprintf("p-%05d", i))
			_, err := e.fake.Get(k)
			switch exists := err == nil; {
			case !exists:
				if _, err := e.fake.Create(pods(i + 1)[i]); err != nil {
					t.Fatal(err)
				}
				deleted[k] = false
			case op == 0:
				if _, err := e.fake.Delete(k); err != nil {
					t.Fatal(err)
				}
				deleted[k] = true
			default:
				touch(t, e.fake, k.Name, fmt.Sprint(op))
			}
			if op < 3 {
				time.Sleep(time.Millisecond)
			}
		}
		time.Sleep(time.Minute) // retries and reconciles finish
		synctest.Wait()
		want := map[cache.Key]string{}
		for k, gone := range deleted {
			if gone {
				want[k] = "deleted"
			}
		}
		for _, p := range e.fake.Items() {
			want[cache.KeyOf(p)] = p.ResourceVersion
		}
		mu.Lock()
		got := maps.Clone(seen)
		mu.Unlock()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("seed %d (replay with -run 'TestConverges/seed=%d$'): last state reconciled per key (-want final +got):\n%s", seed, seed, diff)
		}
	})
}
