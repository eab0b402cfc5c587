package reflector

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

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
		page, err := r.src.List(ctx, r.request(opts))
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
