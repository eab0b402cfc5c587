package fifo_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/typedinformer/informer/fifo"
)

// maxFuzzOps bounds a fuzz script so that one input stays fast.
const maxFuzzOps = 300

// FuzzQueue decodes an op script from the input (see decodeScript) and runs
// it against the reference model; when the configuration has KnownObjects it
// also runs it against client-go (DeltaFIFO for PerKey, RealFIFO for
// InOrder) with sorted KnownObjects, comparing every item in exact order.
//
// data[0] is the configuration: bit 0 PerKey, bit 1 KnownObjects, bits 2-3
// MaxBatch (0 = default, else 1..3), bit 4 Transform, bit 5 Close at the end
// (model run only).
func FuzzQueue(f *testing.F) {
	for seed := range 8 {
		rng := rand.New(rand.NewPCG(uint64(seed), 0xf022))
		f.Add(append([]byte{byte(seed*5) | 2}, encodeScript(genScript(rng, 40))...))
	}
	f.Fuzz(fuzzBody)
}

// fuzzBody is one FuzzQueue input.
func fuzzBody(t *testing.T, data []byte) {
	if len(data) == 0 {
		return
	}
	cfg := data[0]
	ops := decodeScript(data[1:])
	if len(ops) > maxFuzzOps {
		ops = ops[:maxFuzzOps]
	}
	ordering := fifo.Ordering(cfg & 1)
	hasKnown := cfg&2 != 0
	maxBatch := int(cfg>>2) & 3
	transform := cfg&16 != 0

	r := newModelRunner(t, ordering, hasKnown, maxBatch, transform)
	i := 0
	r.where = func() string {
		return fmt.Sprintf("model (%s, known=%v, maxBatch=%d, transform=%v) op %d\nscript: %v",
			orderingName(ordering), hasKnown, maxBatch, transform, i, ops[:min(i+1, len(ops))])
	}
	for i = range ops {
		r.step(ops[i])
	}
	if cfg&32 != 0 {
		r.close(rand.New(rand.NewPCG(uint64(len(data)), uint64(cfg))))
	}

	if hasKnown {
		runDiff(t, diffConfig{ordering: ordering, sorted: true, transform: transform, maxBatch: maxBatch}, ops, map[string]int{})
	}
}
