package sourcetest

import (
	"context"
	"errors"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// ListerWatcher is both of client-go's lister-watcher interfaces: what
// client-go's constructors (cache.NewSharedIndexInformer, cache.NewReflector)
// and source.FromListerWatcher take, with the context methods they use when
// present.
type ListerWatcher interface {
	clientcache.ListerWatcher
	clientcache.ListerWatcherWithContext
}

// ListerWatcher serves the fake to client-go: a cache.ListerWatcher (with
// context) whose lists are *metav1.List values holding the objects and
// whose watches carry the same events, errors as ERROR events with their
// API status. It lets a client-go informer and one of this module run side
// by side on the same fake.
func (f *Fake[T]) ListerWatcher() ListerWatcher {
	return fakeLW[T]{f: f}
}

type fakeLW[T cache.Object] struct{ f *Fake[T] }

func (lw fakeLW[T]) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	l, err := lw.f.List(ctx, opts)
	if err != nil {
		return nil, unwrap(err)
	}
	out := &metav1.List{ListMeta: metav1.ListMeta{ResourceVersion: l.ResourceVersion, Continue: l.Continue, ShardInfo: l.ShardInfo}}
	out.Items = make([]runtime.RawExtension, len(l.Items))
	for i, obj := range l.Items {
		out.Items[i].Object = obj
	}
	return out, nil
}

func (lw fakeLW[T]) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := lw.f.Watch(ctx, opts)
	if err != nil {
		return nil, unwrap(err)
	}
	out := &pump[T]{w: w, ch: make(chan watch.Event), stop: make(chan struct{}), done: make(chan struct{})}
	go out.run()
	return out, nil
}

// unwrap returns the API error inside a source.Error, as a client-go
// ListerWatcher would return it.
func unwrap(err error) error {
	var se *source.Error
	if errors.As(err, &se) {
		return se.Err
	}
	return err
}

// pump turns a source.Watcher into a watch.Interface with one goroutine
// that ends when the stream ends or Stop is called.
type pump[T cache.Object] struct {
	w        source.Watcher[T]
	ch       chan watch.Event
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

func (p *pump[T]) run() {
	defer close(p.done)
	defer close(p.ch)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-p.stop:
			cancel()
		case <-p.done:
		}
	}()
	for {
		ev, err := p.w.Next(ctx)
		var out watch.Event
		switch {
		case errors.Is(err, source.ErrWatchClosed) || ctx.Err() != nil:
			return
		case err != nil:
			out = watch.Event{Type: watch.Error, Object: statusOf(unwrap(err))}
		default:
			out = watch.Event{Type: ev.Type, Object: ev.Object}
		}
		select {
		case p.ch <- out:
		case <-p.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

// statusOf is the metav1.Status an API server sends for err.
func statusOf(err error) *metav1.Status {
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		st := s.Status()
		return &st
	}
	st := apierrors.NewInternalError(err).Status()
	return &st
}

func (p *pump[T]) ResultChan() <-chan watch.Event { return p.ch }

func (p *pump[T]) Stop() {
	p.stopOnce.Do(func() {
		close(p.stop)
		p.w.Stop()
	})
	<-p.done
}

// List and Watch make the fake's ListerWatcher a plain cache.ListerWatcher
// too, for client-go APIs that take one.
func (lw fakeLW[T]) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw fakeLW[T]) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}
