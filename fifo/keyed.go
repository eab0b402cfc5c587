package fifo

import (
	"context"
	"sync"

	"github.com/typedinformer/informer/cache"
)

// Item is what a [KeyedQueue] hands out: a key and its deltas, oldest
// first.
type Item[T cache.Object] struct {
	// Key is the key of every delta's object.
	Key cache.Key
	// Deltas are the key's changes, oldest first.
	Deltas []Delta[T]
	// Initial is set for the items of the first Replace (including its
	// inferred deletions): the initial list.
	Initial bool
}

// Newest returns the most recent delta of the item.
func (it Item[T]) Newest() Delta[T] {
	if len(it.Deltas) == 0 {
		return Delta[T]{}
	}
	return it.Deltas[len(it.Deltas)-1]
}

// KeyedQueue accumulates the deltas of each key and hands out a key with
// all its pending deltas at once; keys leave in the order they first
// arrived, and consecutive deletions of a key collapse into one. It is
// client-go's DeltaFIFO, for consumers that want a slow consumer to see
// each key once with its whole history.
//
// Where DeltaFIFO asks its consumer's store which objects it knows, a
// KeyedQueue remembers what it handed out: the consumer is expected to
// apply every item it pops. Replace infers deletions (Deleted with
// FinalStateUnknown) for keys that the list lacks, Resync queues a Sync for
// every known key with nothing queued, and Delete of a key neither known
// nor queued is dropped. Nothing is called while the lock is held.
//
// Writes may come from any goroutine; Pop is for a single consumer.
type KeyedQueue[T cache.Object] struct {
	mu     sync.Mutex
	items  map[cache.Key]int32 // a queued key's chain
	chains []chain             // per queued key; the free ones are listed in freeChains
	nodes  []node[T]           // every queued delta; the free ones form a list
	free   int32               // first free node, or -1
	keys   sliceQueue[int32]   // the queued keys' chains, in arrival order

	freeChains []int32
	known      map[cache.Key]T
	closed     bool
	wake       chan struct{}
	done       chan struct{}

	// populated is set by the first write of any kind; initialCount is the
	// number of keys of the first Replace still to be popped.
	populated    bool
	initialCount int
}

// NewKeyed returns an empty KeyedQueue. Options.MaxBatch does not apply:
// Pop hands out one key at a time.
func NewKeyed[T cache.Object](_ Options) *KeyedQueue[T] {
	return &KeyedQueue[T]{
		items: map[cache.Key]int32{},
		free:  -1,
		known: map[cache.Key]T{},
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
}

// Add queues an Added delta.
func (q *KeyedQueue[T]) Add(e cache.Entry[T]) error { return q.write(Added, e) }

// Update queues an Updated delta.
func (q *KeyedQueue[T]) Update(e cache.Entry[T]) error { return q.write(Updated, e) }

// Delete queues a Deleted delta, unless the key is neither known nor
// queued: then the consumer never had the object, and nothing is queued.
func (q *KeyedQueue[T]) Delete(e cache.Entry[T]) error { return q.write(Deleted, e) }

func (q *KeyedQueue[T]) write(t DeltaType, e cache.Entry[T]) error {
	e.Key = keyOf(e)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	q.populated = true
	if t == Deleted {
		_, queued := q.items[e.Key]
		if _, known := q.known[e.Key]; !known && !queued {
			return nil
		}
	}
	q.queueLocked(e.Key, Delta[T]{Type: t, Entry: e})
	return nil
}

// keyOf is the entry's key, computed if the entry is a literal without one.
func keyOf[T cache.Object](e cache.Entry[T]) cache.Key {
	var zero T
	if e.Key == (cache.Key{}) && e.Object != zero {
		return cache.KeyOf(e.Object)
	}
	return e.Key
}

// Replace queues a Replaced delta per listed entry, then an inferred
// deletion (FinalStateUnknown, with the last state the queue knew) for
// every queued or known key the list lacks. The first Replace defines the
// initial list for HasSynced.
func (q *KeyedQueue[T]) Replace(list []cache.Entry[T], _ string) error {
	listed := make(map[cache.Key]struct{}, len(list))
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	for _, e := range list {
		e.Key = keyOf(e)
		listed[e.Key] = struct{}{}
		q.queueLocked(e.Key, Delta[T]{Type: Replaced, Entry: e})
	}
	for i := range q.keys.len() { // in queue order, for determinism
		c := &q.chains[q.keys.at(i)]
		k := c.key
		if _, ok := listed[k]; ok {
			continue
		}
		last := q.nodes[c.tail].d.Object
		q.queueLocked(k, Delta[T]{Type: Deleted, Entry: cache.Entry[T]{Key: k, Object: last}, FinalStateUnknown: true})
	}
	for k, obj := range q.known {
		if _, ok := listed[k]; ok {
			continue
		}
		if _, queued := q.items[k]; queued {
			continue
		}
		q.queueLocked(k, Delta[T]{Type: Deleted, Entry: cache.Entry[T]{Key: k, Object: obj}, FinalStateUnknown: true})
	}
	if !q.populated {
		q.populated = true
		q.initialCount = q.keys.len()
	}
	return nil
}

// Resync queues a Sync delta for every known key with nothing queued: a
// queued change is newer than the consumer's copy, and resyncing the copy
// after it would undo it.
func (q *KeyedQueue[T]) Resync() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	for k, obj := range q.known {
		if _, queued := q.items[k]; !queued {
			q.queueLocked(k, Delta[T]{Type: Sync, Entry: cache.Entry[T]{Key: k, Object: obj}})
		}
	}
	return nil
}

