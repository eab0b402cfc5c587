package typed

import (
	"github.com/typedinformer/informer/cache"
)

// BufferPolicy says what a handler's buffer of pending notifications does
// while the handler lags behind the informer.
type BufferPolicy uint8

const (
	// Unbounded keeps every notification until the handler takes it, as
	// client-go's informers do: a handler that stalls makes its buffer
	// grow with every change.
	Unbounded BufferPolicy = iota
	// Block bounds the pending notifications at HandlerOptions.Size: while
	// the handler has that many pending, the informer's writer waits, the
	// cache stops moving, and the informer's queue then holds the watch
	// back (back-pressure onto the source). Every handler of the informer,
	// and every reader of its cache, waits for the slowest Block handler;
	// a Block handler must not wait for the cache to move (for example
	// with WaitForResourceVersion) inside its callbacks.
	Block
	// CoalesceByKey keeps at most one pending notification per key (two
	// in one case, below), so a lagging handler holds about as many as the
	// cache has objects and still ends on every key's final state. A new
	// notification for a key with one pending merges into it: Add then
	// Update is an Add of the newer object; Update then Update is one
	// Update from the older old to the newer new; anything then Delete is
	// a Delete, and Add then Delete is nothing; Delete then Add of the
	// same object (same UID) is an Update from the object the handler
	// holds to the new one. Delete then Add of a new object under the same
	// name (another UID) stays a Delete then an Add, as the informer
	// reports a UID change: an Update's two objects always have one UID.
	// That Add then merges as any Add does (a later Update into it, a
	// Delete cancels it and leaves the Delete). Registration.Merged counts
	// the notifications merged away.
	CoalesceByKey
)

// String returns the policy's name.
func (p BufferPolicy) String() string {
	switch p {
	case Unbounded:
		return "Unbounded"
	case Block:
		return "Block"
	case CoalesceByKey:
		return "CoalesceByKey"
	}
	return "BufferPolicy(?)"
}

// DefaultBufferSize is the bound of a Block buffer when HandlerOptions.Size
// is 0.
const DefaultBufferSize = 1000

// HandlerOptions configure [Informer.AddHandlerWithOptions]. The zero value
// is AddHandler's: an Unbounded buffer and a generated name.
type HandlerOptions struct {
	// Name names the handler in errors; default "<informer>#<n>".
	Name string
	// Buffer is the buffer's policy while the handler lags.
	Buffer BufferPolicy
	// Size is the bound of a Block buffer (DefaultBufferSize if 0); the
	// writer waits while that many notifications are pending, so at most
	// Size plus one batch are pending, and one more batch is being
	// handled. It does not apply to the other policies.
	Size int
}

// notifyReplace is a pending Delete of one object then an Add of another
// of the same key and another UID: the pair CoalesceByKey keeps apart. Its
// old, fsu and moved are the Delete's, obj and initial the Add's.
const notifyReplace notifyKind = notifySynced + 1

// mergeResult says what merge did with a notification.
type mergeResult uint8

const (
	merged    mergeResult = iota // folded into the pending one
	cancelled                    // the two cancel out: nothing is pending
	split                        // a Delete and an Add of a new UID: two are pending
	unpaired                     // a pair's Add and the new Delete cancel out: the pair's Delete is pending
)

// addLocked queues n, merging it into the key's pending notification under
// CoalesceByKey.
func (l *listener[T]) addLocked(n notification[T]) {
	if l.pending == nil || n.kind == notifySynced {
		l.buf = append(l.buf, n)
		l.depth.Add(1)
		return
	}
	i, ok := l.pending[n.key()]
	if !ok {
		l.pending[n.key()] = len(l.buf)
		l.buf = append(l.buf, n)
		l.depth.Add(1)
		return
	}
	switch merge(&l.buf[i], n) {
	case merged:
		l.merged.Add(1)
	case split:
		l.depth.Add(1)
	case unpaired:
		l.merged.Add(2)
		l.depth.Add(-1)
	case cancelled:
		l.buf[i] = notification[T]{}
		delete(l.pending, n.key())
		l.merged.Add(2)
		l.depth.Add(-1)
		l.dead++
		if l.dead > 64 && 2*l.dead > len(l.buf)-l.head {
			l.compactLocked()
		}
	}
}

