package typed

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/reflector"
)

// ErrNotSharded is returned by Move for an informer made without
// Options.Shard.
var ErrNotSharded = errors.New("typed: informer not sharded (Options.Shard is nil)")

// Move moves a sharded informer to another shard, while it runs or before:
// package sharding moves its replica's informer at every reshard.
//
// keep is what the informer still holds on to (nil: nothing). From the
// moment Move is called, no handler is called for an object keep does not
// contain, but with the OnDelete (handler.Deleted.MovedOut set) that tells
// it the object left; the cache drops those objects at the point where
// the old shard's changes end, and every handler gets that OnDelete after
// what was queued before.
//
// next is what the informer lists and watches from then on; nil: nothing,
// the informer holds what keep kept and hears of no change until the next
// Move. The informer lists next at once: its list replaces what the cache
// holds, so keep should lie within next (an object keep kept that the list
// lacks is a deletion, FinalStateUnknown). Status().Shard.Synced is false
// until next's list is in the cache.
//
// Move returns once the old shard's watch has stopped, the cache has
// dropped what keep leaves out, and no handler call for such an object is
// still running: from then on the informer handles nothing outside keep.
// It returns ctx's error if ctx ends first (the move still happens; a
// handler that does not return is what stops it), ErrStopped once Run has
// returned, ErrNotSharded for an informer without Options.Shard. Moves
// made before Run take effect when it starts; calls of Move are
// serialised.
func (inf *Informer[T]) Move(ctx context.Context, keep, next Shard) error {
	if inf.opts.Shard == nil {
		return fmt.Errorf("informer %s: Move: %w", inf.name, ErrNotSharded)
	}
	inf.moving.Lock()
	defer inf.moving.Unlock()
	inf.mu.Lock()
	st := inf.state
	if st == stopped {
		inf.mu.Unlock()
		return ErrStopped
	}
	inf.fenceGen++
	k := newKeeper[T](keep, inf.fenceGen)
	inf.keep.Store(k)
	hs := *inf.handlers.Load()
	for _, l := range hs {
		l.fence.Store(k)
		l.signal() // an idle listener notes the fence, so that the wait below ends
	}
	inf.mu.Unlock()
	gen := inf.refl.Move(reflectorShard[T](next))
	if st == idle {
		return nil // nothing is cached or called yet: Run starts on next
	}
	marks, err := inf.refl.WaitMoved(ctx, gen, inf.done)
	if err == nil {
		err = inf.moves.wait(ctx, marks, inf.done)
	}
	for _, l := range hs {
		if err != nil {
			break
		}
		err = l.waitPassed(ctx, k.gen, inf.done)
	}
	if err != nil && isStopped(inf.done) {
		return ErrStopped
	}
	return err
}

// keeper is what a sharded informer holds on to since its last Move.
type keeper[T cache.Object] struct {
	keep Shard  // nil: nothing
	gen  uint64 // the Move's
}

func newKeeper[T cache.Object](keep Shard, gen uint64) *keeper[T] {
	return &keeper[T]{keep: keep, gen: gen}
}

// contains reports whether obj is one the informer holds on to.
func (k *keeper[T]) contains(obj T) bool { return k.keep != nil && k.keep.Contains(obj) }

// admits reports whether the listener may deliver n under its fence: a
// notification of an object outside what the informer holds on to is
// dropped, but the deletion that says it moved out.
func (l *listener[T]) admits(n *notification[T]) bool {
	f := l.fence.Load()
	if f == nil || n.moved {
		return true
	}
	var zero T
	if n.obj == zero {
		return true
	}
	return f.contains(n.obj)
}

// notePassed records that the listener decides under its current fence
// from now on: the call it was in, if any, has returned.
func (l *listener[T]) notePassed() {
	f := l.fence.Load()
	if f == nil || l.passed.Load() >= f.gen {
		return
	}
	l.mu.Lock()
	l.passed.Store(f.gen)
	close(l.passedCh)
	l.passedCh = make(chan struct{})
	l.mu.Unlock()
}

// waitPassed waits until the listener decides under fence gen or later,
// or has stopped.
func (l *listener[T]) waitPassed(ctx context.Context, gen uint64, done <-chan struct{}) error {
	for {
		l.mu.Lock()
		ch := l.passedCh
		l.mu.Unlock()
		if l.passed.Load() >= gen || l.removed.Load() {
			return nil
		}
		select {
		case <-ch:
		case <-l.stop:
			return nil
		case <-done:
			return ErrStopped
		case <-ctx.Done():
			return fmt.Errorf("handler %s: still in a call after the move: %w", l.name, ctx.Err())
		}
	}
}

// progress is a count the writer moves forward and others wait on.
type progress struct {
	mu      sync.Mutex
	n       uint64
	changed chan struct{}
}

func (p *progress) set(n uint64) {
	p.mu.Lock()
	p.n = n
	ch := p.changed
	p.changed = nil
	p.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

func (p *progress) wait(ctx context.Context, n uint64, done <-chan struct{}) error {
	for {
		p.mu.Lock()
		if p.n >= n {
			p.mu.Unlock()
			return nil
		}
		if p.changed == nil {
			p.changed = make(chan struct{})
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-done:
			return ErrStopped
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func isStopped(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// moveOut handles a Moved delta: the objects outside what the informer
// holds on to leave the cache, as one write, and each handler hears of
// each as a deletion that says it moved out.
func (a *applier[T]) moveOut() {
	a.flush()
	if a.listing { // a list of the old shard cut short by the move
		a.listing, a.list, a.listed, a.listRefused = false, shrink(a.list), nil, nil
	}
	a.moves++
	a.inf.shardListed.Store(false)
	if k := a.inf.keep.Load(); k != nil {
		for _, obj := range a.inf.store.List() {
			if !k.contains(obj) {
				a.changes = append(a.changes, cache.Change[T]{Entry: cache.Entry[T]{Key: cache.KeyOf(obj)}, Delete: true})
			}
		}
		if k.keep == nil {
			clear(a.held)
			a.heldChanged = true
		}
	}
	if len(a.changes) > 0 {
		rev, err := a.inf.writer.Apply(a.changes)
		if err != nil {
			a.inf.reportAsync(err)
		}
		a.rev = rev
		if a.inf.mutations != nil {
			a.inf.mutations.record(a.changes)
		}
		for i := range a.changes {
			c := &a.changes[i]
			a.release(c.Key)
			if c.Existed {
				a.note(notification[T]{kind: notifyDelete, obj: c.Prev, moved: true})
			}
		}
		a.changes = shrink(a.changes)
		a.dispatch(rev, false)
	}
	a.inf.moves.set(a.moves)
}

// reflectorShard is s as the reflector takes it; nil for nil.
func reflectorShard[T cache.Object](s Shard) *reflector.Shard[T] {
	if s == nil {
		return nil
	}
	return &reflector.Shard[T]{Selector: s.Selector(), Contains: func(obj T) bool { return s.Contains(obj) }}
}
