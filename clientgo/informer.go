package clientgo

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/typed"
)

// Errors of the view.
var (
	// ErrNilInformer is returned by SharedIndexInformer for a nil informer.
	ErrNilInformer = errors.New("clientgo: nil informer")
	// ErrReadOnly is wrapped by the error of every write method of the
	// view's store (Add, Update, Delete, Replace): the informer owns its
	// cache and is the only writer.
	ErrReadOnly = errors.New("clientgo: the cache is the informer's, the view cannot write to it")
	// ErrNoHooks is wrapped by the error of SetWatchErrorHandler and
	// SetTransform on a view without Options.Hooks: the informer's error
	// handler and transform were fixed when it was built.
	ErrNoHooks = errors.New("clientgo: the informer's error handler and transform are fixed at construction (see Options.Hooks)")
	// ErrWrongType is wrapped by the error for an object that is not of
	// the informer's type where one is needed: given to an index function
	// of the informer's, or returned by a transform.
	ErrWrongType = errors.New("clientgo: object of the wrong type")
	// ErrUnknownIndexFunc is wrapped by the error of Index for an index of
	// the informer whose function the view does not know (declared in
	// typed.Options.Indexers and not in Options.Indexers).
	ErrUnknownIndexFunc = errors.New("clientgo: index function unknown to the view")
	// ErrForeignRegistration is wrapped by the error of RemoveEventHandler
	// for a registration no view made.
	ErrForeignRegistration = errors.New("clientgo: registration not made by a view")
)

// Options configures SharedIndexInformer. The zero value is ready to use.
type Options[T cache.Object] struct {
	// Indexers are the functions of the informer's own custom indexes, as
	// given to typed.Options.Indexers, which the view cannot read from the
	// informer: with them GetIndexers lists those indexes and Index can
	// compute an object's values. Each must name an index the informer
	// has. Default: none; ByIndex, IndexKeys and ListIndexFuncValues work
	// on every index regardless, and Index works on the namespace index
	// and on indexes added through the view.
	Indexers cache.Indexers[T]
	// Hooks, if set, is the Hooks whose HandleError and Transform the
	// informer was built with (typed.Options.ErrorHandler and Transform):
	// SetWatchErrorHandler and SetTransform then set what they call.
	// Default: nil, and those setters return an error wrapping ErrNoHooks.
	Hooks *Hooks[T]
}

// view is the client-go SharedIndexInformer over a typed informer.
type view[T cache.Object] struct {
	inf     *typed.Informer[T]
	store   *cache.Store[T]
	hooks   *Hooks[T]
	idx     *indexer[T]
	checker syncChecker

	ran atomic.Bool // the view's Run was called
}

// SharedIndexInformer returns a client-go SharedIndexInformer that is a view
// of inf: its store is inf's cache, its handlers are inf's handlers, and its
// Run runs inf. The view copies nothing and opens no watch of its own; inf
// keeps working as before, and may be run by its owner or by the view's
// Run, not both (see Run). It fails for a nil informer and for
// Options.Indexers that inf does not have.
//
// Every method follows client-go's contract where the informer can; the
// package documentation says where it cannot.
func SharedIndexInformer[T cache.Object](inf *typed.Informer[T], opts Options[T]) (clientcache.SharedIndexInformer, error) {
	if inf == nil {
		return nil, fmt.Errorf("%w: SharedIndexInformer", ErrNilInformer)
	}
	v := &view[T]{inf: inf, store: inf.Store(), hooks: opts.Hooks}
	idx, err := newIndexer(v, opts.Indexers)
	if err != nil {
		return nil, fmt.Errorf("clientgo: SharedIndexInformer of informer %s: %w", inf.Name(), err)
	}
	v.idx = idx
	v.checker = syncChecker{name: "SharedIndexInformer view of informer " + inf.Name(), synced: inf.Synced()}
	if v.hooks != nil {
		v.hooks.bind(inf.Name())
	}
	return v, nil
}

