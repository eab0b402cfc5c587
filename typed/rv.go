package typed

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/typedinformer/informer/cache"
)

// observed is the resourceVersion the cache has caught up with, and who
// waits for it to move.
type observed struct {
	mu      sync.Mutex
	rv      string
	changed chan struct{} // closed when rv moves, if anyone waits
	rev     uint64        // the store's revision at rv; 0 if unknown
}

// observe records that the cache now reflects every change up to rv: the
// writer calls it after each batch it applied, with no lock of its own
// held.
func (inf *Informer[T]) observe(rv string, rev uint64) {
	o := &inf.seen
	o.mu.Lock()
	if o.rv != "" {
		if c, err := resourceversion.CompareResourceVersion(rv, o.rv); err == nil && c <= 0 {
			o.rev = 0 // the store moved on without a newer version
			if c == 0 {
				o.rev = rev
			}
			o.mu.Unlock()
			return
		}
	}
	o.rv, o.rev = rv, rev
	ch := o.changed
	o.changed = nil
	o.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// ErrBadResourceVersion is wrapped by the errors of WaitForResourceVersion
// for a version that is not one the API server hands out (it must be a
// decimal number).
var ErrBadResourceVersion = errors.New("typed: not a comparable resourceVersion")

// WaitForResourceVersion waits until the cache has observed rv, the
// resourceVersion a write to the API server returned, or a newer one, and
// returns nil: from then on the lister and store reflect that write (and
// every change before it), so a controller reads its own writes. It asks
// nothing of the server: the watch brings the version, or a bookmark
// newer than it. It returns ctx's error if ctx ends first, ErrStopped if
// the informer stops, and an error wrapping ErrBadResourceVersion for a
// version that cannot be compared (the API server's are decimal numbers,
// compared as resourceversion.CompareResourceVersion does). Called before
// Run, it waits for Run: give ctx a deadline.
func (inf *Informer[T]) WaitForResourceVersion(ctx context.Context, rv string) error {
	o := &inf.seen
	for {
		o.mu.Lock()
		if o.rv != "" {
			c, err := resourceversion.CompareResourceVersion(o.rv, rv)
			if err != nil {
				o.mu.Unlock()
				return fmt.Errorf("%w: informer %s: %q: %w", ErrBadResourceVersion, inf.name, rv, err)
			}
			if c >= 0 {
				o.mu.Unlock()
				return nil
			}
		} else if _, err := resourceversion.CompareResourceVersion(rv, rv); err != nil {
			o.mu.Unlock()
			return fmt.Errorf("%w: informer %s: %q: %w", ErrBadResourceVersion, inf.name, rv, err)
		}
		if o.changed == nil {
			o.changed = make(chan struct{})
		}
		ch := o.changed
		o.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-inf.done:
			return ErrStopped
		}
	}
}

// WaitForObject waits as WaitForResourceVersion does, then returns the
// cache's object under key: the one a write at rv returned or a newer
// state of it, or found false if it has been deleted since (or the write
// was its deletion).
func (inf *Informer[T]) WaitForObject(ctx context.Context, key cache.Key, rv string) (obj T, found bool, err error) {
	if err := inf.WaitForResourceVersion(ctx, rv); err != nil {
		var zero T
		return zero, false, err
	}
	obj, found = inf.store.GetByKey(key)
	return obj, found, nil
}
