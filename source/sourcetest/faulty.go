package sourcetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// DefaultMaxDelay is the bound of the random plan's delays and stalls when
// FaultOptions.MaxDelay is 0.
const DefaultMaxDelay = 2 * time.Second

// FaultOptions configure NewFaulty. The zero value injects nothing: the
// wrapper passes every call through and only counts.
type FaultOptions struct {
	// Seed seeds the random plan. The plan is a function of the seed
	// alone: whether the n-th call of each Op gets a fault, which, and how
	// long it lasts; so one seed replays the same plan. Default 0.
	Seed uint64
	// ListRate, WatchRate and NextRate are the probabilities that a List,
	// a Watch or a Next call gets a random fault (one of Kinds that can
	// happen there). Default 0: no random faults. A Next call is one
	// event, so NextRate is usually much smaller than the others.
	ListRate, WatchRate, NextRate float64
	// Kinds are the faults the random plan draws from. Default: AllFaults.
	Kinds []FaultKind
	// MaxDelay bounds the random plan's delays and stalls. Default:
	// DefaultMaxDelay.
	MaxDelay time.Duration
	// Script lists faults at given calls, besides the random plan (a
	// scripted fault wins over a random one at the same call). A scripted
	// fault that cannot happen at its call when it comes (410 Gone for a
	// list's first page) is skipped and not recorded.
	Script []Fault
}

// Faulty wraps a source.Source and injects faults into its calls, under a
// seeded random plan or a script (FaultOptions), in the forms a real API
// server and connection produce them: see FaultKind. It works in front
// of any source, the module's adapters of a real server included, and
// keeps what the invariant checks of docs/reliability.md need: a log of every
// fault with its position (Log), the plan to replay it (Plan), and
// request counts (Requests). It implements source.Source, with the
// wrapped source's Info. It is safe for concurrent use.
type Faulty[T cache.Object] struct {
	src  source.Source[T]
	opts FaultOptions
	// kinds are Kinds by Op.
	kinds  map[Op][]FaultKind
	script map[Op]map[int]Fault
	healed chan struct{}
	heal   sync.Once

	mu       sync.Mutex
	calls    map[Op]int
	log      []FaultRecord
	reqs     Requests
	lastRV   string
	armGone  bool   // a FaultDrop lost an event: the next watch from a version gets 410
	lastBad  string // kind and version of the last bad-content fault
	watchers int
}

// Requests counts what a Faulty source was asked and answered: with the
// fault log, what docs/reliability.md's I8 (bounded load) is checked from.
type Requests struct {
	// Lists and Watches count List and Watch calls (pages count one each,
	// streaming lists are Watches); StreamingLists counts the Watches with
	// SendInitialEvents.
	Lists, Watches, StreamingLists int
	// CompletedLists counts the lists handed out whole: last pages, and
	// streaming lists up to their end bookmark.
	CompletedLists int
	// Events counts the events handed out, bookmarks included.
	Events int
	// Expired and TooLarge count the 410 Gone and too-large errors handed
	// out, injected or the wrapped source's own: each may cost a client
	// one relist.
	Expired, TooLarge int
	// RepeatedBadContent counts bad-content faults that repeated the one
	// before at the same resourceVersion: a client cannot tell them from
	// a server replaying a bad object, and may relist on each.
	RepeatedBadContent int
	// Faults counts the faults injected.
	Faults int
}

// RelistBound is the most lists a client should have completed: one, plus
// one per error that forces a relist.
func (r Requests) RelistBound() int { return 1 + r.Expired + r.TooLarge + r.RepeatedBadContent }