// AddEventHandler adds a client-go handler to the informer, as
// AddEventHandlerWithOptions does with no options.
func (v *view[T]) AddEventHandler(h clientcache.ResourceEventHandler) (clientcache.ResourceEventHandlerRegistration, error) {
	return v.AddEventHandlerWithOptions(h, clientcache.HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod adds a client-go handler. The period is
// not applied: resyncs are the informer's (typed.Options.ResyncPeriod), for
// every handler.
func (v *view[T]) AddEventHandlerWithResyncPeriod(h clientcache.ResourceEventHandler, _ time.Duration) (clientcache.ResourceEventHandlerRegistration, error) {
	return v.AddEventHandlerWithOptions(h, clientcache.HandlerOptions{})
}

// AddEventHandlerWithOptions adds a client-go handler as a handler of the
// informer: it first gets OnAdd(obj, true) for every cached object, then
// every change. Of the options, neither is applied: the resync period is
// the informer's, and a panic in the handler is recovered and reported to
// the informer's error handler rather than logged to Logger. It fails for
// a nil handler and once the informer has stopped.
func (v *view[T]) AddEventHandlerWithOptions(h clientcache.ResourceEventHandler, _ clientcache.HandlerOptions) (clientcache.ResourceEventHandlerRegistration, error) {
	if h == nil {
		return nil, fmt.Errorf("clientgo: informer %s: AddEventHandler: nil handler", v.inf.Name())
	}
	reg, err := v.inf.AddHandler(eventHandler[T]{h: h})
	if err != nil {
		return nil, fmt.Errorf("clientgo: handler %T was not added to informer %s: %w", h, v.inf.Name(), err)
	}
	r := &registration[T]{view: v, reg: reg}
	r.checker = syncChecker{name: fmt.Sprintf("%s + event handler %T", v.checker.Name(), h), synced: reg.Synced()}
	return r, nil
}

// RemoveEventHandler removes a handler the view added. Like client-go's,
// it is idempotent: removing a handler again, or a registration of another
// informer, does nothing. It fails for a registration no view made. After
// it returns the handler gets no further calls, except one that may be in
// progress.
func (v *view[T]) RemoveEventHandler(handle clientcache.ResourceEventHandlerRegistration) error {
	r, ok := handle.(*registration[T])
	if !ok {
		return fmt.Errorf("%w: %T", ErrForeignRegistration, handle)
	}
	if r.view != v {
		return nil
	}
	if err := v.inf.RemoveHandler(r.reg); err != nil && !errors.Is(err, typed.ErrUnknownHandler) {
		return fmt.Errorf("clientgo: %w", err)
	}
	return nil
}

// GetStore returns the informer's cache as a read-only client-go Store.
func (v *view[T]) GetStore() clientcache.Store { return v.idx }

// GetIndexer returns the informer's cache as a client-go Indexer: reads
// and AddIndexers work, writes return an error wrapping ErrReadOnly.
func (v *view[T]) GetIndexer() clientcache.Indexer { return v.idx }

// AddIndexers adds indexes to the informer's cache (see the view's
// indexer). Like client-go's, it fails once the informer has stopped.
func (v *view[T]) AddIndexers(indexers clientcache.Indexers) error {
	if v.IsStopped() {
		return fmt.Errorf("clientgo: informer %s: indexers not added: %w", v.inf.Name(), typed.ErrStopped)
	}
	return v.idx.AddIndexers(indexers)
}

// GetController returns a Controller that only reports: its Run does
// nothing, as client-go's SharedIndexInformer's does.
func (v *view[T]) GetController() clientcache.Controller { return controller[T]{v} }

// Run runs the informer until stopCh is closed, as RunWithContext does.
func (v *view[T]) Run(stopCh <-chan struct{}) { v.RunWithContext(wait.ContextForChannel(stopCh)) }

// RunWithContext runs the informer until ctx ends and returns when it has
// stopped, for code that owns the informer through the view. If the
// informer is already running (its owner runs it, or another Run of the
// view does), RunWithContext does not run it again: it returns when ctx
// ends, so a caller that runs the view for the length of ctx sees what it
// expects. If the informer already ran, it returns at once. An error that
// ends the informer (the source refused its first list) is logged, since
// client-go's Run returns nothing.
func (v *view[T]) RunWithContext(ctx context.Context) {
	v.ran.Store(true)
	if v.hooks != nil {
		v.hooks.setContext(ctx)
	}
	err := v.inf.Run(ctx)
	switch {
	case errors.Is(err, typed.ErrRunning):
		<-ctx.Done()
		return
	case errors.Is(err, typed.ErrStopped):
	case err != nil:
		klog.FromContext(ctx).Error(err, "Informer stopped", "informer", v.inf.Name())
	}
}

// HasSynced reports whether the informer's initial list is in its cache.
func (v *view[T]) HasSynced() bool { return v.inf.HasSynced() }

// HasSyncedChecker returns a DoneChecker whose channel is closed once the
// informer has synced.
func (v *view[T]) HasSyncedChecker() clientcache.DoneChecker { return v.checker }

// LastSyncResourceVersion is the informer's LastSyncResourceVersion.
func (v *view[T]) LastSyncResourceVersion() string { return v.inf.LastSyncResourceVersion() }

// SetWatchErrorHandler sets the handler Options.Hooks passes list and watch
// errors to, as SetWatchErrorHandlerWithContext does.
func (v *view[T]) SetWatchErrorHandler(h clientcache.WatchErrorHandler) error {
	var hc clientcache.WatchErrorHandlerWithContext
	if h != nil {
		hc = func(_ context.Context, r *clientcache.Reflector, err error) { h(r, err) }
	}
	return v.SetWatchErrorHandlerWithContext(hc)
}

// SetWatchErrorHandlerWithContext sets the handler that Options.Hooks
// passes every list and watch error of the informer to (nil: client-go's
// DefaultWatchErrorHandler). The handler gets a Reflector that names the
// informer but never runs. It fails without Options.Hooks (ErrNoHooks) and
// once the informer has started (typed.ErrRunning), as client-go's does.
func (v *view[T]) SetWatchErrorHandlerWithContext(h clientcache.WatchErrorHandlerWithContext) error {
	if err := v.settable("SetWatchErrorHandler"); err != nil {
		return err
	}
	v.hooks.setWatchErrorHandler(h)
	return nil
}

// SetTransform sets the client-go transform that Options.Hooks applies to
// every object before it enters the cache; it must return an object of the
// informer's type, else the object is refused (as a typed.Options.Transform
// error is). It fails without Options.Hooks (ErrNoHooks) and once the
// informer has started (typed.ErrRunning), as client-go's does.
func (v *view[T]) SetTransform(f clientcache.TransformFunc) error {
	if err := v.settable("SetTransform"); err != nil {
		return err
	}
	v.hooks.setTransform(f)
	return nil
}

func (v *view[T]) settable(what string) error {
	switch {
	case v.hooks == nil:
		return fmt.Errorf("%w: informer %s: %s", ErrNoHooks, v.inf.Name(), what)
	case v.started():
		return fmt.Errorf("%w: informer %s: %s", typed.ErrRunning, v.inf.Name(), what)
	}
	return nil
}

// started reports whether the informer has started: the view ran it, the
// hooks saw an object, or it has talked to its source.
func (v *view[T]) started() bool {
	if v.ran.Load() || v.IsStopped() || (v.hooks != nil && v.hooks.used.Load()) || v.inf.HasSynced() {
		return true
	}
	st := v.inf.Status().Stats
	return st.Lists+st.WatchLists+st.Watches+st.Errors > 0
}

// IsStopped reports whether the informer has stopped: its Run returned.
func (v *view[T]) IsStopped() bool {
	select {
	case <-v.inf.Stopped():
		return true
	default:
		return false
	}
}
