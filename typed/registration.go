package typed

import (
	"context"
	"fmt"
	"slices"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/internal/objects"
)

// Registration is the handle of a handler added to an informer.
type Registration struct {
	l interface {
		hasSynced() bool
		waitForSync(ctx context.Context) error
		pending() int64
		panicCount() int64
		syncedChan() <-chan struct{}
		mergedCount() int64
	}
}

// HasSynced reports whether the handler has been called for every object of
// the initial list (or, for a handler added later, of the cache's content
// when it was added).
func (r *Registration) HasSynced() bool { return r.l.hasSynced() }

// WaitForSync waits until HasSynced is true and returns nil. It returns a
// *NotSyncedError at once when the informer hits an error that retrying
// cannot fix by itself (Forbidden, Unauthorized, NotFound), when the
// informer stops or the handler is removed, or when ctx ends.
func (r *Registration) WaitForSync(ctx context.Context) error { return r.l.waitForSync(ctx) }

// Synced returns a channel closed once HasSynced is true. It is never
// closed for a handler removed, or whose informer stopped, before it
// synced; WaitForSync says why.
func (r *Registration) Synced() <-chan struct{} { return r.l.syncedChan() }

// Pending is the number of notifications queued for the handler and not yet
// handled: how far behind it is. While the handler works through a batch
// it may count up to 63 notifications of that batch already handled; it
// is exact between batches.
func (r *Registration) Pending() int64 { return r.l.pending() }

// Merged is the number of notifications a CoalesceByKey buffer merged into
// another or cancelled out (0 under the other policies).
func (r *Registration) Merged() int64 { return r.l.mergedCount() }

// Panics is the number of handler calls that panicked.
func (r *Registration) Panics() int64 { return r.l.panicCount() }

// boundListener is a listener with its informer, what a Registration holds.
type boundListener[T cache.Object] struct {
	*listener[T]
	inf *Informer[T]
}

func (b boundListener[T]) pending() int64    { return b.depth.Load() }
func (b boundListener[T]) panicCount() int64 { return b.panics.Load() }

func (b boundListener[T]) syncedChan() <-chan struct{} { return b.synced }

func (b boundListener[T]) mergedCount() int64 { return b.merged.Load() }

func (b boundListener[T]) waitForSync(ctx context.Context) error {
	return b.inf.wait(ctx, b.synced, b.stop, b.name)
}

// AddHandler adds a handler. If the informer already has objects cached, the
// handler first gets one OnAdd (isInInitialList true) for each, then every
// later change, each exactly once. It returns ErrStopped after Run has
// returned. Its buffer is Unbounded: see AddHandlerWithOptions.
func (inf *Informer[T]) AddHandler(h handler.Handler[T]) (*Registration, error) {
	return inf.AddHandlerWithOptions(h, HandlerOptions{})
}

// AddHandlerWithOptions adds a handler as AddHandler does, with a name and
// a buffer policy of its own (see BufferPolicy). Under CoalesceByKey the
// handler may get fewer calls than there were changes, never a call out of
// order for a key, and always each key's final state.
func (inf *Informer[T]) AddHandlerWithOptions(h handler.Handler[T], opts HandlerOptions) (*Registration, error) {
	if objects.IsNil(h) {
		return nil, fmt.Errorf("typed: informer %s: AddHandler: nil handler (%T)", inf.name, h)
	}
	if opts.Buffer > CoalesceByKey {
		return nil, fmt.Errorf("typed: informer %s: AddHandler: unknown buffer policy %d", inf.name, opts.Buffer)
	}
	inf.mu.Lock()
	if inf.state == stopped {
		inf.mu.Unlock()
		return nil, ErrStopped
	}
	inf.nextID++
	name := opts.Name
	if name == "" {
		name = fmt.Sprintf("%s#%d", inf.name, inf.nextID)
	}
	l := newListener(h, name, inf.reportPanic, opts)
	if k := inf.keep.Load(); k != nil {
		l.fence.Store(k) // Move sets it under mu too
	}
	hs := append(slices.Clone(*inf.handlers.Load()), l)
	inf.handlers.Store(&hs)
	reg := &Registration{l: boundListener[T]{listener: l, inf: inf}}
	inf.regs[reg] = l
	if inf.state == running {
		inf.startListener(l)
	}
	inf.mu.Unlock()
	// Registered before the snapshot: every batch the writer applies after
	// the snapshot reaches l, and l drops those the snapshot holds.
	objs, rev := inf.store.Snapshot()
	l.start(objs, rev, inf.listedRev.Load())
	return reg, nil
}

// RemoveHandler removes a handler. After it returns the handler gets no
// further calls, except one that may be in progress.
func (inf *Informer[T]) RemoveHandler(reg *Registration) error {
	inf.mu.Lock()
	l, ok := inf.regs[reg]
	if ok {
		delete(inf.regs, reg)
		hs := slices.DeleteFunc(slices.Clone(*inf.handlers.Load()), func(x *listener[T]) bool { return x == l })
		inf.handlers.Store(&hs)
	}
	inf.mu.Unlock()
	if !ok {
		return ErrUnknownHandler
	}
	l.shutdown()
	return nil
}
