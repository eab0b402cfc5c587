// Package fifo is the typed delta queue between a reflector and an
// informer's cache.
//
// A producer (the reflector) reports what it saw with [Queue.Add],
// [Queue.Update], [Queue.Delete] and, after a list, [Queue.Replace]; a single
// consumer (the informer) takes changes out with [Queue.Pop] or
// [Queue.PopBatch], applies them to its cache and notifies handlers. Every
// change is a [Delta] whose object is a T: a deletion whose final state is
// unknown (the object vanished while the watch was down) is a Deleted delta
// with FinalStateUnknown set and the last known object, never an untyped
// tombstone.
//
// # Orderings
//
// A Queue has one of two orderings, chosen in [Options]:
//
//   - [PerKey] accumulates the deltas of each key in arrival order and hands
//     out a key with all its pending deltas at once; keys leave in the order
//     they first arrived. Consecutive deletions of a key collapse into one.
//     This is client-go's DeltaFIFO.
//   - [InOrder] hands out every delta on its own, in exactly the order the
//     producer reported them. This is client-go's RealFIFO, which client-go
//     v0.37 informers use by default.
//
// Informers in this module use InOrder. Popping in arrival order means that
// when the delta carrying resourceVersion R has been applied, every earlier
// event has been too, so "the cache has seen R" is a true statement, the
// ground a read-your-own-writes barrier needs (the informer does not offer
// one yet); with PerKey a later delta of an already queued key overtakes
// earlier deltas of other keys. InOrder
// also needs no per-key map, so it is cheaper per event. PerKey remains for
// consumers that want coalescing by key (a slow consumer then sees a key
// once with its whole history) and for DeltaFIFO parity.
//
// # Processing
//
// Pop and PopBatch hold the queue's lock while the process function runs,
// as client-go does: that keeps Replace and Resync, which look at the
// consumer's cache through [KnownObjects], from racing with a change that
// has left the queue but has not reached the cache yet. The process function
// must therefore not call back into the queue. If it returns an error the
// popped deltas are put back at the head of the queue, unchanged, and the
// error is returned; if it panics they are put back the same way, the lock
// is released and the panic goes on.
package fifo