// NewFaulty wraps src. It fails for a nil src, a rate outside [0, 1], an
// unknown kind, and a scripted fault of a kind that cannot happen at its
// Op or with At below 1.
func NewFaulty[T cache.Object](src source.Source[T], opts FaultOptions) (*Faulty[T], error) {
	if err := source.Check(src); err != nil {
		return nil, fmt.Errorf("sourcetest: NewFaulty: %w", err)
	}
	for _, r := range []float64{opts.ListRate, opts.WatchRate, opts.NextRate} {
		if !(r >= 0 && r <= 1) {
			return nil, fmt.Errorf("%w: rate %v is not in [0, 1]", ErrBadFaultOptions, r)
		}
	}
	if opts.MaxDelay < 0 {
		return nil, fmt.Errorf("%w: negative MaxDelay %v", ErrBadFaultOptions, opts.MaxDelay)
	}
	if opts.MaxDelay == 0 {
		opts.MaxDelay = DefaultMaxDelay
	}
	if len(opts.Kinds) == 0 {
		opts.Kinds = AllFaults
	}
	opts.Kinds, opts.Script = slices.Clone(opts.Kinds), slices.Clone(opts.Script)
	f := &Faulty[T]{
		src: src, opts: opts,
		kinds:  map[Op][]FaultKind{},
		script: map[Op]map[int]Fault{},
		healed: make(chan struct{}),
		calls:  map[Op]int{},
	}
	for _, k := range opts.Kinds {
		if _, ok := faultNames[k]; !ok {
			return nil, fmt.Errorf("%w: unknown fault kind %v", ErrBadFaultOptions, k)
		}
		for _, op := range []Op{OpList, OpWatch, OpNext} {
			if validAt(k, op) {
				f.kinds[op] = append(f.kinds[op], k)
			}
		}
	}
	for _, s := range opts.Script {
		if !validAt(s.Kind, s.Op) || s.At < 1 || s.For < 0 {
			return nil, fmt.Errorf("%w: scripted fault %v cannot happen", ErrBadFaultOptions, s)
		}
		if f.script[s.Op] == nil {
			f.script[s.Op] = map[int]Fault{}
		}
		f.script[s.Op][s.At] = s
	}
	return f, nil
}

// Info is the wrapped source's.
func (f *Faulty[T]) Info() source.Info { return f.src.Info() }

// Heal ends the faults: no call gets one from now on, and stalls and
// delays in progress end (a stall by ending its stream). Tests heal the
// source before they wait for convergence. Safe to call more than once.
func (f *Faulty[T]) Heal() { f.heal.Do(func() { close(f.healed) }) }

// Healed reports whether Heal was called.
func (f *Faulty[T]) Healed() bool {
	select {
	case <-f.healed:
		return true
	default:
		return false
	}
}

// Log returns a copy of the faults injected so far, in order.
func (f *Faulty[T]) Log() []FaultRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

// Requests returns the request counts so far.
func (f *Faulty[T]) Requests() Requests {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reqs
}

// Plan describes the options, so that a failure can be replayed: the seed
// and rates go back into FaultOptions as they are printed.
func (f *Faulty[T]) Plan() string {
	o := f.opts
	return fmt.Sprintf("fault plan: Seed %d, ListRate %g, WatchRate %g, NextRate %g, Kinds %v, MaxDelay %v, Script %v",
		o.Seed, o.ListRate, o.WatchRate, o.NextRate, o.Kinds, o.MaxDelay, o.Script)
}

// rate is the random plan's rate at op.
func (f *Faulty[T]) rate(op Op) float64 {
	switch op {
	case OpList:
		return f.opts.ListRate
	case OpWatch:
		return f.opts.WatchRate
	}
	return f.opts.NextRate
}

// decision is what happens at one call: a fault (Kind 0 for none) and a
// number that picks among its forms.
type decision struct {
	Fault
	scripted bool
	form     int
}

// decideLocked numbers a call of op and decides its fault: the script's,
// else the random plan's, drawn from a generator seeded by the seed, op
// and the call's number, so the plan does not depend on timing.
func (f *Faulty[T]) decideLocked(op Op) decision {
	f.calls[op]++
	n := f.calls[op]
	rng := rand.New(rand.NewPCG(f.opts.Seed, uint64(op)<<56|uint64(n)))
	p, pick, form := rng.Float64(), rng.IntN(1<<30), rng.IntN(1<<30)
	d := rng.Int64N(int64(f.opts.MaxDelay)) + 1
	if f.Healed() {
		return decision{}
	}
	if s, ok := f.script[op][n]; ok {
		return decision{Fault: s, scripted: true, form: form}
	}
	kinds := f.kinds[op]
	if len(kinds) == 0 || p >= f.rate(op) {
		return decision{}
	}
	k := kinds[pick%len(kinds)]
	fault := Fault{Kind: k, Op: op, At: n}
	if k == FaultDelay || k == FaultStall {
		fault.For = time.Duration(d)
	}
	return decision{Fault: fault, form: form}
}

