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
}

func (f *inFlight) start() func() {
	f.mu.Lock()
	f.now++
	f.max = max(f.max, f.now)
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
