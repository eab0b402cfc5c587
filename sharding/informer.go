package sharding

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/metrics"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// InformerOptions configure NewInformer. The zero value shards by UID with
// the default informer options.
type InformerOptions[T cache.Object] struct {
	// Key is the hashed field. Default ByUID.
	Key Key
	// Informer are the options of the replica's informer; its Shard is
	// set by the sharded informer and must be nil. Handler panics, list
	// and watch errors go to its ErrorHandler, as for any informer.
	Informer typed.Options[T]
	// HandoffTimeout bounds how long a move to another range waits for a
	// handler call on an object that leaves the range to return: a
	// handler stuck longer no longer holds up the group (the replica goes
	// on, the error names the handler). Default: the membership's lease
	// duration.
	HandoffTimeout time.Duration
	// ErrorHandler receives the errors of the resharding itself (claims
	// and handoffs that failed and are retried, moves a stuck handler held
	// up), from Run's goroutine, with no lock held. Default: logged.
	ErrorHandler func(error)
}

// Status is a sharded informer's state.
type Status struct {
	// Replica is what the metrics of package metrics/prometheus read: the
	// identity, whether the informer handles a range, the range, objects,
	// events, reshards and the last handoff gap.
	metrics.Replica
	// Synced is true while the informer holds the list of its current
	// range (its Informer.Shard.Synced while Active).
	Synced bool
	// EventsPerSecond is the rate of Events since the range started.
	EventsPerSecond float64
	// Informer is the status of the replica's informer (Shard says whether
	// the server filters or the client does).
	Informer typed.Status
}

// Range returns the range the replica handles while Active.
func (s Status) Range() Range { return Range{Start: s.RangeStart, End: s.RangeEnd} }

// Informer is an informer sharded across the replicas of a group: it
// follows its Membership and moves one typed.Informer to this replica's
// range whenever the range changes (typed.Informer.Move). Create it with
// NewInformer; run it with Run.
type Informer[T cache.Object] struct {
	inf  *typed.Informer[T]
	m    *Membership
	opts InformerOptions[T]

	mu     sync.Mutex
	state  runState
	status Status    // what follow keeps of it
	since  time.Time // the current range's start
	base   int       // the informer's events at since
	last   *Range    // the previous range, nil before the first
	lastAt time.Time // when it stopped
}

type runState uint8

const (
	notRunning runState = iota
	isRunning
	hasRun
)

// NewInformer returns an informer of src's objects sharded by m: it
// handles only the objects in this replica's range. Its Run runs m (do not
// run m yourself). It fails for a nil source or membership, a membership
// another sharded Informer has, an unknown key, and Informer options with
// a Shard or that typed.NewInformer refuses.
func NewInformer[T cache.Object](src source.Source[T], m *Membership, opts InformerOptions[T]) (*Informer[T], error) {
	if err := source.Check(src); err != nil {
		return nil, fmt.Errorf("sharding: %w", err)
	}
	if m == nil {
		return nil, fmt.Errorf("%w: nil membership", ErrBadOptions)
	}
	if !opts.Key.valid() {
		return nil, fmt.Errorf("%w: key %v", ErrBadOptions, opts.Key)
	}
	if opts.Informer.Shard != nil {
		return nil, fmt.Errorf("%w: Informer.Shard is set by the sharded informer", ErrBadOptions)
	}
	if opts.HandoffTimeout < 0 {
		return nil, fmt.Errorf("%w: HandoffTimeout %v", ErrBadOptions, opts.HandoffTimeout)
	}
	if opts.HandoffTimeout == 0 {
		opts.HandoffTimeout = m.LeaseDuration()
	}
	io := opts.Informer
	io.Shard = Shard{Key: opts.Key}
	inf, err := typed.NewInformer(src, io)
	if err != nil {
		return nil, fmt.Errorf("sharding: %w", err)
	}
	// No range until the membership gives one: the informer starts paused.
	if err := inf.Move(context.Background(), nil, nil); err != nil {
		return nil, fmt.Errorf("sharding: %w", err)
	}
	if !m.taken.CompareAndSwap(false, true) {
		return nil, fmt.Errorf("%w: membership %s of group %s is another sharded Informer's (its Lease holds one range)", ErrBadOptions, m.Identity(), m.opts.Group)
	}
	s := &Informer[T]{inf: inf, m: m, opts: opts}
	s.status.Identity = m.Identity()
	return s, nil
}