// node is one queued delta, linked to the key's next one. Deltas live in
// a pool of nodes reused across keys, so that queueing allocates nothing in
// steady state and Pop copies a key's deltas into one slice of exactly
// their number.
type node[T cache.Object] struct {
	d    Delta[T]
	next int32 // the key's next node, or the next free node; -1: none
}

// chain is a queued key's deltas: the first and last node, and their
// count.
type chain struct {
	key        cache.Key
	head, tail int32
	n          int
}

// queueLocked appends d to k's deltas, collapsing two consecutive
// deletions into one (preferring a known final state).
func (q *KeyedQueue[T]) queueLocked(k cache.Key, d Delta[T]) {
	ci, queued := q.items[k]
	switch {
	case !queued:
		i := q.newNode(d)
		ci = q.newChain(chain{key: k, head: i, tail: i, n: 1})
		q.items[k] = ci
		q.keys.push(ci)
	case d.Type == Deleted && q.nodes[q.chains[ci].tail].d.Type == Deleted:
		if t := &q.nodes[q.chains[ci].tail].d; t.FinalStateUnknown {
			*t = d
		}
	default:
		c := &q.chains[ci]
		i := q.newNode(d)
		q.nodes[c.tail].next = i
		c.tail = i
		c.n++
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// newNode stores d in a free node, or a new one.
func (q *KeyedQueue[T]) newNode(d Delta[T]) int32 {
	if i := q.free; i >= 0 {
		q.free = q.nodes[i].next
		q.nodes[i] = node[T]{d: d, next: -1}
		return i
	}
	q.nodes = append(q.nodes, node[T]{d: d, next: -1})
	return int32(len(q.nodes) - 1)
}

// newChain stores c in a free chain slot, or a new one.
func (q *KeyedQueue[T]) newChain(c chain) int32 {
	if n := len(q.freeChains); n > 0 {
		i := q.freeChains[n-1]
		q.freeChains = q.freeChains[:n-1]
		q.chains[i] = c
		return i
	}
	q.chains = append(q.chains, c)
	return int32(len(q.chains) - 1)
}

// takeLocked removes chain ci's key and deltas from the queue and returns
// them, oldest first; the chain and its nodes are freed for reuse.
func (q *KeyedQueue[T]) takeLocked(ci int32) (cache.Key, []Delta[T]) {
	c := q.chains[ci]
	q.chains[ci] = chain{}
	q.freeChains = append(q.freeChains, ci)
	delete(q.items, c.key)
	ds := make([]Delta[T], 0, c.n)
	for i := c.head; i >= 0; {
		n := &q.nodes[i]
		ds = append(ds, n.d)
		next := n.next
		*n = node[T]{next: q.free}
		q.free = i
		i = next
	}
	return c.key, ds
}

// Pop waits for a key and hands it out with its deltas; from then on the
// queue counts the item's final state as known to the consumer. It returns
// ctx's error if ctx ends first, and ErrClosed once the queue is closed and
// empty.
func (q *KeyedQueue[T]) Pop(ctx context.Context) (Item[T], error) {
	for {
		q.mu.Lock()
		if q.keys.len() > 0 {
			k, ds := q.takeLocked(q.keys.pop())
			it := Item[T]{Key: k, Deltas: ds, Initial: q.initialCount > 0}
			if it.Initial {
				q.initialCount--
			}
			if d := it.Newest(); d.Type == Deleted {
				delete(q.known, k)
			} else {
				q.known[k] = d.Object
			}
			q.mu.Unlock()
			return it, nil
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return Item[T]{}, ErrClosed
		}
		select {
		case <-ctx.Done():
			return Item[T]{}, ctx.Err()
		case <-q.wake:
		case <-q.done:
		}
	}
}

// HasSynced reports whether every key of the first Replace has been popped.
// A write before any Replace also counts as synced, as in client-go.
func (q *KeyedQueue[T]) HasSynced() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.populated && q.initialCount == 0
}

// Len returns the number of queued keys.
func (q *KeyedQueue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.keys.len()
}

// Close makes writes fail and Pop return ErrClosed once the queue is empty.
// It is safe to call more than once.
func (q *KeyedQueue[T]) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.done)
	}
}
