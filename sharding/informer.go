package sharding

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// Errors of the sharded Informer.
var (
	// ErrStarted is returned by AddHandler once Run has started.
	ErrStarted = errors.New("sharding: informer already started")
	// ErrHandlerPanic wraps the value of a recovered handler panic.
	ErrHandlerPanic = errors.New("sharding: handler panicked")
)

// InformerOptions configure NewInformer. The zero value shards by UID with
// the default informer options.
type InformerOptions[T cache.Object] struct {
	// Key is the hashed field. Default ByUID.
	Key Key
	// Informer are the options of the informer of each range; its Shard
	// is set by the sharded informer and must be nil, and its Name
	// (default: the resource) is followed by the range.
	Informer typed.Options[T]
	// ErrorHandler receives handler panics and handoff errors. Default:
	// logged.
	ErrorHandler func(error)
}

// Status is a sharded informer's state.
type Status struct {
	// Identity is the replica's identity in its group.
	Identity string
	// Range is the range the replica handles while Active.
	Range Range
	// Active is true while an informer runs on Range.
	Active bool
	// Synced is true once the range's informer has its first list. The
	// handlers may hold a new range's objects before (the informer of the
	// old range hands them over), but only from then on does
	// Informer.Shard say whether the server applies the shard selector.
	Synced bool
	// Objects is the number of objects the handlers hold.
	Objects int
	// Events counts the changes delivered to the handlers besides initial
	// lists, and EventsPerSecond is their rate since the range started.
	Events          int64
	EventsPerSecond float64
	// Reshards counts the ranges started after the first; LastReshard is
	// when the last one started.
	Reshards    int
	LastReshard time.Time
	// HandoffGap is how long the last range started after another
	// replica gave up (part of) it (its release, or its Lease's expiry);
	// HandoffGapKnown is false when no such release was seen.
	HandoffGap      time.Duration
	HandoffGapKnown bool
	// Informer is the status of the range's informer (Shard says whether
	// the server filters or the client does).
	Informer typed.Status
}

// Informer is an informer sharded across the replicas of a group: it
// follows its Membership and runs one typed.Informer on this replica's
// range at a time, resharding when the range changes. Create it with
// NewInformer; run it with Run.
type Informer[T cache.Object] struct {
	src  source.Source[T]
	m    *Membership
	opts InformerOptions[T]

	started atomic.Bool
	synced  chan struct{}
	once    sync.Once
	events  atomic.Int64
	objects atomic.Int64 // len(known), for Status without the lock

	// mu serialises handler calls and guards what they were told.
	mu       sync.Mutex
	handlers []Handler[T]
	known    map[cache.Key]T
	pending  map[cache.Key]struct{} // known keys a reshard's relist has not brought yet
	first    bool                   // the first range's initial list is being delivered

	stMu   sync.Mutex
	cur    *typed.Informer[T]
	status Status
	since  time.Time // the current range's start
	base   int64     // events at since
	last   *Range    // the previous range, nil before the first
	lastAt time.Time // when it stopped
}

// NewInformer returns an informer of src's objects sharded by m: it
// handles only the objects in this replica's range. Its Run runs m (do not
// run m yourself). It fails for a nil source or membership, an unknown key,
// and Informer options with a Shard or that typed.NewInformer refuses.
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
	// Validate the options once, on the whole space.
	probe := opts.Informer
	probe.Shard = Shard{Key: opts.Key}
	if _, err := typed.NewInformer(src, probe); err != nil {
		return nil, fmt.Errorf("sharding: %w", err)
	}
	return &Informer[T]{
		src: src, m: m, opts: opts,
		synced: make(chan struct{}),
		known:  map[cache.Key]T{}, pending: map[cache.Key]struct{}{}, first: true,
		status: Status{Identity: m.Identity()},
	}, nil
}

