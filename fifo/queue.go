package fifo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/typedinformer/informer/cache"
)

// ErrClosed is returned by Pop and PopBatch once the queue is closed and
// drained, and by writes after Close.
var ErrClosed = errors.New("fifo: queue closed")

// ErrTransformPanic is wrapped by the error of a write whose Transform
// panicked; the panic does not escape the queue.
var ErrTransformPanic = errors.New("fifo: transform panicked")

// Ordering selects how a [Queue] hands out deltas; see the package doc.
type Ordering uint8

const (
	// InOrder hands out every delta on its own, in arrival order (client-go's
	// RealFIFO). It is the zero value and the informers' choice.
	InOrder Ordering = iota
	// PerKey accumulates deltas per key and hands out a key with all of them
	// (client-go's DeltaFIFO).
	PerKey
)

// DefaultMaxBatch is the default for [Options.MaxBatch].
const DefaultMaxBatch = 1000

// Options configures [New]. The zero value is an InOrder queue keyed by
// cache.MetaKey with no known objects and no transform.
type Options[T cache.Object] struct {
	// Ordering of the queue. Default: InOrder.
	Ordering Ordering
	// KeyFunc computes keys. Default: cache.MetaKey.
	KeyFunc cache.KeyFunc[T]
	// KnownObjects is the consumer's cache, used by Replace to find objects
	// that vanished and by Resync. Default: none; then Replace only finds
	// vanished objects among those still queued and Resync does nothing.
	KnownObjects KnownObjects[T]
	// Transform, if set, runs exactly once on every object that enters the
	// queue through Add, Update, Delete or Replace, before it is queued.
	// Objects of Sync deltas and of inferred deletions already went through
	// it and are not transformed again. An error fails the write and
	// nothing is queued; so does a panic, which is recovered
	// (ErrTransformPanic). In an InOrder queue Transform runs without the
	// queue's lock held.
	Transform func(T) (T, error)
	// MaxBatch bounds how many items one PopBatch hands out. Default:
	// DefaultMaxBatch.
	MaxBatch int
}

// pending is one queued delta of an InOrder queue.
type pending[T cache.Object] struct {
	key   cache.Key
	delta Delta[T]
}

// Queue is a typed delta queue. Writes may come from any goroutine; Pop and
// PopBatch are meant for a single consumer.
type Queue[T cache.Object] struct {
	opts Options[T]

	mu     sync.Mutex
	wake   chan struct{} // one pending wake-up for a waiting consumer
	done   chan struct{} // closed by Close
	closed bool
	// closedFlag mirrors closed for reads without the lock.
	closedFlag atomic.Bool

	// populated is set by the first write of any kind; initialCount is the
	// number of items of the first Replace still to be processed.
	populated    bool
	initialCount int
	synced       chan struct{}
	syncedClosed bool

	// PerKey state: deltas by key, and keys in first-arrival order.
	items map[cache.Key][]Delta[T]
	keys  ring[cache.Key]

	// InOrder state: every delta in arrival order.
	events ring[pending[T]]

	// Reusable hand-out buffers (valid only during a process call).
	batch  []Item[T]
	deltas []Delta[T]
}

// New returns an empty queue.
func New[T cache.Object](opts Options[T]) *Queue[T] {
	if opts.KeyFunc == nil {
		opts.KeyFunc = cache.MetaKey[T]
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	q := &Queue[T]{
		opts:   opts,
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
		synced: make(chan struct{}),
	}
	if opts.Ordering == PerKey {
		q.items = map[cache.Key][]Delta[T]{}
	}
	return q
}

// Close makes waiting and future pops return ErrClosed once the queue is
// empty, and makes future writes fail. It is safe to call more than once.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		q.closedFlag.Store(true)
		close(q.done)
	}
}

// HasSynced reports whether the first Replace has been fully processed: every
// item it queued, inferred deletions included, was popped and its process
// function returned nil. A write before any Replace also counts as synced,
// as in client-go.
func (q *Queue[T]) HasSynced() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.syncedClosed
}

// Synced returns a channel closed when HasSynced becomes true.
func (q *Queue[T]) Synced() <-chan struct{} { return q.synced }

// Len returns the number of items waiting: keys for PerKey, deltas for
// InOrder.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.lenLocked()
}

func (q *Queue[T]) lenLocked() int {
	if q.opts.Ordering == PerKey {
		return q.keys.len()
	}
	return q.events.len()
}

func (q *Queue[T]) checkSyncedLocked() {
	if q.populated && q.initialCount == 0 && !q.syncedClosed {
		q.syncedClosed = true
		close(q.synced)
	}
}

func (q *Queue[T]) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Add queues an Added delta for obj.
func (q *Queue[T]) Add(obj T) error { return q.write(Added, obj) }

