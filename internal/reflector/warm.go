package reflector

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
	"github.com/typedinformer/informer/source"
)

// Saved is a saved state of the source, for a warm start (Options.Warm).
type Saved[T any] interface {
	// ResourceVersion is the version the saved objects are the state at.
	ResourceVersion() string
	// Load hands each saved object to each. An error after some objects
	// were handed over means they must be dropped.
	Load(each func(T) error) error
	// Close releases the saved state.
	Close() error
}

// warmProbe is the timeoutSeconds of the watch a warm start opens. A
// server that no longer has the saved version refuses the watch at once
// (410 Gone, or an error for a version newer than it has); one that has
// it sends what changed since, or nothing: then the watch ends cleanly at
// its deadline, which accepts the version as surely as an event does. A
// short timeout makes that answer quick when nothing changed.
const warmProbe = 1

// warmClean is how long the probe must have lasted for a clean end to
// count as the server's acceptance: a watch closed sooner was not served
// to its deadline.
const warmClean = 700 * time.Millisecond

// DefaultWarmAccept is the default of Options.WarmAccept.
const DefaultWarmAccept = 10 * time.Second

// ErrNoSaved is wrapped by the error of an Options.Warm that has no saved
// state (a first start): the reflector lists without reporting it.
var ErrNoSaved = errors.New("no saved state")

// errWarm is the default of Options.ErrWarm.
var errWarm = errors.New("reflector: warm start abandoned")

// probe is what the first watch of a warm start brought: the watch and
// its first event, or why there is none.
type probe[T cache.Object] struct {
	w   source.Watcher[T]
	ev  source.Event[T]
	err error
	// served: the watch ended cleanly at its deadline, with no event.
	served bool
}

// warmStart tries the saved state of Options.Warm, once: it opens a watch
// from the saved version and, while the server answers, hands the saved
// objects to the sink as an open list. The list is closed, at the saved
// version, only once the watch has brought an event or a bookmark: the
// server accepted the version, and the watch goes on from there. Anything
// else (no saved state, a foreign or corrupt one, a 410, no word from the
// server within Options.WarmAccept) is reported once and leaves the list
// open, for the list that follows to discard; warmStart then returns
// false and Run lists as it would have.
func (r *Reflector[T]) warmStart(ctx context.Context) (bool, error) {
	warm := r.opts.Warm
	r.opts.Warm = nil // once
	saved, err := warm()
	if errors.Is(err, ErrNoSaved) {
		klog.FromContext(ctx).V(2).Info("warm start: nothing saved; listing", "err", err)
		return false, nil
	}
	if err != nil {
		r.warmFailed(ctx, err)
		return false, nil
	}
	defer saved.Close()
	rv := saved.ResourceVersion()
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	probed := make(chan probe[T], 1)
	go func() { probed <- r.probe(pctx, rv) }()
	abandon := func(err error) (bool, error) {
		cancel()
		if p := <-probed; p.w != nil {
			p.w.Stop()
		}
		if errors.Is(err, errSinkClosed) || ctx.Err() != nil {
			return false, nil
		}
		r.warmFailed(ctx, err)
		return false, nil
	}
	if err := r.loadSaved(saved); err != nil {
		return abandon(err)
	}
	t := time.NewTimer(r.opts.WarmAccept)
	defer t.Stop()
	var p probe[T]
	select {
	case <-ctx.Done():
		return abandon(ctx.Err())
	case <-t.C:
		return abandon(fmt.Errorf("the watch from resourceVersion %s brought neither an event nor a bookmark within %v", rv, r.opts.WarmAccept))
	case p = <-probed:
	}
	if p.err != nil {
		if p.w != nil {
			p.w.Stop()
		}
		probed <- probe[T]{} // for abandon, which waits for the probe
		return abandon(fmt.Errorf("watch from resourceVersion %s: %w", rv, p.err))
	}
	if err := r.pushOne(fifo.Delta[T]{Type: fifo.ReplaceEnd, ResourceVersion: rv}); err != nil {
		p.w.Stop()
		return false, nil
	}
	r.warmStarts.Add(1)
	r.setListed(rv)
	klog.FromContext(ctx).V(2).Info("warm start: the server serves the saved resourceVersion", "resourceVersion", rv)
	if p.served {
		p.w.Stop()
		err = r.watch(ctx, nil)
		if errors.Is(err, errSinkClosed) {
			return true, nil
		}
		return true, err
	}
	if err := r.apply(p.ev); err != nil {
		p.w.Stop()
		if errors.Is(err, errSinkClosed) {
			return true, nil
		}
		return true, err
	}
	err = r.watch(ctx, p.w)
	if errors.Is(err, errSinkClosed) {
		return true, nil
	}
	return true, err
}

// probe opens the watch of a warm start and waits for its first event.
func (r *Reflector[T]) probe(ctx context.Context, rv string) probe[T] {
	r.watches.Add(1)
	timeout := int64(warmProbe)
	w, err := r.src.Watch(ctx, r.request(metav1.ListOptions{
		ResourceVersion: rv, TimeoutSeconds: &timeout, AllowWatchBookmarks: true,
	}))
	if err != nil {
		return probe[T]{err: err}
	}
	start := time.Now()
	ev, err := w.Next(ctx)
	if errors.Is(err, source.ErrWatchClosed) {
		if took := time.Since(start); took >= warmClean && ctx.Err() == nil {
			return probe[T]{w: w, served: true}
		}
		err = fmt.Errorf("the watch ended at once, without an event: %w", err)
	}
	return probe[T]{w: w, ev: ev, err: err}
}

// loadSaved hands the saved objects to the sink as an open list, in
// batches, each object through Prepare as a listed one would go.
func (r *Reflector[T]) loadSaved(saved Saved[T]) error {
	if err := r.pushOne(fifo.Delta[T]{Type: fifo.ReplaceStart}); err != nil {
		return err
	}
	b := r.newBatcher()
	if err := saved.Load(b.add); err != nil {
		return err
	}
	return b.flush()
}

// warmFailed reports, once, why the warm start is given up.
func (r *Reflector[T]) warmFailed(ctx context.Context, err error) {
	r.report(ctx, fmt.Errorf("%w, listing instead: %w", r.opts.ErrWarm, reportable(err)))
}
