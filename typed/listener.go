package typed

import (
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
)

// notifyKind says which handler method a notification calls.
type notifyKind uint8

const (
	notifyAdd notifyKind = iota + 1
	notifyUpdate
	notifyDelete
	// notifySynced marks the end of the handler's initial notifications.
	notifySynced
)

// notification is one pending handler call, stored by value: queuing it
// allocates nothing once the buffers have grown. It is small (24 bytes
// for a pointer T), as a lagging handler's backlog holds one per change:
// the key is not kept but read from the object, which every notification
// but the sync marker has.
type notification[T cache.Object] struct {
	kind    notifyKind
	initial bool // an Add of the initial list
	fsu     bool // Delete with final state unknown
	moved   bool // Delete of an object moved out of the informer's shard (move.go)
	old     T
	obj     T
}

// key is the cache key of the notification's object (none for the sync
// marker).
func (n *notification[T]) key() cache.Key {
	var zero T
	if n.obj == zero {
		return cache.Key{}
	}
	return cache.KeyOf(n.obj)
}

// pushed is a batch that arrived before the listener's snapshot was taken.
type pushed[T cache.Object] struct {
	ns    []notification[T]
	rev   uint64
	first bool
}

// listener runs one handler on its own goroutine, fed by a buffer that the
// writer fills a batch at a time. Every batch carries the store revision it
// produced; a listener added while the informer runs starts from a
// snapshot of the store at some revision and drops the batches that
// snapshot already holds, so it sees every change exactly once.
type listener[T cache.Object] struct {
	h       handler.Handler[T]
	name    string
	onPanic func(error)

	mu      sync.Mutex
	ready   bool        // the snapshot is in buf
	initRev uint64      // the snapshot's revision
	marked  bool        // the sync marker is queued
	early   []pushed[T] // batches pushed before the snapshot
	buf     []notification[T]
	spare   []notification[T]

	policy  BufferPolicy
	size    int               // Block: the bound on buf
	pending map[cache.Key]int // CoalesceByKey: key -> index in buf
	dead    int               // CoalesceByKey: cancelled entries in buf[head:]
	head    int               // CoalesceByKey: the next entry runCoalesced takes
	room    chan struct{}     // Block: run took buf
	merged  atomic.Int64

	wake     chan struct{}
	stop     chan struct{} // closed by shutdown
	stopOnce sync.Once
	synced   chan struct{} // closed when the handler has handled its initial notifications
	removed  atomic.Bool
	depth    atomic.Int64
	panics   atomic.Int64

	// The fence of a sharded informer (move.go): the objects the handler
	// may still hear about, and the last fence the listener decided under.
	fence    atomic.Pointer[keeper[T]]
	passed   atomic.Uint64
	passedCh chan struct{} // closed and replaced when passed moves; under mu
}

func newListener[T cache.Object](h handler.Handler[T], name string, onPanic func(error), opts HandlerOptions) *listener[T] {
	l := &listener[T]{
		h: h, name: name, onPanic: onPanic, policy: opts.Buffer, size: opts.Size,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), synced: make(chan struct{}),
		room: make(chan struct{}, 1), passedCh: make(chan struct{}),
	}
	if l.size <= 0 {
		l.size = DefaultBufferSize
	}
	if l.policy == CoalesceByKey {
		l.pending = map[cache.Key]int{}
	}
	return l
}

// start queues the listener's snapshot: an Add (initial) for each object of
// the store at revision rev, and the sync marker if the informer's first
// list (at revision listed, 0 if none yet) is in it. Batches pushed
// earlier are then queued as push would have.
func (l *listener[T]) start(objs []T, rev, listed uint64) {
	l.mu.Lock()
	l.initRev = rev
	for _, obj := range objs {
		l.addLocked(notification[T]{kind: notifyAdd, initial: true, obj: obj})
	}
	if listed != 0 && listed <= rev {
		l.markLocked()
	}
	l.ready = true
	for _, p := range l.early {
		l.appendLocked(p.ns, p.rev, p.first)
	}
	l.early = nil
	l.mu.Unlock()
	l.signal()
}

