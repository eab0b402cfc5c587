package typed

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
)

// ErrWentBack is wrapped by the error reported when the source hands the
// informer a list or a watch event older than what its cache holds.
var ErrWentBack = errors.New("typed: resourceVersion went back")

// StaleError is reported when the source hands the informer something
// older than its cache: a list answered at a resourceVersion older than
// the one the cache is at (an API server behind a load balancer whose
// watch cache lags), or a watch event older than that. The informer
// refuses it, so the cache never goes back in time (a list does not bring
// a deleted object back, an event does not take an object back to an
// older state), and lists again with a quorum read, which it takes
// whatever its version: after an etcd restore, versions go back for good.
type StaleError struct {
	// Key is the event's object; zero for a list.
	Key cache.Key
	// ResourceVersion is the refused list's or event's.
	ResourceVersion string
	// Cached is the resourceVersion the cache is at: the cached object's,
	// for an event.
	Cached string
}

// Error says what was refused, as "list at resourceVersion 5 is older
// than the cache (7): refused; listing again" (for an event, "event of
// ns/name at ...", and the cached object's version).
func (e *StaleError) Error() string {
	what := "list"
	if e.Key.Name != "" {
		what = "event of " + e.Key.String()
	}
	return fmt.Sprintf("%s at resourceVersion %s is older than the cache (%s): refused; listing again", what, e.ResourceVersion, e.Cached)
}

// Unwrap returns ErrWentBack.
func (e *StaleError) Unwrap() error { return ErrWentBack }

// at is the resourceVersion the cache is at with the batch's changes so
// far.
func (a *applier[T]) at() string {
	if a.seen != "" {
		return a.seen
	}
	return a.last
}

// older reports whether rv is older than the cache; false where either
// does not compare (a source whose versions are not the API server's).
func (a *applier[T]) older(rv string) bool {
	cur := a.at()
	if rv == "" || cur == "" {
		return false
	}
	c, err := resourceversion.CompareResourceVersion(rv, cur)
	return err == nil && c < 0
}

// staleEvent refuses a watch event older than the object the cache holds
// under its key, and asks for a relist, reporting it once until the relist
// is in. It compares with the object, not with the whole cache: a source
// owes increasing versions per object, and a stream whose versions are
// not increasing across objects (a replay, a test's) is not wrong.
func (a *applier[T]) staleEvent(d *fifo.Delta[T]) bool {
	if !a.synced || d.Object == *new(T) {
		return false
	}
	rv := d.Object.GetResourceVersion()
	if a.relisting && a.older(rv) {
		return true // older than the cache, while the relist asked for is on its way
	}
	held, ok := a.inf.writer.Entry(d.Key)
	if !ok {
		return false
	}
	cur := held.Object.GetResourceVersion()
	if rv == "" || cur == "" {
		return false
	}
	if c, err := resourceversion.CompareResourceVersion(rv, cur); err != nil || c >= 0 {
		return false
	}
	a.wentBack(&StaleError{Key: d.Key, ResourceVersion: rv, Cached: cur})
	return true
}

// staleList refuses a list older than the cache, unless it is the quorum
// list asked for after a refusal.
func (a *applier[T]) staleList(rv string) bool {
	if a.relisting {
		a.relisting = false
		return false
	}
	if !a.synced || !a.older(rv) {
		return false
	}
	a.listing = false
	a.list, a.listed, a.listRefused = shrink(a.list), nil, nil
	a.wentBack(&StaleError{ResourceVersion: rv, Cached: a.at()})
	return true
}

// wentBack reports err, unless a relist is already asked for, and asks
// the reflector for a quorum relist.
func (a *applier[T]) wentBack(err *StaleError) {
	if a.relisting {
		return
	}
	a.relisting = true
	a.inf.reportAsync(err)
	a.inf.refl.Relist()
}

// advance records the version the cache reached at the end of a batch.
func (a *applier[T]) advance(rv string) {
	if a.last == "" {
		a.last = rv
		return
	}
	if c, err := resourceversion.CompareResourceVersion(rv, a.last); err != nil || c > 0 {
		a.last = rv
	}
}