// AddHandler adds a handler before Run; it returns ErrStarted after.
func (s *Informer[T]) AddHandler(h Handler[T]) error {
	if h == nil {
		return fmt.Errorf("%w: nil handler", ErrBadOptions)
	}
	if s.started.Load() {
		return ErrStarted // also from a handler, which runs under s.mu
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started.Load() {
		return ErrStarted
	}
	s.handlers = append(s.handlers, h)
	return nil
}

// Current returns the informer of the current range, nil between two.
// Its lister and store hold the range's objects; it changes at reshards.
func (s *Informer[T]) Current() *typed.Informer[T] {
	s.stMu.Lock()
	defer s.stMu.Unlock()
	return s.cur
}

// Membership returns the informer's membership.
func (s *Informer[T]) Membership() *Membership { return s.m }

// WaitForSync waits until the first range's initial list reached the
// handlers, and returns nil, or ctx's error.
func (s *Informer[T]) WaitForSync(ctx context.Context) error {
	select {
	case <-s.synced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sharding: wait for sync: %w", ctx.Err())
	}
}

// Status returns the informer's status.
func (s *Informer[T]) Status() Status {
	s.stMu.Lock()
	st := s.status
	cur := s.cur
	since, base := s.since, s.base
	s.stMu.Unlock()
	st.Events = s.events.Load()
	if cur != nil {
		st.Informer = cur.Status()
		st.Synced = cur.HasSynced()
		if d := time.Since(since).Seconds(); d > 0 {
			st.EventsPerSecond = float64(st.Events-base) / d
		}
	}
	st.Objects = int(s.objects.Load())
	return st
}

// call runs a handler call, recovering a panic.
func (s *Informer[T]) call(f func()) {
	defer func() {
		if v := recover(); v != nil {
			s.report(fmt.Errorf("%w: %v\n%s", ErrHandlerPanic, v, debug.Stack()))
		}
	}()
	f()
}

// report hands err to the error handler.
func (s *Informer[T]) report(err error) {
	if s.opts.ErrorHandler != nil {
		s.opts.ErrorHandler(err)
		return
	}
	klog.Background().Error(err, "sharded informer", "identity", s.m.Identity())
}

// running is the informer of one range.
type running[T cache.Object] struct {
	inf    *typed.Informer[T]
	r      Range
	cancel context.CancelFunc
	done   chan struct{} // Run and the sync watcher returned
}

// Run runs the membership and the informer of this replica's range until
// ctx ends, then stops the range's informer, releases the range and stops
// the membership (which deletes its Lease unless told to keep it), in that
// order, and returns nil. It returns ErrStarted if it ran before.
func (s *Informer[T]) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.started.Swap(true) {
		s.mu.Unlock()
		return ErrStarted
	}
	s.mu.Unlock()
	mctx, mstop := context.WithCancel(context.WithoutCancel(ctx))
	mdone := make(chan error, 1)
	go func() { mdone <- s.m.Run(mctx) }()
	var cur *running[T]
	defer func() {
		if cur != nil {
			s.stop(cur, nil, false)
		}
		if !s.m.opts.KeepLeaseOnStop {
			cctx, cancel := context.WithTimeout(mctx, 5*time.Second)
			_ = s.m.Claim(cctx, nil)
			cancel()
		}
		mstop()
		<-mdone
	}()
	for ctx.Err() == nil {
		changed := s.m.Changed()
		want, ok := s.m.Assignment().Range()
		if cur != nil && (!ok || want != cur.r) {
			var next *Range
			if ok {
				next = &want
			}
			s.stop(cur, next, true)
			cur = nil
			if err := s.m.Claim(ctx, nil); err != nil && ctx.Err() == nil {
				s.report(err)
			}
			continue
		}
		if cur == nil && ok {
			started, err := s.handoff(ctx, want)
			if err != nil {
				if ctx.Err() == nil {
					s.report(err)
				}
			}
			if started != nil {
				cur = started
			}
			if err == nil && started == nil {
				continue // the assignment changed while waiting
			}
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
				continue
			}
		}
		var done chan struct{}
		if cur != nil {
			done = cur.done
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case <-done:
			// The range's informer stopped by itself (a fatal source
			// error): start over on the range after a pause.
			s.report(fmt.Errorf("sharding: informer of %v stopped", cur.r))
			s.stop(cur, &cur.r, true)
			cur = nil
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		case err := <-mdone:
			mdone <- err
			return err
		}
	}
	return nil
}

