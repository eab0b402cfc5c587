package reflector

import (
	"context"
	"errors"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
	"github.com/typedinformer/informer/metrics"
)

// Shard restricts a reflector to one shard of its resource: Selector is
// sent as metav1.ListOptions.ShardSelector on every list and watch, and
// Contains is the same check on the client.
//
// A list whose ShardInfo echoes Selector was filtered by the server and is
// taken as it is. A list without it (a server without the
// ShardedListAndWatch feature, or an older one) is filtered with Contains,
// and so is every list after it until one echoes the selector again. Watch
// events carry no shard information: each is checked with Contains, and
// one outside the shard is dropped (its resourceVersion still counts).
// The streaming list is not used with a shard: its end bookmark says
// nothing about the selector, so a server that ignored it could not be
// told.
type Shard[T cache.Object] struct {
	Selector string
	Contains func(T) bool
}

// shardState is the reflector's shard bookkeeping. The current shard is
// written by Run's goroutine when it takes a move, and read by it for
// every request and event, and by Status and InScope from others.
type shardState[T cache.Object] struct {
	current         atomic.Pointer[Shard[T]] // nil: the whole resource, or paused
	clientFiltering atomic.Bool
	warned          atomic.Bool
	filtered        atomic.Int64
}

// move is a change of shard asked for by Move and not yet taken by Run.
type move[T cache.Object] struct {
	next *Shard[T]
	gen  uint64
}

// Move switches the reflector to shard next, or, for nil, pauses it: it
// lists and watches nothing until the next Move. It stops the current
// watch and returns at once with the move's generation; Run's goroutine
// takes the move between two watches (a list in progress ends first), and
// pushes a Moved delta at the point where the old shard's deltas end, so
// that the sink can drop what the new shard leaves out; then it lists the
// new shard. Moves asked for before Run are taken when it starts. Only a
// reflector made with Options.Shard moves.
func (r *Reflector[T]) Move(next *Shard[T]) uint64 {
	r.mu.Lock()
	r.moveGen++
	r.pending = &move[T]{next: next, gen: r.moveGen}
	gen := r.moveGen
	w := r.current
	r.mu.Unlock()
	select {
	case r.wakeMove <- struct{}{}:
	default:
	}
	if w != nil {
		w.Stop()
	}
	return gen
}

// WaitMoved waits until Run has taken the move of generation gen (or a
// later one), and returns how many Moved deltas the reflector had pushed
// by then: the sink has handled the move once it has handled that many.
// It returns ctx's error if ctx ends first, and errStopped if stop closes.
func (r *Reflector[T]) WaitMoved(ctx context.Context, gen uint64, stop <-chan struct{}) (uint64, error) {
	for {
		r.mu.Lock()
		taken, marks, ch := r.movedGen, r.marks, r.moved
		r.mu.Unlock()
		if taken >= gen {
			return marks, nil
		}
		select {
		case <-ch:
		case <-stop:
			return 0, errStopped
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// errStopped ends a wait for a reflector whose consumer stopped.
var errStopped = errors.New("reflector: stopped")

// movePending reports a move asked for and not taken: the watch in
// progress must end.
func (r *Reflector[T]) movePending() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending != nil
}

// takeMove takes a pending move, if any: the new shard is current from
// now on and a Moved delta marks the switch in the sink. While paused
// (the shard is nil after a move), it waits for the next move. It returns
// false if ctx ended or the sink closed.
func (r *Reflector[T]) takeMove(ctx context.Context) bool {
	for {
		r.mu.Lock()
		m := r.pending
		r.pending = nil
		r.mu.Unlock()
		if m != nil {
			r.shard.current.Store(m.next)
			r.paused = m.next == nil
			r.shard.clientFiltering.Store(false)
			r.shard.warned.Store(false)
			if err := r.pushOne(fifo.Delta[T]{Type: fifo.Moved}); err != nil {
				return false
			}
			r.mu.Lock()
			r.marks++
			r.movedGen = m.gen
			close(r.moved)
			r.moved = make(chan struct{})
			r.mu.Unlock()
			klog.FromContext(ctx).V(2).Info("moved to another shard", "selector", r.selector())
		}
		if !r.paused {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-r.wakeMove:
		}
	}
}

// selector is the current shard's selector, empty without one.
func (r *Reflector[T]) selector() string {
	if sh := r.shard.current.Load(); sh != nil {
		return sh.Selector
	}
	return ""
}

// shardRequest sets the shard selector on a request.
func (r *Reflector[T]) shardRequest(opts *metav1.ListOptions) {
	if sh := r.shard.current.Load(); sh != nil {
		opts.ShardSelector = sh.Selector
	}
}

// shardPage checks a list page's ShardInfo against the selector sent and
// returns the page's items in the shard: all of them if the server
// filtered, the ones Contains accepts if it did not.
func (r *Reflector[T]) shardPage(ctx context.Context, items []T, info *metav1.ShardInfo, first bool) []T {
	sh := r.shard.current.Load()
	if sh == nil {
		return items
	}
	if first {
		echoed := info != nil && info.Selector == sh.Selector
		r.shard.clientFiltering.Store(!echoed)
		if !echoed && !r.shard.warned.Swap(true) {
			got := ""
			if info != nil {
				got = info.Selector
			}
			klog.FromContext(ctx).Info("the server did not apply the shard selector; filtering on the client",
				"selector", sh.Selector, "echoed", got)
		}
	}
	if !r.shard.clientFiltering.Load() {
		return items
	}
	kept := items[:0]
	for _, obj := range items {
		if sh.Contains(obj) {
			kept = append(kept, obj)
		} else {
			r.shard.filtered.Add(1)
		}
	}
	clear(items[len(kept):])
	return kept
}

// inShard reports whether a watch event's object belongs to the shard.
func (r *Reflector[T]) inShard(obj T) bool {
	sh := r.shard.current.Load()
	if sh == nil || sh.Contains(obj) {
		return true
	}
	r.shard.filtered.Add(1)
	return false
}

// InScope reports whether obj is one the reflector hands over: in its
// shard, if it has one. Unlike the filtering of lists and events, it
// counts nothing.
func (r *Reflector[T]) InScope(obj T) bool {
	sh := r.shard.current.Load()
	return sh == nil || sh.Contains(obj)
}

// shardStatus returns the shard part of the status.
func (r *Reflector[T]) shardStatus() metrics.ShardStatus {
	sh := r.shard.current.Load()
	if sh == nil {
		return metrics.ShardStatus{Filtered: int(r.shard.filtered.Load())}
	}
	return metrics.ShardStatus{
		Selector:        sh.Selector,
		ClientFiltering: r.shard.clientFiltering.Load(),
		Filtered:        int(r.shard.filtered.Load()),
	}
}