// push queues a batch of notifications that produced store revision rev;
// first is set for the informer's first list. The writer calls it with no
// lock of its own held. Under Block it waits, while the handler's pending
// notifications are at the bound, for the handler to take them, until the
// listener stops or done closes.
func (l *listener[T]) push(done <-chan struct{}, ns []notification[T], rev uint64, first bool) {
	l.mu.Lock()
	for l.policy == Block && l.ready && len(l.buf) >= l.size && !l.removed.Load() {
		l.mu.Unlock()
		select {
		case <-l.room:
		case <-l.stop:
			return
		case <-done:
			return
		}
		l.mu.Lock()
	}
	if !l.ready {
		l.early = append(l.early, pushed[T]{ns: slices.Clone(ns), rev: rev, first: first})
		l.mu.Unlock()
		return
	}
	l.appendLocked(ns, rev, first)
	l.mu.Unlock()
	l.signal()
}

func (l *listener[T]) appendLocked(ns []notification[T], rev uint64, first bool) {
	if rev != 0 && rev <= l.initRev {
		// The snapshot holds this batch already.
		if first {
			l.markLocked()
		}
		return
	}
	if l.pending == nil {
		l.buf = append(grow(l.buf, len(ns)), ns...) // one copy: nothing to merge
		l.depth.Add(int64(len(ns)))
	} else {
		for i := range ns {
			l.addLocked(ns[i])
		}
	}
	if first {
		l.markLocked()
	}
}

func (l *listener[T]) markLocked() {
	if !l.marked {
		l.marked = true
		l.buf = append(l.buf, notification[T]{kind: notifySynced})
	}
}

func (l *listener[T]) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// shutdown stops the listener after the call in progress, if any; nothing
// queued is delivered after it.
func (l *listener[T]) shutdown() {
	l.removed.Store(true)
	l.stopOnce.Do(func() { close(l.stop) })
}

// pendingStep is how many calls a listener makes before it brings its
// pending count down: Registration.Pending may count up to pendingStep-1
// notifications already handled, until the batch ends.
const pendingStep = 64

// run calls the handler for every notification until shutdown.
func (l *listener[T]) run() {
	if l.pending != nil {
		l.runCoalesced()
		return
	}
	for {
		l.notePassed()
		l.mu.Lock()
		batch := l.buf
		l.buf = l.spare[:0]
		l.mu.Unlock()
		select {
		case l.room <- struct{}{}:
		default:
		}
		// handled counts the calls not yet taken off depth: Pending is
		// brought down every pendingStep calls and at the batch's end, not
		// with an atomic write per call.
		handled := int64(0)
		for i := range batch {
			if l.removed.Load() {
				l.depth.Add(-handled)
				return
			}
			n := &batch[i]
			if n.kind == 0 { // cancelled out by coalescing
				continue
			}
			if n.kind == notifySynced {
				close(l.synced)
				continue
			}
			if l.admits(n) {
				l.call(n)
			}
			if handled++; handled == pendingStep {
				l.depth.Add(-handled)
				handled = 0
			}
		}
		l.depth.Add(-handled)
		l.mu.Lock()
		l.spare = reuse(batch, len(l.buf))
		empty := len(l.buf) == 0
		l.mu.Unlock()
		if empty {
			select {
			case <-l.stop:
				return
			case <-l.wake:
			}
		}
	}
}

// call runs one handler method; a panic is recovered and reported, and the
// listener goes on with the next notification.
func (l *listener[T]) call(n *notification[T]) {
	defer func() {
		if r := recover(); r != nil {
			l.panics.Add(1)
			l.onPanic(fmt.Errorf("handler %s: %w: %v\n%s", l.name, ErrHandlerPanic, r, debug.Stack()))
		}
	}()
	switch n.kind {
	case notifyAdd:
		l.h.OnAdd(n.obj, n.initial)
	case notifyUpdate:
		l.h.OnUpdate(n.old, n.obj)
	case notifyDelete:
		l.h.OnDelete(handler.Deleted[T]{Object: n.obj, Key: n.key(), FinalStateUnknown: n.fsu, MovedOut: n.moved})
	}
}

func (l *listener[T]) hasSynced() bool {
	select {
	case <-l.synced:
		return true
	default:
		return false
	}
}
