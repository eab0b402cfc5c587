package fifo

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSliceQueue drives sliceQueue with random push and pop runs long
// enough to cross the compaction threshold (head >= 1024) many times,
// against a plain slice, checking len, at, all and that popped slots are
// cleared.
func TestSliceQueue(t *testing.T) {
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var q sliceQueue[*int]
		var model []*int
		compactions := 0
		for step := range 20000 {
			if rng.IntN(100) < 52 || len(model) == 0 {
				for range 1 + rng.IntN(40) {
					v := new(int)
					*v = step
					before := q.head
					q.push(v)
					if before > 0 && q.head == 0 && len(model) > 0 {
						compactions++
					}
					model = append(model, v)
				}
			} else {
				for range min(len(model), 1+rng.IntN(40)) {
					if got := q.pop(); got != model[0] {
						t.Fatalf("seed %d step %d: pop = %p, want %p", seed, step, got, model[0])
					}
					model = model[1:]
				}
				for i, v := range q.buf[:q.head] {
					if v != nil {
						t.Fatalf("seed %d step %d: popped slot %d still holds a value", seed, step, i)
					}
				}
			}
			if q.len() != len(model) {
				t.Fatalf("seed %d step %d: len = %d, want %d", seed, step, q.len(), len(model))
			}
			if n := len(model); n > 0 && (q.at(0) != model[0] || q.at(n-1) != model[n-1]) {
				t.Fatalf("seed %d step %d: at disagrees with the model", seed, step)
			}
		}
		if got := slices.Collect(q.all); !slices.Equal(got, model) {
			t.Fatalf("seed %d: all yields %d items, want %d", seed, len(got), len(model))
		}
		for range q.all { // all stops when asked
			break
		}
		if compactions == 0 {
			t.Errorf("seed %d: no compaction with a backlog happened", seed)
		}
	}
}

// TestSliceQueueGivesBackALargeArray: a queue drained after a large push
// (an initial list) holds no array; a small one keeps its array for the
// next push.
func TestSliceQueueGivesBackALargeArray(t *testing.T) {
	var q sliceQueue[int]
	q.pushAll(make([]int, 10*keepCap))
	for q.len() > 0 {
		q.pop()
	}
	if cap(q.buf) != 0 {
		t.Errorf("drained after %d items, the queue holds an array of %d", 10*keepCap, cap(q.buf))
	}
	q.pushAll(make([]int, 10))
	c := cap(q.buf)
	for q.len() > 0 {
		q.pop()
	}
	if cap(q.buf) != c {
		t.Errorf("a small array was given back: cap %d, want %d", cap(q.buf), c)
	}
}
