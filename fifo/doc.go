// Package fifo is the typed delta queue between a reflector and the writer
// of an informer's cache.
//
// Every change is a [Delta] whose object is a T, carried in a
// [cache.Entry] with its key (and, when the producer prepared it, its index
// values), never an interface{}.
//
// # One queue, in order
//
// [Queue] is the informer's queue: every delta comes out exactly once, in
// the order it went in, in batches ([Queue.Pop]). A full list is
// ReplaceStart, Replaced..., ReplaceEnd, pushed at once or page by page as
// it arrives; a resync is one Sync delta; an object the producer could not
// take is a Refused delta with its error, in its place. The queue attaches
// no meaning to what it carries: the consumer applies a list as one write
// and infers the deletions it implies, which is what makes a relist atomic
// for readers. This is client-go's RealFIFO with atomic events, the
// default of client-go v0.37 informers.
//
// When the delta carrying resourceVersion R has come out, every earlier
// one has too: "the consumer has seen R" is a true statement, the ground a
// read-your-own-writes wait needs.
//
// # Locks
//
// The queue has one mutex, held only to move deltas in and out. Nothing
// runs under it: not the consumer (Pop hands out and returns), not user
// code, not another package. Pop takes ctx and returns [ErrClosed] once a
// closed queue is drained.
package fifo
