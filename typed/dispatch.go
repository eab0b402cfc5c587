package typed

import (
	"fmt"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
)

// processBatch applies popped deltas to the cache and hands the resulting
// notifications to every listener. It runs with the queue's lock held, so
// Replace and Resync never see the cache half a batch behind the queue.
func (inf *Informer[T]) processBatch(items []fifo.Item[T], initial bool) error {
	inf.dispatch.Lock()
	defer inf.dispatch.Unlock()
	ns := inf.scratch[:0]
	for i := range items {
		for _, d := range items[i].Deltas {
			if n, ok := inf.apply(items[i].Key, d, initial); ok {
				if n.kind == notifyUpdate && uidChanged(n.old, n.obj) {
					// The same name with a new UID (deleted and re-created
					// while the watch was down, found by a relist): another
					// object, so Delete (final state unknown) + Add.
					ns = append(ns, notification[T]{kind: notifyDelete, key: n.key, obj: n.old, fsu: true})
					n = notification[T]{kind: notifyAdd, key: n.key, obj: n.obj, initial: initial}
				}
				ns = append(ns, n)
			}
		}
	}
	for _, l := range inf.listeners {
		l.push(ns)
	}
	clear(ns)
	inf.scratch = ns[:0]
	return nil
}

// apply changes the cache for one delta and returns the notification for
// the handlers, if any.
func (inf *Informer[T]) apply(k cache.Key, d fifo.Delta[T], initial bool) (notification[T], bool) {
	switch d.Type {
	case fifo.Deleted:
		old, existed := inf.indexer.DeleteKey(k)
		if !existed {
			return notification[T]{}, false
		}
		obj := d.Object
		var zero T
		if obj == zero {
			obj = old
		}
		return notification[T]{kind: notifyDelete, key: k, obj: obj, fsu: d.FinalStateUnknown}, true
	default: // Added, Updated, Replaced, Sync
		old, existed, err := inf.indexer.Swap(k, d.Object)
		if err != nil {
			inf.dispatchErrs = append(inf.dispatchErrs, fmt.Errorf("cache %v: %w", k, err))
			return notification[T]{}, false
		}
		if existed {
			return notification[T]{kind: notifyUpdate, key: k, old: old, obj: d.Object}, true
		}
		return notification[T]{kind: notifyAdd, key: k, obj: d.Object, initial: initial}, true
	}
}

// uidChanged reports whether old and cur are different objects under one
// key: both have a UID and the UIDs differ.
func uidChanged[T cache.Object](old, cur T) bool {
	o, c := old.GetUID(), cur.GetUID()
	return o != "" && c != "" && o != c
}

// markSynced tells every listener that its initial notifications are all
// queued, once the informer has synced.
func (inf *Informer[T]) markSynced() {
	inf.dispatch.Lock()
	defer inf.dispatch.Unlock()
	for _, l := range inf.listeners {
		l.initDone.Store(true)
	}
	inf.status.markSynced()
}