// merge folds n into the pending notification p of the same key.
func merge[T cache.Object](p *notification[T], n notification[T]) mergeResult {
	var zero T
	switch n.kind {
	case notifyDelete:
		switch p.kind {
		case notifyAdd:
			return cancelled
		case notifyReplace:
			// The new object was never delivered: only the Delete of
			// the one the handler holds is left.
			*p = notification[T]{kind: notifyDelete, fsu: p.fsu, moved: p.moved, obj: p.old}
			return unpaired
		}
		had := n.old // the cached object the Delete removed
		if p.kind == notifyUpdate {
			had = p.old // the handler holds an Update's old
		}
		*p = n
		p.old = had // kept for a Delete then Add, unused by the Delete
		return merged
	case notifyAdd:
		if p.kind == notifyDelete {
			if o, c := p.obj.GetUID(), n.obj.GetUID(); o != "" && c != "" && o != c {
				// Another object under the name: the handler hears the
				// Delete, then the Add.
				*p = notification[T]{kind: notifyReplace, fsu: p.fsu, moved: p.moved, old: p.obj, obj: n.obj, initial: n.initial}
				return split
			}
			// Gone and back: an Update from what the handler holds.
			had := p.old
			if had == zero {
				had = p.obj
			}
			*p = notification[T]{kind: notifyUpdate, old: had, obj: n.obj}
			return merged
		}
		p.obj = n.obj // after an Add, Update or a pair: the newer object
	case notifyUpdate:
		switch p.kind {
		case notifyAdd, notifyUpdate, notifyReplace: // keeps the oldest old, and initial
			p.obj = n.obj
		default:
			*p = n
		}
	}
	if p.kind == notifyAdd {
		p.old = zero
	}
	return merged
}

// compactLocked drops the cancelled entries of buf and reindexes it.
func (l *listener[T]) compactLocked() {
	out := l.buf[:0]
	for _, n := range l.buf[l.head:] {
		if n.kind != 0 {
			if n.kind != notifySynced {
				l.pending[n.key()] = len(out)
			}
			out = append(out, n)
		}
	}
	clear(l.buf[len(out):])
	l.buf, l.dead, l.head = out, 0, 0
}

// runCoalesced is run for CoalesceByKey: it takes one notification at a
// time, so that everything the handler has not started on stays pending
// and keeps merging.
func (l *listener[T]) runCoalesced() {
	for {
		l.notePassed()
		l.mu.Lock()
		for l.head < len(l.buf) && l.buf[l.head].kind == 0 {
			l.head++
			l.dead--
		}
		if l.head == len(l.buf) {
			clear(l.buf)
			l.buf, l.head, l.dead = shrink(l.buf), 0, 0
			l.mu.Unlock()
			select {
			case <-l.stop:
				return
			case <-l.wake:
			}
			continue
		}
		n := l.buf[l.head]
		if n.kind == notifyReplace {
			// The Delete now; the Add stays pending and keeps merging.
			l.buf[l.head] = notification[T]{kind: notifyAdd, obj: n.obj, initial: n.initial}
			n = notification[T]{kind: notifyDelete, obj: n.old, fsu: n.fsu, moved: n.moved}
		} else {
			l.buf[l.head] = notification[T]{}
			l.head++
			if n.kind != notifySynced {
				delete(l.pending, n.key())
			}
		}
		l.mu.Unlock()
		if l.removed.Load() {
			return
		}
		if n.kind == notifySynced {
			close(l.synced)
			continue
		}
		if !l.admits(&n) {
			l.depth.Add(-1)
			continue
		}
		l.call(&n)
		l.depth.Add(-1)
	}
}
