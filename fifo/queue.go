package fifo

import (
	"context"
	"runtime"
	"sync"

	"github.com/typedinformer/informer/cache"
)

// DefaultMaxBatch is the default for [Options.MaxBatch].
const DefaultMaxBatch = 1000

// Options configures [New]. The zero value is ready to use.
type Options struct {
	// MaxBatch bounds how many deltas one Queue.Pop hands out. Default:
	// DefaultMaxBatch.
	MaxBatch int
	// MaxLen, if positive, bounds a Queue: Push waits while MaxLen deltas
	// or more are queued, until Pop makes room or Close is called, so a
	// producer faster than the consumer cannot pile up objects. One Push is
	// taken whole once there is room, so the queue may hold up to MaxLen-1
	// plus the deltas of one Push. Default: 0, unbounded.
	MaxLen int
}

// Queue is the in-order delta queue of the informer pipeline: every delta
// comes out exactly once, in the order it went in, in batches. A full list
// travels as ReplaceStart, Replaced..., ReplaceEnd, so it can be handed
// over page by page and the consumer can apply it as one write; a resync is
// one Sync delta. The queue never looks at what it carries and calls
// nothing while holding its lock: what a delta means is the consumer's
// business. It is client-go's RealFIFO with atomic events.
//
// Push may be called from any goroutine; Pop is for a single consumer.
type Queue[T cache.Object] struct {
	maxBatch, maxLen int

	mu     sync.Mutex
	room   sync.Cond // signalled when Pop makes room or Close is called
	items  sliceQueue[Delta[T]]
	out    []Delta[T] // the batch handed out last
	closed bool
	wake   chan struct{} // one pending wake-up for a waiting Pop
	done   chan struct{} // closed by Close
	busy   int           // the consumer's: how well yielding paid lately; above 0, an empty Pop yields before it sleeps
}

// New returns an empty Queue.
func New[T cache.Object](opts Options) *Queue[T] {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	q := &Queue[T]{maxBatch: opts.MaxBatch, maxLen: opts.MaxLen, wake: make(chan struct{}, 1), done: make(chan struct{})}
	q.room.L = &q.mu
	return q
}

// Push appends deltas, all at once: Pop never hands out a part of them
// before the rest is queued. In a bounded queue (Options.MaxLen) it first
// waits for room. It returns ErrClosed after Close.
func (q *Queue[T]) Push(deltas ...Delta[T]) error {
	q.mu.Lock()
	for q.maxLen > 0 && q.items.len() >= q.maxLen && !q.closed {
		q.room.Wait()
	}
	if q.closed {
		q.mu.Unlock()
		return ErrClosed
	}
	q.items.pushAll(deltas)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return nil
}

// Pop waits until deltas are queued and hands out up to MaxBatch of them,
// oldest first. The slice is reused by the next Pop: use it, or copy what
// you keep, before calling Pop again (the objects themselves may be kept).
// Pop returns ctx's error if ctx ends first, and ErrClosed once the queue
// is closed and empty.
func (q *Queue[T]) Pop(ctx context.Context) ([]Delta[T], error) {
	slept := false
	for spins := 0; ; {
		q.mu.Lock()
		if n := min(q.items.len(), q.maxBatch); n > 0 {
			if !slept && q.busy < maxBusy {
				q.busy++ // found at once, or after yielding: worth yielding next time
			}
			clear(q.out)
			q.out = q.out[:0]
			for range n {
				q.out = append(q.out, q.items.pop())
			}
			if q.maxLen > 0 {
				q.room.Broadcast()
			}
			q.mu.Unlock()
			return q.out, nil
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return nil, ErrClosed
		}
		if q.busy > 0 && spins < popSpins {
			// Deltas came fast lately: yield to a producer on this core
			// instead of sleeping, so that the next batch is larger and
			// no wake-up is paid for it. Once yielding finds nothing,
			// Pop sleeps at once until deltas come fast again.
			spins++
			runtime.Gosched()
			continue
		}
		if !slept && spins > 0 {
			q.busy-- // yielding found nothing
		}
		slept = true
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-q.wake:
		case <-q.done:
		}
	}
}

// Len returns the number of queued deltas.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.items.len()
}

// Close makes Push fail and Pop return ErrClosed once the queue is empty.
// It is safe to call more than once.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.done)
		q.room.Broadcast()
	}
}

// popSpins is how many times Pop yields before it sleeps on an empty
// queue.
const popSpins = 2

// maxBusy bounds Queue.busy, so that a few empty yields turn yielding off
// when deltas stop coming fast.
const maxBusy = 4
