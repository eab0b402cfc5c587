package reflector

import (
	"context"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/cache"
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

// shardState is the reflector's shard bookkeeping.
type shardState struct {
	clientFiltering atomic.Bool
	warned          atomic.Bool
	filtered        atomic.Int64
}

// shardRequest sets the shard selector on a request.
func (r *Reflector[T]) shardRequest(opts *metav1.ListOptions) {
	if r.opts.Shard != nil {
		opts.ShardSelector = r.opts.Shard.Selector
	}
}

// shardPage checks a list page's ShardInfo against the selector sent and
// returns the page's items in the shard: all of them if the server
// filtered, the ones Contains accepts if it did not.
func (r *Reflector[T]) shardPage(ctx context.Context, items []T, info *metav1.ShardInfo, first bool) []T {
	sh := r.opts.Shard
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
	if r.opts.Shard == nil || r.opts.Shard.Contains(obj) {
		return true
	}
	r.shard.filtered.Add(1)
	return false
}

// shardStatus returns the shard part of the status.
func (r *Reflector[T]) shardStatus() metrics.ShardStatus {
	if r.opts.Shard == nil {
		return metrics.ShardStatus{}
	}
	return metrics.ShardStatus{
		Selector:        r.opts.Shard.Selector,
		ClientFiltering: r.shard.clientFiltering.Load(),
		Filtered:        int(r.shard.filtered.Load()),
	}
}
