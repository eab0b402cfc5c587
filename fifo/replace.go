package fifo

import (
	"fmt"

	"github.com/typedinformer/informer/cache"
)

// Replace reports a full list read at resourceVersion. Every object is
// transformed and keyed first; if any fails, Replace returns the error and
// queues nothing. Then objects the list lacks get a Deleted delta with
// FinalStateUnknown and their last known state (from the queue, else from
// KnownObjects), at most once per key, and every listed object a Replaced
// delta. The first Replace defines the initial list for HasSynced.
func (q *Queue[T]) Replace(list []T, resourceVersion string) error {
	keys := make([]cache.Key, len(list))
	listed := make(map[cache.Key]struct{}, len(list))
	objs := make([]T, len(list))
	for i, obj := range list {
		k, err := q.opts.KeyFunc(obj)
		if err != nil {
			return fmt.Errorf("fifo: replace at %q: item %d: %w", resourceVersion, i, err)
		}
		if objs[i], err = q.transform(obj); err != nil {
			return fmt.Errorf("fifo: replace at %q: %v: %w", resourceVersion, k, err)
		}
		keys[i] = k
		listed[k] = struct{}{}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	if q.opts.Ordering == PerKey {
		q.replacePerKeyLocked(keys, objs, listed)
	} else {
		q.replaceInOrderLocked(keys, objs, listed)
	}
	if !q.populated {
		q.populated = true
		q.initialCount = q.lenLocked()
		q.checkSyncedLocked()
	}
	return nil
}

// Resync queues a Sync delta for every object in KnownObjects that has no
// delta queued. Without KnownObjects it does nothing.
func (q *Queue[T]) Resync() error {
	if q.opts.KnownObjects == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	if q.opts.Ordering == PerKey {
		return q.resyncPerKeyLocked()
	}
	return q.resyncInOrderLocked()
}
