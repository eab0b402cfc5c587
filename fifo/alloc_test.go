package fifo_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/typedinformer/informer/fifo"
)

// TestAllocs measures steady-state allocations of an Add + pop cycle of 100
// pre-built pod events (25 keys x 4 events) with testing.AllocsPerRun.
//
// InOrder bound: at most 1 allocation per 100-event cycle. In steady state
// nothing needs to allocate: Add keys the object (cache.MetaKey does not
// allocate) and appends to the ring, whose backing array is reused once the
// queue has been drained; PopBatch and Pop hand out q.batch and q.deltas,
// which are reused, and the Items' delta slices are windows into q.deltas.
// Measured: 0 for both PopBatch and Pop. (The bound leaves room for one
// stray allocation so that the test does not flake on a runtime detail.)
//
// PerKey bound: at most 1 allocation per event. Each key gets a fresh delta
// slice that append grows 1 -> 2 -> 4: 3 allocations per key with 4 events,
// 75 per cycle (0.75/event) measured.
func TestAllocs(t *testing.T) {
	const events = 100
	pods := make([]pod, events)
	for i := range pods {
		pods[i] = p(fmt.Sprintf("p%d", i%25), fmt.Sprint(i))
	}
	ctx := context.Background()
	n := 0
	processBatch := func(items []item, _ bool) error { n += len(items); return nil }
	processOne := func(item, bool) error { n++; return nil }

	for _, tc := range []struct {
		name     string
		ordering fifo.Ordering
		batch    bool
		max      float64 // allocations per 100-event cycle
	}{
		{"InOrder Add+PopBatch", fifo.InOrder, true, 1},
		{"InOrder Add+Pop", fifo.InOrder, false, 1},
		{"PerKey Add+PopBatch", fifo.PerKey, true, events},
		{"PerKey Add+Pop", fifo.PerKey, false, events},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := fifo.New(opts{Ordering: tc.ordering})
			cycle := func() {
				for _, o := range pods {
					if err := q.Add(o); err != nil {
						t.Fatal(err)
					}
				}
				for q.Len() > 0 {
					var err error
					if tc.batch {
						err = q.PopBatch(ctx, processBatch)
					} else {
						err = q.Pop(ctx, processOne)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			for range 10 {
				cycle() // grow the buffers to their steady-state size
			}
			got := testing.AllocsPerRun(200, cycle)
			t.Logf("%.2f allocs per %d-event cycle (%.3f per event)", got, events, got/events)
			if got > tc.max {
				t.Errorf("%.2f allocs per %d-event cycle, want <= %v", got, events, tc.max)
			}
		})
	}
}