// handoff claims r, waits until no other live replica holds a range
// overlapping it, and starts the informer of r. It returns nil and no error
// if the assignment changed meanwhile (the claim is then withdrawn by the
// caller's next round).
func (s *Informer[T]) handoff(ctx context.Context, r Range) (*running[T], error) {
	if err := s.m.Claim(ctx, &r); err != nil {
		return nil, err
	}
	for {
		changed := s.m.Changed()
		if want, ok := s.m.Assignment().Range(); !ok || want != r {
			if err := s.m.Claim(ctx, nil); err != nil {
				return nil, err
			}
			return nil, nil
		}
		if _, blocked := s.m.Blocker(r); !blocked {
			break
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-changed:
		}
	}
	return s.start(ctx, r)
}

// start runs the informer of r.
func (s *Informer[T]) start(ctx context.Context, r Range) (*running[T], error) {
	opts := s.opts.Informer
	opts.Shard = Shard{Key: s.opts.Key, Range: r}
	if opts.Name == "" {
		opts.Name = source.ResourceOf(s.src).String()
	}
	opts.Name += " " + r.String()
	inf, err := typed.NewInformer(s.src, opts)
	if err != nil {
		return nil, fmt.Errorf("sharding: informer of %v: %w", r, err)
	}
	reg, err := inf.AddHandler(relay[T]{s: s})
	if err != nil {
		return nil, fmt.Errorf("sharding: informer of %v: %w", r, err)
	}
	s.mu.Lock()
	for k := range s.known {
		s.pending[k] = struct{}{}
	}
	s.mu.Unlock()
	now := time.Now()
	s.stMu.Lock()
	first := s.status.LastReshard.IsZero() && s.cur == nil && s.since.IsZero()
	if !first {
		s.status.Reshards++
	}
	s.status.LastReshard = now
	s.status.Range, s.status.Active = r, true
	s.status.HandoffGap, s.status.HandoffGapKnown = 0, false
	if s.last == nil || !within(r, *s.last) {
		// Something was gained: from whoever gave it up last, since
		// (about) when this replica noticed the change.
		since := now
		if !s.lastAt.IsZero() {
			since = s.lastAt
		}
		if at, ok := s.m.LastRelease(r, since.Add(-s.m.LeaseDuration())); ok {
			s.status.HandoffGap, s.status.HandoffGapKnown = now.Sub(at), true
		}
	}
	s.cur, s.since, s.base = inf, now, s.events.Load()
	s.stMu.Unlock()

	ictx, cancel := context.WithCancel(ctx)
	run := &running[T]{inf: inf, r: r, cancel: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer cancel() // a Run that ends by itself ends the sync watcher too
		if err := inf.Run(ictx); err != nil {
			s.report(fmt.Errorf("sharding: informer of %v: %w", r, err))
		}
	}()
	go func() {
		defer wg.Done()
		if reg.WaitForSync(ictx) != nil {
			return
		}
		s.relisted()
		s.once.Do(func() { close(s.synced) })
	}()
	go func() { wg.Wait(); close(run.done) }()
	return run, nil
}

// stop stops the informer of a range and, if tell, tells the handlers
// that the objects they hold outside next (every object for nil) moved
// out; at shutdown they are not told.
func (s *Informer[T]) stop(run *running[T], next *Range, tell bool) {
	run.cancel()
	<-run.done
	s.stMu.Lock()
	s.cur = nil
	s.status.Active = false
	s.last, s.lastAt = &run.r, time.Now()
	s.stMu.Unlock()
	sh := Shard{Key: s.opts.Key}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { s.objects.Store(int64(len(s.known))) }()
	clear(s.pending)
	for k, obj := range s.known {
		if next != nil {
			sh.Range = *next
			if sh.Contains(obj) {
				continue
			}
		}
		delete(s.known, k)
		if tell {
			s.deliverDelete(Deleted[T]{Deleted: handler.Deleted[T]{Object: obj, Key: k}, MovedOut: true})
		}
	}
}

// within reports whether r lies inside o.
func within(r, o Range) bool {
	return r.Start >= o.Start && (o.End == 0 || (r.End != 0 && r.End <= o.End))
}

// relisted is called once a range's relist reached the handlers: the
// objects they had in the range that it did not bring were deleted
// meanwhile.
func (s *Informer[T]) relisted() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.pending {
		if old, ok := s.known[k]; ok {
			delete(s.known, k)
			s.events.Add(1)
			s.deliverDelete(Deleted[T]{Deleted: handler.Deleted[T]{Object: old, Key: k, FinalStateUnknown: true}})
		}
	}
	clear(s.pending)
	s.first = false
	s.counted()
}
