package typed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
	"github.com/typedinformer/informer/internal/reflector"
	"github.com/typedinformer/informer/source"
)

// Errors of the informer.
var (
	// ErrStopped is returned by AddHandler after Run has returned, and by
	// Run when called a second time.
	ErrStopped = errors.New("typed: informer stopped")
	// ErrHandlerPanic wraps the value of a recovered handler panic.
	ErrHandlerPanic = errors.New("typed: handler panicked")
	// ErrUnknownHandler is returned by RemoveHandler for a registration of
	// another informer, or one already removed.
	ErrUnknownHandler = errors.New("typed: unknown handler registration")
)

// Informer keeps a typed cache of one resource in step with a source and
// notifies handlers. Create it with [NewInformer]; run it with Run.
type Informer[T cache.Object] struct {
	name    string
	opts    Options[T]
	src     source.Source[T]
	indexer *cache.Indexer[T]
	lister  *cache.Lister[T]
	queue   *fifo.Queue[T]
	refl    *reflector.Reflector[T]
	status  syncStatus

	// dispatch serialises applying a batch to the cache and handing it to
	// the listeners with adding and removing listeners, so a new listener
	// sees each change exactly once: in its snapshot or as a notification.
	dispatch  sync.Mutex
	listeners []*listener[T]
	scratch   []notification[T]
	// dispatchErrs collects errors found under the dispatch lock, reported
	// after it is released.
	dispatchErrs []error

	life   sync.Mutex
	runCtx context.Context // set while Run runs
	// logger is Run's contextual logger. It is read by reportError, which
	// runs under the dispatch lock and so must not take life.
	logger  atomic.Pointer[klog.Logger]
	started bool
	stopped bool
	wg      sync.WaitGroup // listener goroutines

	// configErr is an invalid Options value; Run and WaitForSync return it.
	configErr error
}

// NewInformer returns an informer for the objects of src. It does nothing
// until Run.
func NewInformer[T cache.Object](src source.Source[T], opts Options[T]) *Informer[T] {
	if opts.Resource.Empty() {
		opts.Resource = guessResource[T]()
	}
	name := opts.Name
	if name == "" {
		name = opts.Resource.String()
	}
	inf := &Informer[T]{name: name, opts: opts, src: src}
	inf.status.init()
	idx, err := cache.NewIndexer(cache.IndexerOptions[T]{Indexers: opts.Indexers})
	if err != nil {
		// A nil index function or a name taken by the built-in namespace
		// index: Run and WaitForSync return this error.
		idx, _ = cache.NewIndexer(cache.IndexerOptions[T]{})
		inf.configErr = fmt.Errorf("typed: %s: Options.Indexers: %w", name, err)
	}
	inf.indexer = idx
	inf.lister = cache.NewLister(idx, opts.Resource)
	inf.queue = fifo.New(fifo.Options[T]{
		Ordering:     fifo.InOrder,
		KnownObjects: idx,
		Transform:    inf.transform,
	})
	inf.refl = reflector.New[T](src, inf.queue, reflector.Options{
		Name:            name,
		PageSize:        opts.PageSize,
		NoWatchList:     opts.NoWatchList,
		MinWatchTimeout: opts.MinWatchTimeout,
		OnError:         inf.reportError,
		OnSynced:        func(string) { inf.status.setError(nil) },
		OnRecovered:     func() { inf.status.setError(nil) },
	})
	return inf
}

// transform drops managedFields unless kept, runs Options.Transform, and
// checks that the cache can index the result: an object the cache would
// refuse is refused here, before the reflector moves its resourceVersion
// past it, and the informer relists after a backoff instead of dropping it.
func (inf *Informer[T]) transform(obj T) (T, error) {
	if !inf.opts.KeepManagedFields && obj.GetManagedFields() != nil {
		obj.SetManagedFields(nil)
	}
	if inf.opts.Transform != nil {
		var err error
		if obj, err = inf.opts.Transform(obj); err != nil {
			return obj, err
		}
		var zero T
		if obj == zero {
			return obj, fmt.Errorf("transform: %w", cache.ErrNilObject)
		}
	}
	if err := inf.indexer.CheckIndexes(obj); err != nil {
		return obj, err
	}
	return obj, nil
}

// reportError records err as the reason the cache may be stale and passes
// it on. It must not be called with the queue's or the dispatch lock held:
// the error handler may call back into the informer.
func (inf *Informer[T]) reportError(err error) {
	err = fmt.Errorf("%s: %w", inf.name, err)
	inf.status.setError(err)
	inf.handleError(err)
}