// AddHandler adds a handler to the replica's informer, before Run or
// while it runs (a handler added late first hears of every object held):
// typed.Informer.AddHandler. A handler hears of the objects of the
// replica's range; one that leaves the range at a reshard arrives as a
// handler.Deleted with MovedOut set.
func (s *Informer[T]) AddHandler(h handler.Handler[T]) (*typed.Registration, error) {
	return s.inf.AddHandler(h)
}

// Informer returns the replica's informer: the same one for the sharded
// informer's life, whose store and lister hold the range's objects. Add
// handlers with options, indexes and registrations through it; do not Run
// or Move it.
func (s *Informer[T]) Informer() *typed.Informer[T] { return s.inf }

// Membership returns the informer's membership.
func (s *Informer[T]) Membership() *Membership { return s.m }

// WaitForSync waits until the replica's informer has its first range's
// list and returns nil, or a *typed.NotSyncedError that says why not:
// typed.Informer.WaitForSync.
func (s *Informer[T]) WaitForSync(ctx context.Context) error { return s.inf.WaitForSync(ctx) }

// Status returns the informer's status.
func (s *Informer[T]) Status() Status {
	s.mu.Lock()
	st := s.status
	since, base := s.since, s.base
	s.mu.Unlock()
	st.Informer = s.inf.Status()
	st.Events = int64(st.Informer.Stats.Events)
	st.Objects = s.inf.Store().Len()
	st.Synced = st.Active && st.Informer.Shard.Synced
	if st.Active {
		if d := time.Since(since).Seconds(); d > 0 {
			st.EventsPerSecond = float64(st.Informer.Stats.Events-base) / d
		}
	}
	return st
}

// Replica returns the replica's part of the status, what the metrics of
// package metrics/prometheus read (prometheus.RegisterShard).
func (s *Informer[T]) Replica() metrics.Replica { return s.Status().Replica }

// report hands err to the error handler.
func (s *Informer[T]) report(ctx context.Context, err error) {
	if s.opts.ErrorHandler != nil {
		s.opts.ErrorHandler(err)
		return
	}
	klog.FromContext(ctx).Error(err, "sharded informer", "identity", s.m.Identity())
}

// Run runs the membership, the replica's informer and the resharding until
// ctx ends; it then stops the informer, records in its Lease that it holds
// nothing and stops the membership (which deletes its Lease unless told to
// keep it), in that order, and returns nil. It returns an error if the
// membership or the informer cannot go on, typed.ErrRunning while it runs
// and typed.ErrStopped after it ran.
func (s *Informer[T]) Run(ctx context.Context) error {
	s.mu.Lock()
	switch s.state {
	case isRunning:
		s.mu.Unlock()
		return typed.ErrRunning
	case hasRun:
		s.mu.Unlock()
		return typed.ErrStopped
	}
	s.state = isRunning
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.state = hasRun
		s.mu.Unlock()
	}()

	// The membership outlives the informer: the Lease says the replica
	// holds nothing only once its informer handles nothing.
	mctx, stopMembership := context.WithCancel(context.WithoutCancel(ctx))
	defer stopMembership()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := s.m.Run(mctx); err != nil {
			return fmt.Errorf("sharding: membership %s: %w", s.m.Identity(), err)
		}
		return nil
	})
	g.Go(func() error { return s.inf.Run(gctx) })
	g.Go(func() error {
		defer stopMembership()
		s.follow(gctx)
		<-s.inf.Stopped()
		s.mu.Lock()
		s.status.Active = false
		s.mu.Unlock()
		if !s.m.opts.KeepLeaseOnStop {
			cctx, cancel := context.WithTimeout(mctx, 5*time.Second)
			defer cancel()
			if err := s.m.Claim(cctx, nil); err != nil {
				s.report(ctx, err)
			}
		}
		return nil
	})
	return g.Wait()
}

