package fifo

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestRing drives the ring with random push/pop/unpop runs long enough to
// cross the compaction threshold (head >= 1024) many times, against a plain
// slice.
func TestRing(t *testing.T) {
	for seed := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var r ring[int]
		var model []int
		next := 0
		for step := range 20000 {
			switch n := rng.IntN(10); {
			case n < 5: // push
				r.push(next)
				model = append(model, next)
				next++
			case n < 9 && r.len() > 0: // pop up to 3, maybe put them back
				k := min(r.len(), 1+rng.IntN(3))
				var popped []int
				for range k {
					popped = append(popped, r.pop())
				}
				if diff := cmp.Diff(model[:k], popped); diff != "" {
					t.Fatalf("seed %d step %d: pop mismatch (-want +got):\n%s", seed, step, diff)
				}
				if rng.IntN(3) == 0 {
					r.unpop(popped)
				} else {
					model = model[k:]
				}
			case r.len() > 0: // unpop items that were never queued at the head
				extra := []int{-next, -next - 1}
				next += 2
				r.unpop(extra)
				model = append(slices.Clone(extra), model...)
			}
			if r.len() != len(model) {
				t.Fatalf("seed %d step %d: len %d, want %d", seed, step, r.len(), len(model))
			}
			if r.len() > 0 && r.at(r.len()-1) != model[len(model)-1] {
				t.Fatalf("seed %d step %d: tail %d, want %d", seed, step, r.at(r.len()-1), model[len(model)-1])
			}
		}
		got := slices.Collect(r.all)
		if diff := cmp.Diff(model, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("seed %d: contents mismatch (-want +got):\n%s", seed, diff)
		}
		// Popped slots must not keep references (the queue holds objects).
		for i := range r.head {
			if r.buf[i] != 0 {
				t.Fatalf("seed %d: popped slot %d still holds %d", seed, i, r.buf[i])
			}
		}
	}
}
