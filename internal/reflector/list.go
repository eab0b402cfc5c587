package reflector

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// relistRV is the resourceVersion a LIST asks for: "" (a quorum read) after
// an expired or too-large version, "0" (any cached state) for the very
// first list, and the last synced version otherwise, so a relist never goes
// back in time.
func (r *Reflector[T]) relistRV() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.rvUnavailable:
		return ""
	case r.lastSyncRV == "":
		return "0"
	}
	return r.lastSyncRV
}

// list reads the whole collection, page by page, and replaces the queue's
// content with it in one Replace.
func (r *Reflector[T]) list(ctx context.Context) error {
	rv := r.relistRV()
	r.lists.Add(1)
	if r.synced() {
		r.relists.Add(1)
	}
	items, listRV, err := r.listPages(ctx, rv)
	if err != nil && (isExpired(err) || isTooLarge(err)) {
		klog.FromContext(ctx).V(2).Info("list resourceVersion unavailable, listing from etcd", "resourceVersion", rv, "err", err)
		r.mu.Lock()
		r.rvUnavailable = true
		r.mu.Unlock()
		r.lists.Add(1)
		items, listRV, err = r.listPages(ctx, "")
	}
	if err != nil {
		return err
	}
	if err := r.queue.Replace(items, listRV); err != nil {
		return &WriteError{Op: "replace", Err: err}
	}
	r.setSynced(listRV)
	r.failing.Store(false)
	if r.opts.OnSynced != nil {
		r.opts.OnSynced(listRV)
	}
	return nil
}

// listPages follows continue tokens until the last page. If a token expires
// midway, it starts over with one unpaginated quorum list: pages of two
// different snapshots are never mixed.
func (r *Reflector[T]) listPages(ctx context.Context, rv string) ([]T, string, error) {
	opts := metav1.ListOptions{ResourceVersion: rv}
	if rv == "" || rv == "0" {
		// A list at a specific version is served whole from the watch cache;
		// paging it would force reads from etcd.
		opts.Limit = r.opts.PageSize
	}
	var items []T
	for {
		page, err := r.src.List(ctx, opts)
		if err != nil {
			if opts.Continue != "" && isExpired(err) {
				klog.FromContext(ctx).V(2).Info("continue token expired, listing again without paging", "err", err)
				r.lists.Add(1)
				page, err = r.src.List(ctx, metav1.ListOptions{ResourceVersion: ""})
				if err != nil {
					return nil, "", err
				}
				return page.Items, page.ResourceVersion, nil
			}
			return nil, "", err
		}
		if items == nil {
			items = page.Items
		} else {
			items = append(items, page.Items...)
		}
		if page.Continue == "" {
			return items, page.ResourceVersion, nil
		}
		if ctx.Err() != nil {
			return nil, "", fmt.Errorf("list interrupted: %w", ctx.Err())
		}
		opts = metav1.ListOptions{Limit: r.opts.PageSize, Continue: page.Continue}
	}
}