// handleError passes err to Options.ErrorHandler, or logs it.
func (inf *Informer[T]) handleError(err error) {
	if inf.opts.ErrorHandler != nil {
		inf.opts.ErrorHandler(err)
		return
	}
	logger := klog.Background()
	if l := inf.logger.Load(); l != nil {
		logger = *l
	}
	logger.Error(err, "informer error", "informer", inf.name)
}

// Run starts the informer and blocks until ctx ends; it then stops every
// goroutine it started and returns nil. Calling Run twice returns
// ErrStopped.
func (inf *Informer[T]) Run(ctx context.Context) error {
	if inf.configErr != nil {
		return inf.configErr
	}
	inf.life.Lock()
	if inf.started {
		inf.life.Unlock()
		return ErrStopped
	}
	inf.started = true
	inf.runCtx = ctx
	logger := klog.FromContext(ctx)
	inf.logger.Store(&logger)
	inf.dispatch.Lock()
	for _, l := range inf.listeners {
		inf.startListener(ctx, l)
	}
	inf.dispatch.Unlock()
	inf.life.Unlock()

	var wg sync.WaitGroup
	wg.Go(func() { _ = inf.refl.Run(ctx) })
	wg.Go(func() { inf.processLoop(ctx) })
	wg.Go(func() {
		// The queue reports sync after the last initial batch was
		// dispatched, also when the initial list is empty.
		select {
		case <-inf.queue.Synced():
			inf.markSynced()
		case <-ctx.Done():
		}
	})
	if inf.opts.ResyncPeriod > 0 {
		wg.Go(func() { inf.resyncLoop(ctx) })
	}
	<-ctx.Done()
	inf.queue.Close()
	wg.Wait()

	inf.life.Lock()
	inf.stopped = true
	inf.life.Unlock()
	inf.wg.Wait()
	inf.status.stop()
	return nil
}

// startListener starts l's goroutine; the caller holds life.
func (inf *Informer[T]) startListener(ctx context.Context, l *listener[T]) {
	inf.wg.Go(func() { l.run(ctx) })
}

func (inf *Informer[T]) processLoop(ctx context.Context) {
	for ctx.Err() == nil {
		err := inf.queue.PopBatch(ctx, inf.processBatch)
		// Errors found while dispatching are reported here, with no lock
		// held, so the error handler may call the informer.
		inf.dispatch.Lock()
		errs := inf.dispatchErrs
		inf.dispatchErrs = nil
		inf.dispatch.Unlock()
		for _, e := range errs {
			inf.reportError(e)
		}
		if err != nil && (errors.Is(err, fifo.ErrClosed) || ctx.Err() != nil) {
			return
		}
	}
}

func (inf *Informer[T]) resyncLoop(ctx context.Context) {
	t := time.NewTicker(inf.opts.ResyncPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := inf.queue.Resync(); err != nil && !errors.Is(err, fifo.ErrClosed) {
				inf.reportError(fmt.Errorf("resync: %w", err))
			}
		}
	}
}

// Lister returns the typed lister over the cache.
func (inf *Informer[T]) Lister() *cache.Lister[T] { return inf.lister }

// Store returns a read-only view of the cache.
func (inf *Informer[T]) Store() cache.Reader[T] { return inf.indexer }

// ByIndex returns the cached objects indexed under value in the index
// called name.
func (inf *Informer[T]) ByIndex(name, value string) ([]T, error) {
	return inf.indexer.ByIndex(name, value)
}

// AddIndexers adds index functions to the cache, also after it is filled.
func (inf *Informer[T]) AddIndexers(indexers cache.Indexers[T]) error {
	return inf.indexer.AddIndexers(indexers)
}

// LastSyncResourceVersion is the resourceVersion of the last list or event
// the informer took from its source.
func (inf *Informer[T]) LastSyncResourceVersion() string {
	return inf.refl.LastSyncResourceVersion()
}

// HasSynced reports whether the initial list is in the cache. Handlers may
// still be processing it: see Registration.HasSynced.
func (inf *Informer[T]) HasSynced() bool { return inf.queue.HasSynced() }

// Stats counts what an informer did with its source.
type Stats struct {
	// Lists counts LIST requests (pages of one list count once); WatchLists
	// counts streaming initial lists; Relists counts the lists and streaming
	// lists after the first.
	Lists, WatchLists, Relists int
	// Watches counts watch requests besides streaming lists.
	Watches int
	// Events and Bookmarks count watch events taken.
	Events, Bookmarks int
	// Errors counts list and watch errors recovered from.
	Errors int
}

// Stats returns the informer's counters.
func (inf *Informer[T]) Stats() Stats {
	s := inf.refl.Stats()
	return Stats{
		Lists: s.Lists, WatchLists: s.WatchLists, Relists: s.Relists, Watches: s.Watches,
		Events: s.Events, Bookmarks: s.Bookmarks, Errors: s.Errors,
	}
}
