package fifo_test

import (
	"context"
	"testing"

	"github.com/typedinformer/informer/fifo"
)

// TestQueueAllocs: once the queue's buffers have grown, moving deltas
// through a Queue allocates nothing, whether they are pushed one by one or
// in one Push, and popped in one batch or several.
func TestQueueAllocs(t *testing.T) {
	const n = 64
	reg := newRegistry()
	ds := make([]delta, n)
	for i := range ds {
		ds[i] = delta{Type: fifo.Updated, Entry: ent(reg.pod(i % numKeys))}
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		maxBatch int
		push     func(q *fifo.Queue[pod])
	}{
		{"Push one by one, one Pop", n, func(q *fifo.Queue[pod]) {
			for _, d := range ds {
				_ = q.Push(d)
			}
		}},
		{"one Push of all, one Pop", n, func(q *fifo.Queue[pod]) { _ = q.Push(ds...) }},
		{"Push one by one, Pops of 5", 5, func(q *fifo.Queue[pod]) {
			for _, d := range ds {
				_ = q.Push(d)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := fifo.New[pod](fifo.Options{MaxBatch: tc.maxBatch})
			cycle := func() {
				tc.push(q)
				for q.Len() > 0 {
					if _, err := q.Pop(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			for range 10 { // warm-up: the buffers grow
				cycle()
			}
			if a := testing.AllocsPerRun(200, cycle); a != 0 {
				t.Errorf("%v allocations per %d deltas, want 0", a, n)
			}
		})
	}
}

// TestQueueAllocsWhileBacklogged: a consumer that lags (the queue never
// empties) allocates nothing either, as the buffer compacts in place.
func TestQueueAllocsWhileBacklogged(t *testing.T) {
	reg := newRegistry()
	d := delta{Type: fifo.Added, Entry: ent(reg.pod(0))}
	q := fifo.New[pod](fifo.Options{MaxBatch: 10})
	ctx := context.Background()
	for range 5000 {
		_ = q.Push(d)
	}
	cycle := func() { // 10 in, 10 out: the backlog stays at 5000
		for range 10 {
			_ = q.Push(d)
		}
		if _, err := q.Pop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 2000 {
		cycle()
	}
	if a := testing.AllocsPerRun(2000, cycle); a != 0 {
		t.Errorf("%v allocations per 10 deltas, want 0", a)
	}
}
