package typed

import (
	"context"
	"fmt"
	"runtime/debug"
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
)

// notification is one pending handler call, stored by value: queuing it
// allocates nothing once the buffers have grown.
type notification[T cache.Object] struct {
	kind    notifyKind
	initial bool // an Add of the initial list (counts towards HasSynced)
	fsu     bool // Delete with final state unknown
	key     cache.Key
	old     T
	obj     T
}

// listener runs one handler on its own goroutine, fed by a buffer that the
// dispatcher fills a batch at a time.
type listener[T cache.Object] struct {
	h       handler.Handler[T]
	onPanic func(error)

	mu      sync.Mutex
	buf     []notification[T]
	spare   []notification[T]
	wake    chan struct{}
	stop    chan struct{}
	stopped bool

	removed     atomic.Bool
	initDone    atomic.Bool  // the initial notifications are all queued
	initialLeft atomic.Int64 // initial notifications not yet handled
	depth       atomic.Int64 // notifications queued, not yet handled
	panics      atomic.Int64
}

func newListener[T cache.Object](h handler.Handler[T], onPanic func(error)) *listener[T] {
	return &listener[T]{h: h, onPanic: onPanic, wake: make(chan struct{}, 1), stop: make(chan struct{})}
}

// push queues notifications; the caller holds the informer's dispatch lock.
func (l *listener[T]) push(ns []notification[T]) {
	if len(ns) == 0 {
		return
	}
	initial := 0
	for i := range ns {
		if ns[i].initial {
			initial++
		}
	}
	l.initialLeft.Add(int64(initial))
	l.depth.Add(int64(len(ns)))
	l.mu.Lock()
	l.buf = append(l.buf, ns...)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// hasSynced reports whether every initial notification has been handled.
func (l *listener[T]) hasSynced() bool {
	return l.initDone.Load() && l.initialLeft.Load() == 0
}

// shutdown makes run return after the call in progress, if any.
func (l *listener[T]) shutdown() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.stopped = true
		close(l.stop)
	}
}

// run calls the handler for every notification until ctx ends or the
// listener is shut down. Pending notifications are then dropped.
func (l *listener[T]) run(ctx context.Context) {
	for {
		l.mu.Lock()
		batch := l.buf
		l.buf = l.spare[:0]
		l.mu.Unlock()
		for i := range batch {
			if ctx.Err() != nil || l.removed.Load() {
				return
			}
			l.call(&batch[i])
			l.depth.Add(-1)
			if batch[i].initial {
				l.initialLeft.Add(-1)
			}
		}
		clear(batch)
		l.mu.Lock()
		l.spare = batch[:0]
		empty := len(l.buf) == 0
		l.mu.Unlock()
		if !empty {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-l.stop:
			return
		case <-l.wake:
		}
	}
}

// call runs one handler method; a panic is recovered and reported, and the
// listener goes on with the next notification.
func (l *listener[T]) call(n *notification[T]) {
	defer func() {
		if r := recover(); r != nil {
			l.panics.Add(1)
			l.onPanic(fmt.Errorf("%w: %v\n%s", ErrHandlerPanic, r, debug.Stack()))
		}
	}()
	switch n.kind {
	case notifyAdd:
		l.h.OnAdd(n.obj, n.initial)
	case notifyUpdate:
		l.h.OnUpdate(n.old, n.obj)
	case notifyDelete:
		l.h.OnDelete(handler.Deleted[T]{Obj: n.obj, Key: n.key, FinalStateUnknown: n.fsu})
	}
}
