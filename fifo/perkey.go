package fifo

import (
	"fmt"

	"github.com/typedinformer/informer/cache"
)

// takePerKeyLocked moves up to max keys with their deltas into q.batch.
func (q *Queue[T]) takePerKeyLocked(max int) int {
	for q.keys.len() > 0 && len(q.batch) < max {
		k := q.keys.pop()
		d := q.items[k]
		delete(q.items, k)
		q.batch = append(q.batch, Item[T]{Key: k, Deltas: d})
	}
	return len(q.batch)
}

// requeuePerKeyLocked puts a failed batch back at the head. The lock was held
// throughout processing, so no delta for these keys arrived meanwhile.
func (q *Queue[T]) requeuePerKeyLocked() {
	keys := make([]cache.Key, len(q.batch))
	for i, it := range q.batch {
		keys[i] = it.Key
		q.items[it.Key] = it.Deltas
	}
	q.keys.unpop(keys)
}

// replacePerKeyLocked implements Replace for PerKey: a Replaced delta per
// listed object, then an inferred deletion for every queued or known key
// that the list lacks.
func (q *Queue[T]) replacePerKeyLocked(keys []cache.Key, list []T, listed map[cache.Key]struct{}) {
	for i, obj := range list {
		q.queueLocked(keys[i], Delta[T]{Type: Replaced, Object: obj})
	}

	// Inferred deletions for queued keys, in queue order for determinism.
	for i := range q.keys.len() {
		k := q.keys.at(i)
		if _, ok := listed[k]; ok {
			continue
		}
		last := q.items[k][len(q.items[k])-1]
		q.queueLocked(k, Delta[T]{Type: Deleted, Object: last.Object, FinalStateUnknown: true})

	}
	if q.opts.KnownObjects != nil {
		for k := range q.opts.KnownObjects.Keys() {
			if _, ok := listed[k]; ok {
				continue
			}
			if len(q.items[k]) > 0 {
				continue
			}
			// On a lookup error the tombstone carries no object, as in
			// client-go.
			obj, _, _ := q.opts.KnownObjects.GetByKey(k)
			q.queueLocked(k, Delta[T]{Type: Deleted, Object: obj, FinalStateUnknown: true})
		}
	}

}

// resyncPerKeyLocked queues a Sync delta for every known object that has
// nothing queued.
func (q *Queue[T]) resyncPerKeyLocked() error {
	return q.syncKnownLocked(func(k cache.Key) bool { return len(q.items[k]) > 0 })
}

// syncKnownLocked queues a Sync delta for every known object whose key is
// not queued: a queued change is newer than the consumer's copy, and
// resyncing that copy after it would undo it.
func (q *Queue[T]) syncKnownLocked(queued func(cache.Key) bool) error {
	for k := range q.opts.KnownObjects.Keys() {
		if queued(k) {
			continue
		}
		obj, ok, err := q.opts.KnownObjects.GetByKey(k)
		if err != nil || !ok {
			continue
		}
		if _, err := q.opts.KeyFunc(obj); err != nil {
			return fmt.Errorf("fifo: resync %v: %w", k, err)
		}
		q.queueLocked(k, Delta[T]{Type: Sync, Object: obj})
	}
	return nil
}
