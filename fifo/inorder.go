package fifo

import (
	"slices"

	"github.com/typedinformer/informer/cache"
)

// takeInOrderLocked moves up to max deltas into q.batch, one Item each. The
// Items' delta slices share one reused backing array.
func (q *Queue[T]) takeInOrderLocked(max int) int {
	n := min(max, q.events.len())
	q.deltas = slices.Grow(q.deltas[:0], n)[:n]
	for i := range n {
		p := q.events.pop()
		q.deltas[i] = p.delta
		q.batch = append(q.batch, Item[T]{Key: p.key, Deltas: q.deltas[i : i+1 : i+1]})
	}
	return n
}

// requeueInOrderLocked puts a failed batch back at the head, in order.
func (q *Queue[T]) requeueInOrderLocked() {
	back := make([]pending[T], len(q.batch))
	for i, it := range q.batch {
		back[i] = pending[T]{key: it.Key, delta: it.Deltas[0]}
	}
	q.events.unpop(back)
}

// replaceInOrderLocked implements Replace for InOrder, as RealFIFO does: first
// an inferred deletion for each queued key (in first-queued order) whose
// last queued delta is not a deletion and that the list lacks, then one for
// each known key that the list lacks and that has nothing queued, then a
// Replaced delta per listed object.
func (q *Queue[T]) replaceInOrderLocked(keys []cache.Key, list []T, listed map[cache.Key]struct{}) {
	last := make(map[cache.Key]Delta[T], q.events.len())
	var order []cache.Key
	for p := range q.events.all {
		if _, seen := last[p.key]; !seen {
			order = append(order, p.key)
		}
		last[p.key] = p.delta
	}
	for _, k := range order {
		if _, ok := listed[k]; ok {
			continue
		}
		if d := last[k]; d.Type != Deleted {
			q.queueLocked(k, Delta[T]{Type: Deleted, Object: d.Object, FinalStateUnknown: true})
		}
	}
	if q.opts.KnownObjects != nil {
		for k := range q.opts.KnownObjects.Keys() {
			if _, ok := listed[k]; ok {
				continue
			}
			if _, queued := last[k]; queued {
				continue
			}
			obj, _, _ := q.opts.KnownObjects.GetByKey(k)
			q.queueLocked(k, Delta[T]{Type: Deleted, Object: obj, FinalStateUnknown: true})
		}
	}
	for i, obj := range list {
		q.queueLocked(keys[i], Delta[T]{Type: Replaced, Object: obj})
	}
}

// resyncInOrderLocked queues a Sync delta for every known object that has
// nothing queued.
func (q *Queue[T]) resyncInOrderLocked() error {
	queued := make(map[cache.Key]struct{}, q.events.len())
	for p := range q.events.all {
		queued[p.key] = struct{}{}
	}
	return q.syncKnownLocked(func(k cache.Key) bool {
		_, ok := queued[k]
		return ok
	})
}