// recordLocked logs fault d, which handed out err (if any).
func (f *Faulty[T]) recordLocked(d decision, watch, event int, form string, streaming bool, err error) {
	f.reqs.Faults++
	f.log = append(f.log, FaultRecord{
		Fault: d.Fault, Seq: len(f.log) + 1, Watch: watch, Event: event,
		ResourceVersion: f.lastRV, Scripted: d.scripted, Form: form, StreamingList: streaming, Err: err,
	})
}

// countErrLocked counts the relist-forcing errors handed out.
func (f *Faulty[T]) countErrLocked(err error) {
	switch {
	case err == nil:
	case isExpired(err):
		f.reqs.Expired++
	case isTooLarge(err):
		f.reqs.TooLarge++
	}
}

// badContentLocked notes a bad-content fault and counts it if it repeats
// the previous one at the same version.
func (f *Faulty[T]) badContentLocked(k FaultKind) {
	sig := k.String() + "\x00" + f.lastRV
	if sig == f.lastBad {
		f.reqs.RepeatedBadContent++
	}
	f.lastBad = sig
}

// wait blocks for d, or until ctx ends, stop is closed or the faults are
// healed; it returns ctx's error if ctx ended.
func (f *Faulty[T]) wait(ctx context.Context, d time.Duration, stop <-chan struct{}) error {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-stop:
	case <-f.healed:
	case <-timeout:
	}
	return nil
}

// List lists through the wrapped source, unless the plan has a fault for
// this call.
func (f *Faulty[T]) List(ctx context.Context, opts metav1.ListOptions) (source.List[T], error) {
	f.mu.Lock()
	f.reqs.Lists++
	d := f.decideLocked(OpList)
	f.armGone = false
	versioned := opts.ResourceVersion != "" && opts.ResourceVersion != "0"
	var err error
	var form string
	switch d.Kind {
	case 0:
	case FaultGone:
		if opts.Continue == "" && (!versioned || opts.ResourceVersionMatch != metav1.ResourceVersionMatchExact) {
			d.Kind = 0 // only a continue token or an exact version can expire
			break
		}
		form, err = apiError(d.Kind, d.form, source.ResourceOf[T](f).GroupResource, opts.Continue != "", opts.ResourceVersion)
	case FaultTooLarge:
		if !versioned {
			d.Kind = 0
			break
		}
		form, err = apiError(d.Kind, d.form, source.ResourceOf[T](f).GroupResource, false, opts.ResourceVersion)
	case FaultWrongType, FaultNilObject, FaultMalformed:
		err = contentError[T](d.Kind, source.PhaseList)
	case FaultDelay:
	default:
		form, err = apiError(d.Kind, d.form, source.ResourceOf[T](f).GroupResource, false, opts.ResourceVersion)
	}
	if err != nil {
		if _, ok := err.(*source.Error); !ok {
			err = &source.Error{Phase: source.PhaseList, Err: err}
		}
		f.countErrLocked(err)
	}
	if d.Kind != 0 {
		f.recordLocked(d, 0, 0, form, false, err)
	}
	f.mu.Unlock()
	if err != nil {
		return source.List[T]{}, err
	}
	if d.Kind == FaultDelay {
		if err := f.wait(ctx, d.For, nil); err != nil {
			return source.List[T]{}, &source.Error{Phase: source.PhaseList, Err: err}
		}
	}
	l, err := f.src.List(ctx, opts)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.countErrLocked(err)
	if err == nil && l.Continue == "" {
		f.reqs.CompletedLists++
		if l.ResourceVersion != "" {
			f.lastRV = l.ResourceVersion
		}
	}
	return l, err
}
