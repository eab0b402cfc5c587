package fifo_test

import (
	"testing"
)

// maxFuzzOps bounds a fuzz script so that one input stays fast.
const maxFuzzOps = 400

// FuzzQueue decodes an op script (decodeScript) from data[1:] and runs it
// against the Queue reference model, close ops included, and, up to its
// first close, against client-go's RealFIFO. data[0] picks MaxBatch from
// diffMaxBatches.
func FuzzQueue(f *testing.F) {
	for i := range 6 {
		script := genScript(scriptRand(0xf1f0, i), 60, genConfig{inOrder: true, close: i%2 == 1})
		f.Add(append([]byte{byte(i)}, encodeScript(script)...))
	}
	f.Add(append([]byte{1}, encodeScript(parseScript("replace 0 1 0; add 2; pop; pop; close; pop; pop; pop; add 1; pop"))...))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		mb := diffMaxBatches[int(data[0])%len(diffMaxBatches)]
		ops := decodeScript(data[1:])
		if len(ops) > maxFuzzOps {
			ops = ops[:maxFuzzOps]
		}
		newQueueRunner(t, mb).run(ops)
		newQueueDiff(t, mb).run(ops)
	})
}
