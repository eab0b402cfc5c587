package factory

import (
	"context"
	"slices"
	"strings"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/typed"
)

// Informer is one of a factory's informers, whatever its type: what a
// debug page, a readiness check or a log of the program's caches reads of
// it. [Factory.Follow] hands them out.
type Informer interface {
	// Name is the informer's name (typed.Informer.Name).
	Name() string
	// HasSynced reports whether the initial list has been delivered.
	HasSynced() bool
	// WaitForSync waits for it (typed.Informer.WaitForSync).
	WaitForSync(ctx context.Context) error
	// Status is its health (typed.Informer.Status).
	Status() typed.Status
	// LastSyncResourceVersion is the resourceVersion its cache is at.
	LastSyncResourceVersion() string
	// Stopped is closed once its Run has returned.
	Stopped() <-chan struct{}
	// Len is how many objects its cache holds.
	Len() int
}

// view is a shared informer of T as an Informer. Two views of one
// informer are equal, so a follower may key a map by them.
type view[T cache.Object] struct {
	*typed.Informer[T]
}

// Len is how many objects the informer's cache holds.
func (v view[T]) Len() int { return v.Store().Len() }

// follower is one Follow call's functions.
type follower struct {
	added, removed func(Informer)
}

// Follow calls added with every informer the factory holds and, until
// stop is called, with every informer it makes later; and removed, if not
// nil, with each of those the factory stops and forgets after its last
// release. An informer is handed to added before InformerFor returns it,
// so whatever added registers it with knows of it before its caller does.
// When Start returns the informers are stopped, not removed.
//
// The calls are made one at a time, in the order the informers are made
// and released, with the factory's lock held: they must return quickly
// and must not call the factory. httpinfo.AddFactory uses it to put every
// informer on the debug page and the readiness check.
func (f *Factory) Follow(added, removed func(Informer)) (stop func()) {
	if f == nil || added == nil {
		return func() {}
	}
	fl := &follower{added: added, removed: removed}
	f.mu.Lock()
	defer f.mu.Unlock()
	entries := make([]entry, 0, len(f.informers))
	for _, e := range f.informers {
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name(), b.name()) })
	for _, e := range entries {
		fl.added(e.view())
	}
	f.followers = append(f.followers, fl)
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.followers = slices.DeleteFunc(f.followers, func(o *follower) bool { return o == fl })
	}
}

// addedLocked tells the followers of a new informer; f.mu is held.
func (f *Factory) addedLocked(e entry) {
	for _, fl := range f.followers {
		fl.added(e.view())
	}
}

// removedLocked tells the followers of a forgotten informer; f.mu is held.
func (f *Factory) removedLocked(e entry) {
	for _, fl := range f.followers {
		if fl.removed != nil {
			fl.removed(e.view())
		}
	}
}
