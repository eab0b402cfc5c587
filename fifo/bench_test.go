package fifo_test

import (
	"context"
	"fmt"
	"testing"

	k8scache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
)

// BenchmarkQueue compares the queue with its client-go twin on the same
// pre-built pod events: 1000 events over 250 keys (an Add per key, then
// three rounds of Updates), all written, then all popped, per iteration.
// Neither consumer does any work. ns/event is the time per written event.
//
//   - InOrder: Queue Push (one delta per event, its key computed as a
//     reflector would) + Pop vs RealFIFO with atomic events Add +
//     PopBatch. RealFIFO closes a batch at the first repeated key, so its
//     batches hold at most 250 deltas here; Queue's hold up to MaxBatch
//     (1000).
func BenchmarkQueue(b *testing.B) {
	const keys, rounds = 250, 4
	reg := newRegistry()
	var events []pod
	for r := range rounds {
		for k := range keys {
			o := reg.pod(0)
			o.Name = fmt.Sprintf("pod-%d", k)
			o.ResourceVersion = fmt.Sprint(r*keys + k + 1)
			events = append(events, o)
		}
	}
	ctx := context.Background()
	perEvent := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)), "ns/event")
	}

	b.Run("InOrder/fifo", func(b *testing.B) {
		b.ReportAllocs()
		q := fifo.New[pod](fifo.Options{})
		for b.Loop() {
			for _, o := range events {
				if err := q.Push(delta{Type: fifo.Added, Entry: cache.Entry[pod]{Key: cache.KeyOf(o), Object: o}}); err != nil {
					b.Fatal(err)
				}
			}
			for n := 0; n < len(events); {
				ds, err := q.Pop(ctx)
				if err != nil {
					b.Fatal(err)
				}
				n += len(ds)
			}
		}
		perEvent(b)
	})
	b.Run("InOrder/client-go-RealFIFO", func(b *testing.B) {
		b.ReportAllocs()
		q := k8scache.NewRealFIFOWithOptions(k8scache.RealFIFOOptions{
			AtomicEvents: true,
			KeyFunction:  k8scache.MetaNamespaceKeyFunc,
		})
		n := 0
		batch := func(ds []k8scache.Delta, _ bool) error { n += len(ds); return nil }
		single := func(any, bool) error { n++; return nil }
		for b.Loop() {
			for _, o := range events {
				if err := q.Add(o); err != nil {
					b.Fatal(err)
				}
			}
			for n = 0; n < len(events); {
				if err := q.PopBatch(batch, single); err != nil {
					b.Fatal(err)
				}
			}
		}
		perEvent(b)
	})
}
