package typed

import (
	"fmt"

	"github.com/typedinformer/informer/handler"
)

// Registration is the handle of a handler added to an informer.
type Registration struct {
	l interface {
		hasSynced() bool
		pending() int64
		panicCount() int64
	}
	owner any
}

// HasSynced reports whether the handler has been called for every object of
// the initial list (or, for a handler added later, of the cache's content
// when it was added).
func (r *Registration) HasSynced() bool { return r.l.hasSynced() }

// Pending is the number of notifications queued for the handler and not yet
// handled: how far behind it is.
func (r *Registration) Pending() int64 { return r.l.pending() }

// Panics is the number of handler calls that panicked.
func (r *Registration) Panics() int64 { return r.l.panicCount() }

func (l *listener[T]) pending() int64    { return l.depth.Load() }
func (l *listener[T]) panicCount() int64 { return l.panics.Load() }

// AddHandler adds a handler. If the informer already has objects cached, the
// handler first gets one OnAdd (isInInitialList true) for each, then every
// later change. It returns ErrStopped after Run has returned.
func (inf *Informer[T]) AddHandler(h handler.Handler[T]) (*Registration, error) {
	if h == nil {
		return nil, fmt.Errorf("typed: %s: nil handler", inf.name)
	}
	inf.life.Lock()
	defer inf.life.Unlock()
	if inf.stopped || inf.runCtx != nil && inf.runCtx.Err() != nil {
		return nil, ErrStopped
	}
	l := newListener(h, inf.handleError)
	inf.dispatch.Lock()
	// Under the dispatch lock the cache does not change: the snapshot and
	// the notifications that follow fit together exactly.
	var snap []notification[T]
	for k, obj := range inf.indexer.All() {
		snap = append(snap, notification[T]{kind: notifyAdd, initial: true, key: k, obj: obj})
	}
	l.push(snap)
	if inf.status.isSynced() {
		l.initDone.Store(true)
	}
	inf.listeners = append(inf.listeners, l)
	inf.dispatch.Unlock()
	if inf.started && inf.runCtx != nil {
		inf.startListener(inf.runCtx, l)
	}
	return &Registration{l: l, owner: inf}, nil
}

// RemoveHandler removes a handler. After it returns the handler gets no
// further calls, except one that may be in progress.
func (inf *Informer[T]) RemoveHandler(reg *Registration) error {
	if reg == nil || reg.owner != any(inf) {
		return ErrUnknownHandler
	}
	l, ok := reg.l.(*listener[T])
	if !ok {
		return ErrUnknownHandler
	}
	inf.dispatch.Lock()
	defer inf.dispatch.Unlock()
	for i, x := range inf.listeners {
		if x == l {
			inf.listeners = append(inf.listeners[:i], inf.listeners[i+1:]...)
			l.removed.Store(true)
			l.shutdown()
			return nil
		}
	}
	return ErrUnknownHandler
}
