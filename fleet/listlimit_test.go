package fleet_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/fleet"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/source/sourcetest"
)

// inFlight counts the LIST requests in flight over many servers, and the
// most there were at once.
type inFlight struct {
	mu       sync.Mutex
	now, max int
	starts   []time.Time // when each list started, in order
}

func (f *inFlight) start() func() {
	f.mu.Lock()
	f.now++
	f.max = max(f.max, f.now)
	f.starts = append(f.starts, time.Now())
	f.mu.Unlock()
	time.Sleep(20 * time.Millisecond) // a list that takes a while, so that lists would overlap
	return func() {
		f.mu.Lock()
		f.now--
		f.mu.Unlock()
	}
}

// TestFleetListBound: 100 clusters, each an in-process server, start
// their informers at once. With the fleet's bound of 3, never more than 3
// LIST requests are in flight over all the servers, and every cluster
// syncs; with a bound per cluster instead, more are (the bound is what
// holds them back).
func TestFleetListBound(t *testing.T) {
	leakcheck.Check(t)
	const clusters, bound = 100, 3
	for _, fleetWide := range []bool{true, false} {
		t.Run(fmt.Sprintf("fleetwide=%t", fleetWide), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			var lists inFlight
			opts := fleet.Options{MaxConcurrentLists: bound}
			if !fleetWide {
				opts = fleet.Options{MaxConcurrentLists: -1, Factory: factory.Options{MaxConcurrentLists: bound}}
			}
			fl, err := fleet.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			pods, err := fleet.InformerFor[*corev1.Pod](fl, factory.Scope{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range clusters {
				srv := podserver.New(t, sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{
					NoWatchList: true, Objects: []*corev1.Pod{pod("shop", fmt.Sprintf("web-%d", i), "web")},
				}))
				srv.OnList = lists.start
				if err := fl.Engage(fmt.Sprintf("c%03d", i), srv.Config()); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- fl.Run(ctx) }()
			if err := pods.WaitForSync(ctx); err != nil {
				t.Fatal(err)
			}
			synced := time.Since(start)
			list, err := pods.List(nil)
			if err != nil || len(list) != clusters {
				t.Errorf("List: %d pods, %v; want %d", len(list), err, clusters)
			}
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
			lists.mu.Lock()
			most := lists.max
			lists.mu.Unlock()
			t.Logf("%d clusters synced in %v with at most %d lists in flight over all of them", clusters, synced.Round(time.Millisecond), most)
			if fleetWide && most > bound {
				t.Errorf("%d lists in flight at once over the fleet, want at most %d", most, bound)
			}
			if !fleetWide && most <= bound {
				t.Errorf("with a bound per cluster, at most %d lists were in flight over the fleet: the test would not tell the bounds apart", most)
			}
		})
	}
}

// TestFleetLosesWatches: 100 synced clusters lose their watches at once,
// and each server has compacted its history past the informers'
// resourceVersion (a hub cut off for longer than the watch cache's window,
// or every apiserver restarted), so every informer must relist. The
// relists start spread by the backoff's jitter, never more than the
// fleet's bound are in flight at once, and every cluster resyncs to the
// state its server holds. The test prints how long that takes.
func TestFleetLosesWatches(t *testing.T) {
	leakcheck.Check(t)
	// The default bound, and one small enough that the relists queue.
	for _, bound := range []int{factory.DefaultMaxConcurrentLists, 3} {
		t.Run(fmt.Sprintf("bound=%d", bound), func(t *testing.T) { losesWatches(t, 100, bound) })
	}
}

func losesWatches(t *testing.T, clusters, bound int) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var lists inFlight
	fl, err := fleet.New(fleet.Options{MaxConcurrentLists: bound})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := fleet.InformerFor[*corev1.Pod](fl, factory.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	fakes := make([]*sourcetest.Fake[*corev1.Pod], clusters)
	for i := range clusters {
		fakes[i] = sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{
			NoWatchList: true, Objects: []*corev1.Pod{pod("shop", fmt.Sprintf("web-%d", i), "web")},
		})
		srv := podserver.New(t, fakes[i])
		srv.OnList = lists.start
		if err := fl.Engage(fmt.Sprintf("c%03d", i), srv.Config()); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- fl.Run(ctx) }()
	if err := pods.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	// Every informer is watching before the cut: otherwise a cluster
	// still between its list and its watch would not lose a watch.
	for _, f := range fakes {
		for f.OpenWatches() == 0 {
			if ctx.Err() != nil {
				t.Fatal("informers did not all start watching")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// Watches that have lasted, as a controller's have: a watch that
	// ends within a second of its start backs off before the next, and
	// that is not what this test measures.
	time.Sleep(1500 * time.Millisecond)
	lists.mu.Lock()
	lists.max, lists.starts = 0, nil
	lists.mu.Unlock()

	// One change no watch sees, history compacted past it, every watch cut.
	cut := time.Now()
	for i, f := range fakes {
		f.DropEvents(1)
		if _, err := f.Create(pod("shop", fmt.Sprintf("api-%d", i), "api")); err != nil {
			t.Fatal(err)
		}
		f.Compact()
		f.CutWatches()
	}
	for {
		list, err := pods.List(nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == 2*clusters {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d pods cached, want %d: not every cluster resynced", len(list), 2*clusters)
		}
		time.Sleep(10 * time.Millisecond)
	}
	resynced := time.Since(cut)
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}

	lists.mu.Lock()
	most, starts := lists.max, lists.starts
	lists.mu.Unlock()
	if len(starts) < clusters {
		t.Fatalf("%d lists after the cut, want at least one per cluster (%d)", len(starts), clusters)
	}
	first, last := starts[0].Sub(cut), starts[len(starts)-1].Sub(cut)
	t.Logf("%d clusters lost their watches at once and resynced in %v: %d lists, the first %v and the last %v after the cut, at most %d in flight (bound %d)",
		clusters, resynced.Round(time.Millisecond), len(starts), first.Round(time.Millisecond), last.Round(time.Millisecond), most, bound)
	if most > bound {
		t.Errorf("%d lists in flight at once over the fleet, want at most %d", most, bound)
	}
	for i, f := range fakes {
		if got := f.ListCalls(); got < 2 {
			t.Errorf("cluster c%03d: %d lists, want a relist after the cut", i, got)
		}
	}
}
