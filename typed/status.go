package typed

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// SyncStatus is the state of an informer's cache, with the reason when it
// is not in sync.
type SyncStatus struct {
	// Synced is true once the initial list is in the cache.
	Synced bool
	// LastError is the last list, watch or cache error since the informer
	// last took a list or a watch event successfully, nil if none. Handler
	// panics are not recorded here (see Registration.Panics). It is set while the informer cannot sync (for
	// example an RBAC Forbidden error) and cleared by a successful list.
	// Synced never goes back to false (like client-go's HasSynced, it means
	// the initial list is in), so after sync a non-nil LastError is how to
	// tell that the cache may be stale: for example, permission to watch was
	// revoked and the informer is retrying.
	LastError error
	// LastErrorTime is when LastError happened.
	LastErrorTime time.Time
	// ResourceVersion is the last resourceVersion taken from the source.
	ResourceVersion string
}

// NotSyncedError is returned by WaitForSync when the cache is not in sync:
// Cause is the last list or watch error (nil if there was none), and Wait
// the reason the wait ended (the context's error), if it ended that way.
type NotSyncedError struct {
	// Informer is the informer's name.
	Informer string
	// Cause is the last list or watch error, or an invalid option.
	Cause error
	// Wait is why the wait ended: ctx's error, or ErrStopped.
	Wait error
}

func (e *NotSyncedError) Error() string {
	switch {
	case e.Cause != nil && e.Wait != nil:
		return fmt.Sprintf("%s: cache not synced (%v): %v", e.Informer, e.Wait, e.Cause)
	case e.Cause != nil:
		return fmt.Sprintf("%s: cache not synced: %v", e.Informer, e.Cause)
	}
	return fmt.Sprintf("%s: cache not synced: %v", e.Informer, e.Wait)
}

// Unwrap returns the cause and the wait error, so errors.Is(err,
// context.DeadlineExceeded) and apierrors.IsForbidden(err) both work.
func (e *NotSyncedError) Unwrap() []error {
	var out []error
	for _, err := range []error{e.Cause, e.Wait} {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// syncStatus tracks sync state and the last error, and wakes waiters.
type syncStatus struct {
	mu      sync.Mutex
	synced  bool
	stopped bool
	err     error
	errTime time.Time
	changed chan struct{} // closed and replaced on every change
}

func (s *syncStatus) init() { s.changed = make(chan struct{}) }

func (s *syncStatus) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *syncStatus) setError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && s.err == nil {
		return
	}
	s.err, s.errTime = err, time.Now()
	s.notifyLocked()
}

func (s *syncStatus) markSynced() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.synced {
		s.synced = true
		s.notifyLocked()
	}
}

func (s *syncStatus) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	s.notifyLocked()
}

func (s *syncStatus) isSynced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.synced
}

// SyncStatus returns the informer's sync state and last error.
func (inf *Informer[T]) SyncStatus() SyncStatus {
	s := &inf.status
	s.mu.Lock()
	defer s.mu.Unlock()
	return SyncStatus{
		Synced:          s.synced,
		LastError:       s.err,
		LastErrorTime:   s.errTime,
		ResourceVersion: inf.refl.LastSyncResourceVersion(),
	}
}

// needsIntervention reports errors that retrying will not fix until someone
// changes something elsewhere: RBAC, credentials, a missing resource (CRD).
func needsIntervention(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsNotFound(err)
}

// WaitForSync waits until the initial list is in the cache and returns nil.
// It returns a *NotSyncedError at once when the informer hits an error that
// retrying cannot fix by itself (Forbidden, Unauthorized, NotFound: the
// informer keeps retrying, so a later WaitForSync can succeed), or when ctx
// ends, carrying the last error so the caller learns why.
func (inf *Informer[T]) WaitForSync(ctx context.Context) error {
	if inf.configErr != nil {
		return &NotSyncedError{Informer: inf.name, Cause: inf.configErr}
	}
	s := &inf.status
	for {
		s.mu.Lock()
		synced, stopped, err, changed := s.synced, s.stopped, s.err, s.changed
		s.mu.Unlock()
		switch {
		case synced:
			return nil
		case err != nil && needsIntervention(err):
			return &NotSyncedError{Informer: inf.name, Cause: err}
		case stopped:
			return &NotSyncedError{Informer: inf.name, Cause: err, Wait: ErrStopped}
		}
		select {
		case <-ctx.Done():
			return &NotSyncedError{Informer: inf.name, Cause: err, Wait: ctx.Err()}
		case <-changed:
		}
	}
}

// WaitForCacheSync waits until every check returns true, polling like
// client-go's cache.WaitForCacheSync, and returns false if ctx ends first.
// Pass informer and registration HasSynced methods.
func WaitForCacheSync(ctx context.Context, checks ...func() bool) bool {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		done := true
		for _, c := range checks {
			if !c() {
				done = false
				break
			}
		}
		if done {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}