// Update queues an Updated delta for obj.
func (q *Queue[T]) Update(obj T) error { return q.write(Updated, obj) }

// Delete queues a Deleted delta for obj. A PerKey queue with KnownObjects
// ignores the deletion of an object that is neither known nor queued, as
// DeltaFIFO does.
func (q *Queue[T]) Delete(obj T) error { return q.write(Deleted, obj) }

func (q *Queue[T]) write(t DeltaType, obj T) error {
	k, err := q.opts.KeyFunc(obj)
	if err != nil {
		return fmt.Errorf("fifo: %v: %w", t, err)
	}
	inOrder := q.opts.Ordering == InOrder
	var terr error
	if inOrder {
		// Transform outside the lock: it is user code, and the consumer
		// should not wait for it.
		if q.closedFlag.Load() {
			return ErrClosed
		}
		obj, terr = q.transform(obj)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	q.populated = true
	q.checkSyncedLocked()
	if !inOrder {
		if t == Deleted && q.opts.KnownObjects != nil {
			if _, queued := q.items[k]; !queued {
				if _, known, err := q.opts.KnownObjects.GetByKey(k); err == nil && !known {
					return nil
				}
			}
		}
		obj, terr = q.transform(obj)
	}
	if terr != nil {
		return fmt.Errorf("fifo: %v %v: %w", t, k, terr)
	}
	q.queueLocked(k, Delta[T]{Type: t, Object: obj})
	return nil
}

func (q *Queue[T]) transform(obj T) (out T, err error) {
	if q.opts.Transform == nil {
		return obj, nil
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = obj, fmt.Errorf("transform: %w: %v", ErrTransformPanic, r)
		}
	}()
	out, err = q.opts.Transform(obj)
	if err != nil {
		return obj, fmt.Errorf("transform: %w", err)
	}
	var zero T
	if out == zero {
		return obj, fmt.Errorf("transform: %w", cache.ErrNilObject)
	}
	return out, nil
}

// queueLocked appends one delta for k.
func (q *Queue[T]) queueLocked(k cache.Key, d Delta[T]) {
	if q.opts.Ordering == PerKey {
		old, queued := q.items[k]
		q.items[k] = collapseDeletes(append(old, d))
		if !queued {
			q.keys.push(k)
		}
	} else {
		q.events.push(pending[T]{key: k, delta: d})
	}
	q.signal()
}

// Pop waits for an item and calls process with it. It returns process's
// error (the item is then back at the head of the queue), ctx's error if ctx
// ends first, or ErrClosed once the queue is closed and empty. As with
// PopBatch, the item's Deltas slice may be reused once process returns:
// process must not retain it (the objects themselves may be kept).
func (q *Queue[T]) Pop(ctx context.Context, process func(item Item[T], isInInitialList bool) error) error {
	return q.pop(ctx, 1, func(items []Item[T], initial bool) error { return process(items[0], initial) })
}

// PopBatch waits for items and calls process with up to MaxBatch of them, in
// queue order. All items of one batch share isInInitialList. The slices
// handed to process are reused afterwards: process must not retain them
// (the objects themselves may be kept). If process fails, the whole batch
// goes back to the head of the queue.
func (q *Queue[T]) PopBatch(ctx context.Context, process func(items []Item[T], isInInitialList bool) error) error {
	return q.pop(ctx, q.opts.MaxBatch, process)
}

func (q *Queue[T]) pop(ctx context.Context, max int, process func([]Item[T], bool) error) error {
	for {
		q.mu.Lock()
		if q.lenLocked() > 0 {
			return q.processAndUnlock(max, process)
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return ErrClosed
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-q.wake:
		case <-q.done:
		}
	}
}

// processAndUnlock hands out up to max items to process and releases the
// lock. It also does so if process panics: the items then go back to the
// head of the queue, as when process fails, and the panic goes on.
func (q *Queue[T]) processAndUnlock(max int, process func([]Item[T], bool) error) error {
	defer q.mu.Unlock()
	initial := q.initialCount > 0
	if initial && max > q.initialCount {
		max = q.initialCount // never mix initial and later items in a batch
	}
	var n int
	if q.opts.Ordering == PerKey {
		n = q.takePerKeyLocked(max)
	} else {
		n = q.takeInOrderLocked(max)
	}
	failed := true // until process returns nil
	defer func() {
		if failed {
			if q.opts.Ordering == PerKey {
				q.requeuePerKeyLocked()
			} else {
				q.requeueInOrderLocked()
			}
		} else if initial {
			q.initialCount -= n
			q.checkSyncedLocked()
		}
		clear(q.batch)
		clear(q.deltas)
		q.batch, q.deltas = q.batch[:0], q.deltas[:0]
		if failed {
			q.signal()
		}
	}()
	err := process(q.batch, initial)
	failed = err != nil
	return err
}
