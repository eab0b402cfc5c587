package clientgo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// Hooks lets a view's SetWatchErrorHandler and SetTransform reach an
// informer whose error handler and transform are fixed when it is built:
// build the informer with the Hooks' methods and give the view the same
// Hooks.
//
//	var hooks clientgo.Hooks[*corev1.Pod]
//	inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{
//		ErrorHandler: hooks.HandleError,
//		Transform:    hooks.Transform,
//	})
//	v, err := clientgo.SharedIndexInformer(inf, clientgo.Options[*corev1.Pod]{Hooks: &hooks})
//	err = v.SetTransform(stripStatus) // before the informer starts
//
// The zero value is ready to use; a Hooks serves one informer. Its methods
// are safe for concurrent use.
type Hooks[T cache.Object] struct {
	watchErr  atomic.Pointer[clientcache.WatchErrorHandlerWithContext]
	transform atomic.Pointer[clientcache.TransformFunc]
	used      atomic.Bool // Transform ran: the informer has started
	ctx       atomic.Pointer[context.Context]

	mu   sync.Mutex
	name string
	refl *clientcache.Reflector // describes the informer to watch error handlers
}

// HandleError is an error handler for typed.Options.ErrorHandler. It passes
// the informer's list and watch errors (those wrapping a *source.Error) to
// the handler set with the view's SetWatchErrorHandler, or to client-go's
// DefaultWatchErrorHandler, and logs the others (refused objects, handler
// panics), as the informer does without an ErrorHandler. To handle the
// errors yourself as well, call HandleError from your own ErrorHandler.
func (h *Hooks[T]) HandleError(err error) {
	if err == nil {
		return
	}
	ctx := context.Background()
	if c := h.ctx.Load(); c != nil {
		ctx = *c
	}
	var se *source.Error
	if !errors.As(err, &se) {
		klog.FromContext(ctx).Error(err, "Informer error", "informer", h.informerName())
		return
	}
	handle := clientcache.WatchErrorHandlerWithContext(clientcache.DefaultWatchErrorHandler)
	if f := h.watchErr.Load(); f != nil {
		handle = *f
	}
	handle(ctx, h.reflector(), err)
}

// Transform is a transform for typed.Options.Transform. It applies the
// function set with the view's SetTransform, if any, and refuses an object
// it turns into one of another type (ErrWrongType) or fails on. Once it has
// run, the informer counts as started: SetTransform fails.
func (h *Hooks[T]) Transform(obj T) (T, error) {
	h.used.Store(true)
	f := h.transform.Load()
	if f == nil {
		return obj, nil
	}
	var zero T
	out, err := (*f)(obj)
	if err != nil {
		return zero, err
	}
	t, ok := out.(T)
	if !ok {
		return zero, fmt.Errorf("%w: the transform returned %T, the informer holds %T", ErrWrongType, out, obj)
	}
	return t, nil
}

func (h *Hooks[T]) setWatchErrorHandler(f clientcache.WatchErrorHandlerWithContext) {
	if f == nil {
		h.watchErr.Store(nil)
		return
	}
	h.watchErr.Store(&f)
}

func (h *Hooks[T]) setTransform(f clientcache.TransformFunc) {
	if f == nil {
		h.transform.Store(nil)
		return
	}
	h.transform.Store(&f)
}

// setContext is the context watch error handlers get: the one the view's
// Run got, for its logger.
func (h *Hooks[T]) setContext(ctx context.Context) { h.ctx.Store(&ctx) }

// bind names the informer the hooks serve, for logs and the reflector
// handed to watch error handlers; the first name stays.
func (h *Hooks[T]) bind(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.name == "" {
		h.name = name
	}
}

func (h *Hooks[T]) informerName() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.name
}

// reflector returns the Reflector handed to watch error handlers: it names
// the informer and its type, and never runs (it has no ListerWatcher).
func (h *Hooks[T]) reflector() *clientcache.Reflector {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refl == nil {
		var zero T
		h.refl = clientcache.NewReflectorWithOptions(nil, zero, nil, clientcache.ReflectorOptions{
			Name:            h.name,
			TypeDescription: fmt.Sprintf("%T", zero),
		})
	}
	return h.refl
}
