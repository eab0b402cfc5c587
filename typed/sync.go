package typed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/typedinformer/informer/internal/objects"
	"github.com/typedinformer/informer/internal/reflector"
	"github.com/typedinformer/informer/metrics"
)

// NotSyncedError is returned by the waits when the cache (or a handler) is
// not in sync: Cause is the informer's last list or watch error (nil if
// there was none), and Wait the reason the wait ended (ctx's error,
// ErrStopped, ErrRemoved), if it ended that way rather than on Cause.
type NotSyncedError struct {
	// Informer is the informer's name.
	Informer string
	// Handler names the handler, for a Registration's wait.
	Handler string
	// Cause is the informer's last list or watch error.
	Cause error
	// Wait is why the wait ended early: ctx's error, ErrStopped or
	// ErrRemoved.
	Wait error
}

func (e *NotSyncedError) Error() string {
	what := "informer " + e.Informer
	if e.Handler != "" {
		what = "handler " + e.Handler
	}
	switch {
	case e.Cause != nil && e.Wait != nil:
		return fmt.Sprintf("%s not synced (%v): %v", what, e.Wait, e.Cause)
	case e.Cause != nil:
		return fmt.Sprintf("%s not synced: %v", what, e.Cause)
	}
	return fmt.Sprintf("%s not synced: %v", what, e.Wait)
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

// WaitForSync waits until the initial list is in the cache and returns nil,
// also after Run has returned (the cache keeps what it had, as client-go's
// HasSynced stays true). It returns a *NotSyncedError at once when the
// informer hits an error that retrying cannot fix by itself (Forbidden,
// Unauthorized, NotFound: the informer keeps retrying, so a later
// WaitForSync can succeed), when Run returns before the informer synced,
// or when ctx ends, carrying the last error so the caller learns why (for
// an informer whose Run was never called, ErrNotStarted). Called before
// Run, it waits for Run (as factory code does between Register and
// Start): give ctx a deadline.
func (inf *Informer[T]) WaitForSync(ctx context.Context) error {
	return inf.wait(ctx, inf.synced, nil, "")
}

// wait waits for synced to close, ending early as WaitForSync says; a
// handler's wait also ends when its listener stops (gone).
func (inf *Informer[T]) wait(ctx context.Context, synced, gone <-chan struct{}, handler string) error {
	fail := func(cause, wait error) error {
		return &NotSyncedError{Informer: inf.name, Handler: handler, Cause: cause, Wait: wait}
	}
	for {
		changed := inf.refl.Changed()
		cause := inf.refl.Status().LastError
		select {
		case <-synced:
			return nil
		default:
		}
		if cause != nil && reflector.NeedsIntervention(cause) {
			select {
			case <-inf.done: // stopped too: say so, retrying will not happen
				return fail(cause, ErrStopped)
			default:
				return fail(cause, nil)
			}
		}
		select {
		case <-synced:
			return nil
		case <-changed:
		case <-inf.done:
			select {
			case <-synced:
				return nil
			default:
				return fail(cause, ErrStopped)
			}
		case <-gone:
			select {
			case <-synced:
				return nil
			case <-inf.done:
				return fail(cause, ErrStopped)
			default:
				return fail(cause, ErrRemoved)
			}
		case <-ctx.Done():
			if cause == nil && !inf.started() {
				cause = ErrNotStarted
			}
			return fail(cause, ctx.Err())
		}
	}
}

// ErrNotStarted is the cause of a wait that ended while the informer's Run
// had not been called.
var ErrNotStarted = errors.New("typed: informer not started (Run was not called)")

// started reports whether Run has been called.
func (inf *Informer[T]) started() bool {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	return inf.state != idle
}

// Syncer is anything that can wait for its sync: an *Informer or a
// *Registration.
type Syncer interface {
	WaitForSync(ctx context.Context) error
}

// WaitForCacheSync waits, at the same time, for every informer and
// registration to sync, and returns nil once all have, or an error that
// joins the *NotSyncedError of each one that did not, naming it and saying
// why (a handler whose informer did not sync is left out: the informer's
// error says it). It returns when the last wait has ended; each ends as its
// own WaitForSync says (at once on Forbidden, NotFound...).
func WaitForCacheSync(ctx context.Context, syncers ...Syncer) error {
	errs := make([]error, len(syncers))
	var wg sync.WaitGroup
	for i, s := range syncers {
		if objects.IsNil(s) {
			errs[i] = fmt.Errorf("typed: WaitForCacheSync: syncer %d is nil (%T)", i, s)
			continue
		}
		wg.Go(func() { errs[i] = s.WaitForSync(ctx) })
	}
	wg.Wait()
	// A handler cannot sync when its informer did not: name the informer
	// once, not again for each of its handlers.
	failed := map[string]bool{}
	for _, err := range errs {
		var nse *NotSyncedError
		if errors.As(err, &nse) && nse.Handler == "" {
			failed[nse.Informer] = true
		}
	}
	for i, err := range errs {
		var nse *NotSyncedError
		if errors.As(err, &nse) && nse.Handler != "" && failed[nse.Informer] {
			errs[i] = nil
		}
	}
	return errors.Join(errs...)
}

// Status is what an informer knows about its source: the last error since
// the source was last healthy, and counters. Use HasSynced and
// LastSyncResourceVersion for the sync state.
type Status struct {
	// LastError is the last list or watch error, or refused object, since
	// the source last answered well (a list succeeded, a watch was
	// established, an event or bookmark arrived); nil when healthy. After
	// sync, a non-nil LastError is how to tell that the cache may be
	// stale: for example, permission to watch was revoked and the
	// informer is retrying.
	LastError error
	// LastErrorTime is when LastError happened.
	LastErrorTime time.Time
	// StaleSince is when the current run of errors began; zero when
	// healthy.
	StaleSince time.Time
	// LastEventTime is when the informer last applied a watch event, a
	// bookmark or a list from its source; zero before the first. How long
	// ago it was is how stale a quiet cache may be.
	LastEventTime time.Time
	// Stats are the informer's counters.
	Stats metrics.Stats
	// Shard is the state of Options.Shard; zero without one.
	Shard metrics.ShardStatus
	// Quarantined lists the objects left out of the cache (see
	// Quarantine), sorted by key; nil when there are none.
	Quarantined []Quarantined
	// Checks are what the informer's safety nets found.
	Checks Checks
	// Size is the estimate of what the cache holds, and its budget.
	Size Size
}

// Status returns the informer's status.
func (inf *Informer[T]) Status() Status {
	s := inf.refl.Status()
	if s.Shard.Selector != "" {
		s.Shard.Synced = inf.shardListed.Load()
	}
	return Status{LastError: s.LastError, LastErrorTime: s.LastErrorTime, StaleSince: s.StaleSince,
		LastEventTime: inf.lastEventTime(), Stats: s.Stats, Shard: s.Shard,
		Quarantined: inf.poison.list(), Checks: inf.checks(), Size: inf.Size()}
}
