package factory

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/semaphore"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// ListLimit is a bound on list requests in flight that several factories
// share (Options.ListLimit): at most its size at once across all of them,
// counted as a factory's own bound is. A fleet of clusters that all lose
// their watches at once thus relists a few clusters at a time, not all.
type ListLimit struct {
	sem *semaphore.Weighted
}

// NewListLimit returns a bound of n list requests in flight; n must be
// positive.
func NewListLimit(n int) (*ListLimit, error) {
	if n <= 0 {
		return nil, fmt.Errorf("factory: NewListLimit(%d): the bound must be positive", n)
	}
	return &ListLimit{sem: semaphore.NewWeighted(int64(n))}, nil
}

// limitedSource is a source whose list requests take a permit of a
// semaphore shared by every source of a factory. A permit is held only
// while a list request is in flight:
//
//   - a LIST page, from the call to List until it returns;
//   - a streaming list (a watch with sendInitialEvents and bookmarks),
//     from the call to Watch until its initial-events-end bookmark has
//     been read, the stream fails, or it is stopped, whichever comes
//     first, or the context it was opened with ends.
//
// Plain watches take no permit, and nothing is held between two requests,
// so an informer that backs off or waits for its queue holds none.
type limitedSource[T cache.Object] struct {
	src source.Source[T]
	sem *semaphore.Weighted
}

// limit wraps src; a nil sem means no bound and returns src itself. An
// ItemLister stays one.
func limit[T cache.Object](src source.Source[T], sem *semaphore.Weighted) source.Source[T] {
	if sem == nil {
		return src
	}
	l := &limitedSource[T]{src: src, sem: sem}
	if il, ok := src.(source.ItemLister[T]); ok {
		return &limitedItems[T]{limitedSource: l, il: il}
	}
	return l
}

// limitedItems is a bounded source.ItemLister.
type limitedItems[T cache.Object] struct {
	*limitedSource[T]
	il source.ItemLister[T]
}

// ListItems implements source.ItemLister: one page under one permit.
func (l *limitedItems[T]) ListItems(ctx context.Context, opts metav1.ListOptions, yield func(T) error) (source.List[T], error) {
	if err := l.acquire(ctx, source.PhaseList); err != nil {
		return source.List[T]{}, err
	}
	defer l.sem.Release(1)
	return l.il.ListItems(ctx, opts, yield)
}

// acquire takes a permit, or fails with ctx's error in an *source.Error of
// phase p.
func (l *limitedSource[T]) acquire(ctx context.Context, p source.Phase) error {
	if err := l.sem.Acquire(ctx, 1); err != nil {
		return &source.Error{Phase: p, Err: fmt.Errorf("factory: waiting for a list permit: %w", err)}
	}
	return nil
}

// List implements source.Source: one page under one permit.
func (l *limitedSource[T]) List(ctx context.Context, opts metav1.ListOptions) (source.List[T], error) {
	if err := l.acquire(ctx, source.PhaseList); err != nil {
		return source.List[T]{}, err
	}
	defer l.sem.Release(1)
	return l.src.List(ctx, opts)
}

// Watch implements source.Source. A streaming list keeps its permit until
// its initial events end; a watch whose end of initial events cannot be
// told (no bookmarks asked for) is not counted as a list.
func (l *limitedSource[T]) Watch(ctx context.Context, opts metav1.ListOptions) (source.Watcher[T], error) {
	if opts.SendInitialEvents == nil || !*opts.SendInitialEvents || !opts.AllowWatchBookmarks {
		return l.src.Watch(ctx, opts)
	}
	if err := l.acquire(ctx, source.PhaseWatchStart); err != nil {
		return nil, err
	}
	w, err := l.src.Watch(ctx, opts)
	if err != nil {
		l.sem.Release(1)
		return nil, err
	}
	lw := &listingWatcher[T]{w: w}
	lw.release = sync.OnceFunc(func() { l.sem.Release(1) })
	lw.unhook = context.AfterFunc(ctx, lw.release)
	return lw, nil
}

// Info is the wrapped source's.
func (l *limitedSource[T]) Info() source.Info { return l.src.Info() }

// listingWatcher is a streaming list holding a permit until its initial
// events have ended.
type listingWatcher[T cache.Object] struct {
	w       source.Watcher[T]
	release func() // gives the permit back, once
	unhook  func() bool
}

// Next implements source.Watcher: the end bookmark or any error gives the
// permit back.
func (lw *listingWatcher[T]) Next(ctx context.Context) (source.Event[T], error) {
	ev, err := lw.w.Next(ctx)
	if err != nil || isEndBookmark(ev) {
		lw.done()
	}
	return ev, err
}

// Stop implements source.Watcher.
func (lw *listingWatcher[T]) Stop() {
	lw.done()
	lw.w.Stop()
}

func (lw *listingWatcher[T]) done() {
	lw.unhook()
	lw.release()
}

// isEndBookmark reports whether ev is the bookmark that ends the initial
// events of a streaming list.
func isEndBookmark[T cache.Object](ev source.Event[T]) bool {
	var zero T
	if ev.Type != watch.Bookmark || ev.Object == zero {
		return false
	}
	return ev.Object.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}
