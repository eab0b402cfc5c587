package reflector

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
	"github.com/typedinformer/informer/source"
)

// relistRV is the resourceVersion a LIST asks for: "0" (any cached state)
// for the very first list, the last synced version for a relist, so that a
// relist never goes back in time, and "" (a quorum read) after an expired
// or too-large version or when there is no version to name.
func (r *Reflector[T]) relistRV() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.rvUnavailable:
		return ""
	case !r.listed:
		return "0"
	case !r.resumable:
		// The last list had no version: the events since define none.
		return ""
	}
	return r.lastSyncRV
}

// list reads the whole collection, page by page, and hands it to the sink
// as one list (ReplaceStart, Replaced per object, ReplaceEnd) while the
// pages arrive, so that no second copy of the collection is held; the
// consumer applies it only at ReplaceEnd, so a list that fails midway is
// never published.
func (r *Reflector[T]) list(ctx context.Context) error {
	rv := r.relistRV()
	r.lists.Add(1)
	if r.hasListed() {
		r.relists.Add(1)
	}
	listRV, err := r.listPages(ctx, rv)
	if err != nil && needsRelist(err) {
		klog.FromContext(ctx).V(2).Info("list resourceVersion unavailable, listing from etcd", "resourceVersion", rv, "err", err)
		r.setUnavailable()
		r.lists.Add(1)
		listRV, err = r.listPages(ctx, "")
	}
	if err != nil {
		return err
	}
	if err := r.pushOne(fifo.Delta[T]{Type: fifo.ReplaceEnd, ResourceVersion: listRV}); err != nil {
		return err
	}
	r.setListed(listRV)
	return nil
}

// listPages follows continue tokens until the last page, pushing each page
// as it comes. If a token expires midway, it starts over with one
// unpaginated quorum list: pages of two different snapshots are never
// mixed. It returns the list's resourceVersion.
func (r *Reflector[T]) listPages(ctx context.Context, rv string) (string, error) {
	if err := r.pushOne(fifo.Delta[T]{Type: fifo.ReplaceStart}); err != nil {
		return "", err
	}
	opts := metav1.ListOptions{ResourceVersion: rv}
	if rv == "" || rv == "0" || r.pagesAnyVersion {
		// A watch cache serves a list at "0" whole, whatever the limit,
		// and one at a specific version whole only if it has no limit:
		// paging it would send it to etcd. A server that paged a list
		// at "0" has no such cache in the way (or pages from its
		// snapshots), so paging a relist there costs nothing, and each
		// page's copies can go once the cache holds the same objects.
		opts.Limit = r.opts.PageSize
	}
	first := true
	for {
		page, err := r.listPage(ctx, r.request(opts))
		if err != nil && opts.Continue != "" && (isExpired(err) || apierrors.IsBadRequest(err)) {
			klog.FromContext(ctx).V(2).Info("continue token refused, listing again without paging", "err", err)
			r.lists.Add(1)
			if err := r.pushOne(fifo.Delta[T]{Type: fifo.ReplaceStart}); err != nil {
				return "", err
			}
			opts = metav1.ListOptions{ResourceVersion: ""}
			continue
		}
		if err != nil {
			return "", err
		}
		if first && rv == "0" && page.Continue != "" {
			r.pagesAnyVersion = true
		}
		first = false
		if err := r.pushItems(r.shardPage(ctx, page.Items, page.ShardInfo, opts.Continue == ""), page.Undecodable); err != nil {
			return "", err
		}
		if page.Continue == "" {
			return page.ResourceVersion, nil
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("list interrupted: %w", ctx.Err())
		}
		opts = metav1.ListOptions{Limit: r.opts.PageSize, Continue: page.Continue}
	}
}

// pushItems prepares a page's objects and pushes them as Replaced deltas,
// and its objects that did not decode as refusals (see undecodable).
func (r *Reflector[T]) pushItems(items []T, bad []*source.UndecodableError) error {
	ds := make([]fifo.Delta[T], 0, len(items)+len(bad))
	for _, obj := range items {
		d, err := r.prepared(fifo.Replaced, obj)
		if err != nil {
			return err
		}
		ds = append(ds, d)
	}
	for _, u := range bad {
		d, err := r.undecodable(fifo.Replaced, u)
		if err != nil {
			return err
		}
		ds = append(ds, d)
	}
	return r.push(ds)
}

// listPage reads one page of a list. From a source that lists item by
// item (source.ItemLister), and without a shard (whose filter needs the
// page's ShardInfo before its items), the page's items are pushed in
// batches of PageSize as they are decoded, and the page comes back
// without them: a page the server sends whole, as a watch cache does for
// a relist, is never held whole, and an unchanged object's new copy
// becomes garbage as soon as the consumer has compared it with the cached
// one. Items pushed before a failure are part of an open list that the
// next ReplaceStart discards.
func (r *Reflector[T]) listPage(ctx context.Context, opts metav1.ListOptions) (source.List[T], error) {
	il, ok := r.src.(source.ItemLister[T])
	if !ok || r.shard.current.Load() != nil {
		return r.src.List(ctx, opts)
	}
	b := r.newBatcher()
	page, err := il.ListItems(ctx, opts, b.add)
	if err == nil {
		err = b.flush()
	}
	return page, err
}

// maxBatch bounds the batches a batcher pushes, whatever the page size.
const maxBatch = 1000

// batcher hands listed objects to the sink in batches of PageSize (at
// most maxBatch), each through Prepare, as a list item goes.
type batcher[T cache.Object] struct {
	r     *Reflector[T]
	batch []fifo.Delta[T]
}

func (r *Reflector[T]) newBatcher() *batcher[T] {
	return &batcher[T]{r: r, batch: make([]fifo.Delta[T], 0, min(r.opts.PageSize, maxBatch))}
}

// add prepares obj and pushes the batch once it is full.
func (b *batcher[T]) add(obj T) error {
	d, err := b.r.prepared(fifo.Replaced, obj)
	if err != nil {
		return err
	}
	if b.batch = append(b.batch, d); len(b.batch) == cap(b.batch) {
		return b.flush()
	}
	return nil
}

// flush pushes what the batch holds, if anything.
func (b *batcher[T]) flush() error {
	if len(b.batch) == 0 {
		return nil
	}
	err := b.r.push(b.batch)
	clear(b.batch) // the queue has them: drop this goroutine's references
	b.batch = b.batch[:0]
	return err
}
