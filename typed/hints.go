package typed

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// hintedSource passes the informer's source.Hints on every List and Watch,
// so that a source can skip what the informer drops anyway.
type hintedSource[T cache.Object] struct {
	src   source.Source[T]
	hints source.Hints
}

// hinted returns src telling it what an informer with opts drops.
func hinted[T cache.Object](src source.Source[T], opts Options[T]) source.Source[T] {
	h := source.Hints{DropManagedFields: !opts.KeepManagedFields}
	if h == (source.Hints{}) {
		return src
	}
	return &hintedSource[T]{src: src, hints: h}
}

func (h *hintedSource[T]) List(ctx context.Context, opts metav1.ListOptions) (source.List[T], error) {
	return h.src.List(source.WithHints(ctx, h.hints), opts)
}

func (h *hintedSource[T]) Watch(ctx context.Context, opts metav1.ListOptions) (source.Watcher[T], error) {
	return h.src.Watch(source.WithHints(ctx, h.hints), opts)
}
