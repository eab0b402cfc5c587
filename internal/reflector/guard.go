package reflector

import (
	"context"
	"fmt"
	"runtime/debug"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// guarded is the reflector's view of its source: a panic in List, Watch,
// Next or Stop (client-go's fake dynamic client panics for a resource it
// was not given) becomes an error wrapping source.ErrPanic, with the
// stack, on the reflector's goroutine, which reports it and retries after
// a backoff like any failure of the source: the process, and the other
// informers, go on.
type guarded[T cache.Object] struct{ src source.Source[T] }

func (g guarded[T]) Info() source.Info { return g.src.Info() }

func (g guarded[T]) List(ctx context.Context, opts metav1.ListOptions) (l source.List[T], err error) {
	defer recoverAs(source.PhaseList, &err)
	return g.src.List(ctx, opts)
}

func (g guarded[T]) Watch(ctx context.Context, opts metav1.ListOptions) (w source.Watcher[T], err error) {
	defer recoverAs(source.PhaseWatchStart, &err)
	w, err = g.src.Watch(ctx, opts)
	if err != nil || w == nil {
		return w, err
	}
	return guardedWatcher[T]{w}, nil
}

// guardedItems is a guarded source.ItemLister: the reflector's source
// offers ListItems only if the source it guards does.
type guardedItems[T cache.Object] struct {
	guarded[T]
	il source.ItemLister[T]
}

// ListItems is the guarded source's ListItems, a panic in it the list's
// error.
func (g guardedItems[T]) ListItems(ctx context.Context, opts metav1.ListOptions, yield func(T) error) (l source.List[T], err error) {
	defer recoverAs(source.PhaseList, &err)
	return g.il.ListItems(ctx, opts, yield)
}

// guard wraps src; an ItemLister stays one.
func guard[T cache.Object](src source.Source[T]) source.Source[T] {
	if il, ok := src.(source.ItemLister[T]); ok {
		return guardedItems[T]{guarded[T]{src}, il}
	}
	return guarded[T]{src}
}

type guardedWatcher[T cache.Object] struct{ w source.Watcher[T] }

func (g guardedWatcher[T]) Next(ctx context.Context) (ev source.Event[T], err error) {
	defer recoverAs(source.PhaseWatch, &err)
	return g.w.Next(ctx)
}

func (g guardedWatcher[T]) Stop() {
	defer func() { _ = recover() }() // the stream is given up either way
	g.w.Stop()
}

// recoverAs turns a panic of the source into *err.
func recoverAs(p source.Phase, err *error) {
	if v := recover(); v != nil {
		*err = &source.Error{Phase: p, Err: fmt.Errorf("%w: %v\n%s", source.ErrPanic, v, debug.Stack())}
	}
}