// follow moves the informer to this replica's range each time the
// assignment changes, until ctx ends. A move is a handoff in two steps:
//
//  1. Shrink to what stays the replica's (the overlap of the old and the
//     new range): the informer drops every other object (a handler hears
//     it moved out) and lists nothing; the Lease then claims only that.
//  2. Claim the new range, wait until no other live replica claims a range
//     overlapping it, and move the informer to it: it lists the range, and
//     an object kept arrives as an update, a new one as an add.
//
// A claim only ever covers what the replica may still be handling, so of
// two replicas whose ranges overlap, at most one handles an object at a
// time.
func (s *Informer[T]) follow(ctx context.Context) {
	// cur: the range the informer lists; held: what it holds on to (cur,
	// or a part of it between two ranges); claimed: what the Lease says.
	var cur, held, claimed *Range
	for ctx.Err() == nil {
		changed := s.m.Changed()
		want, ok := s.m.Assignment().Range()
		switch {
		case held != nil && (!ok || !within(*held, want)) || cur != nil && want != *cur:
			var keep *Range
			if ok {
				keep = held.Intersect(want)
			}
			s.move(ctx, keep, nil)
			if cur != nil {
				s.mu.Lock()
				s.status.Active = false
				s.last, s.lastAt = cur, time.Now()
				s.mu.Unlock()
			}
			cur, held = nil, keep
			if err := s.claim(ctx, keep, &claimed); err != nil {
				s.report(ctx, err)
			}
			continue
		case cur == nil && ok:
			if !sameRange(claimed, &want) {
				if err := s.claim(ctx, &want, &claimed); err != nil {
					s.report(ctx, err)
					s.pause(ctx, changed)
					continue
				}
			}
			if _, blocked := s.m.Blocker(want); !blocked {
				r := want
				s.move(ctx, &r, &r)
				s.started(r)
				cur, held = &r, &r
				continue
			}
		case !ok && claimed != nil && held == nil:
			if err := s.claim(ctx, nil, &claimed); err != nil {
				s.report(ctx, err)
				s.pause(ctx, changed)
				continue
			}
		}
		select {
		case <-ctx.Done():
		case <-changed:
		}
	}
}

// move moves the informer, bounded by Options.HandoffTimeout.
func (s *Informer[T]) move(ctx context.Context, keep, next *Range) {
	mctx, cancel := context.WithTimeout(ctx, s.opts.HandoffTimeout)
	defer cancel()
	if err := s.inf.Move(mctx, s.kept(keep), s.shard(next)); err != nil && ctx.Err() == nil {
		s.report(ctx, fmt.Errorf("sharding: move to %v: %w", next, err))
	}
}

// shard is r's shard, nil for nil (a nil typed.Shard, not a nil Shard in
// one).
func (s *Informer[T]) shard(r *Range) typed.Shard {
	if r == nil {
		return nil
	}
	return Shard{Key: s.opts.Key, Range: *r}
}

// kept is what the informer holds on to of r (the keep of a Move): r's
// objects while the replica's Lease is its own by its clock, none after.
// The listeners ask before every delivery, so a replica that resumes
// after a pause longer than its Lease delivers nothing that was queued
// before it, even before its membership notices and it moves out.
func (s *Informer[T]) kept(r *Range) typed.Shard {
	if r == nil {
		return nil
	}
	return fenced{Shard: Shard{Key: s.opts.Key, Range: *r}, m: s.m}
}

// fenced is a Shard held on to only while the membership's Lease lasts.
type fenced struct {
	Shard
	m *Membership
}

// Contains reports whether obj is in the shard and the Lease unexpired.
func (f fenced) Contains(obj metav1.Object) bool {
	return f.m.leased(time.Now()) && f.Shard.Contains(obj)
}

// claim records r in the Lease, and in *claimed once written.
func (s *Informer[T]) claim(ctx context.Context, r *Range, claimed **Range) error {
	if err := s.m.Claim(ctx, r); err != nil {
		return err
	}
	*claimed = r
	return nil
}

// pause waits a second, or until the assignment changes or ctx ends,
// before a claim is tried again.
func (s *Informer[T]) pause(ctx context.Context, changed <-chan struct{}) {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-changed:
	case <-t.C:
	}
}

// started records that the informer now handles r.
func (s *Informer[T]) started(r Range) {
	now := time.Now()
	events := s.inf.Status().Stats.Events
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.status
	if s.last != nil {
		st.Reshards++
	}
	st.LastReshard = now
	st.RangeStart, st.RangeEnd, st.Active = r.Start, r.End, true
	st.HandoffGap, st.HandoffGapKnown = 0, false
	if s.last == nil || !within(r, *s.last) {
		// Something was gained: from whoever gave it up last, since
		// (about) when this replica noticed the change.
		since := now
		if !s.lastAt.IsZero() {
			since = s.lastAt
		}
		if at, ok := s.m.LastRelease(r, since.Add(-s.m.LeaseDuration())); ok {
			st.HandoffGap, st.HandoffGapKnown = now.Sub(at), true
		}
	}
	s.since, s.base = now, events
}

func sameRange(a, b *Range) bool { return a != nil && b != nil && *a == *b }

// within reports whether r lies inside o.
func within(r, o Range) bool {
	return r.Start >= o.Start && (o.End == 0 || (r.End != 0 && r.End <= o.End))
}
