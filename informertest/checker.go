package informertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// Errors of the package.
var (
	// ErrNilTruth is returned by NewChecker without a source to list the
	// truth from.
	ErrNilTruth = errors.New("informertest: nil truth source")
	// ErrDiverged is wrapped by the *Divergence that Converge returns.
	ErrDiverged = errors.New("informertest: invariants violated")
)

// DefaultPollInterval is how often Converge compares when
// Options.PollInterval is 0.
const DefaultPollInterval = 20 * time.Millisecond

// Options configure NewChecker. The zero value checks I1-I4, I6 and I7,
// listing the whole truth source.
type Options[T cache.Object] struct {
	// Faults is the fault-injecting source in front of the informer, if
	// any: a failure prints its plan and fault log to replay it, I6
	// checks that each error it injected reached the informer's
	// ErrorHandler, and I8 checks its request counts. Default: nil.
	Faults *sourcetest.Faulty[T]
	// List are the options of the truth's LIST: the informer's label and
	// field selectors. Default: everything.
	List metav1.ListOptions
	// PollInterval is how often Converge compares the informer with the
	// truth. Default: DefaultPollInterval.
	PollInterval time.Duration
}

// Checker checks an informer and the handlers it gives out against the
// invariants of docs/reliability.md, with the truth listed from a source:
// the fake the informer's source wraps, or a real server. Use one per
// informer. All methods are safe for concurrent use.
type Checker[T cache.Object] struct {
	truth source.Source[T]
	opts  Options[T]

	mu       sync.Mutex
	recs     []*Recorder[T]
	infs     []*typed.Informer[T]
	errs     []error
	lastRV   string
	rvIssues []string
}

// NewChecker returns a checker whose truth is what truth lists. It fails
// for a nil truth.
func NewChecker[T cache.Object](truth source.Source[T], opts Options[T]) (*Checker[T], error) {
	if err := source.Check(truth); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNilTruth, err)
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	return &Checker[T]{truth: truth, opts: opts}, nil
}

// Handler returns a new handler that records every call it gets and
// checks each against the ones before: I3 (per key, resourceVersions
// never decrease), I4 (no Add for a key it has, no Update or Delete for
// one it does not), an Update's old object being the one last
// delivered, and I7 (no object it was given changes afterwards).
// Converge checks what it ends with (I2).
func (c *Checker[T]) Handler() handler.Handler[T] {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := NewRecorder[T](RecorderOptions{Name: fmt.Sprintf("handler %d", len(c.recs)), CheckMutations: true})
	r.onCall = c.sample
	c.recs = append(c.recs, r)
	return r
}

// AddHandler adds a new Handler to inf with opts and watches inf: on every
// call of the handler, and while Converge polls, it checks that inf's
// last synced resourceVersion never decreases (I3).
func (c *Checker[T]) AddHandler(inf *typed.Informer[T], opts typed.HandlerOptions) (*typed.Registration, error) {
	c.mu.Lock()
	if !slices.Contains(c.infs, inf) {
		c.infs = append(c.infs, inf)
	}
	c.mu.Unlock()
	return inf.AddHandlerWithOptions(c.Handler(), opts)
}

// ErrorHandler records err: set it as the informer's
// typed.Options.ErrorHandler, so that I6 can check that every error the
// faults injected reached it.
func (c *Checker[T]) ErrorHandler(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, err)
}

// Errors returns the errors ErrorHandler got.
func (c *Checker[T]) Errors() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.errs)
}

// Counts returns how many calls of each kind the handlers got, summed.
func (c *Checker[T]) Counts() Counts {
	c.mu.Lock()
	recs := slices.Clone(c.recs)
	c.mu.Unlock()
	var total Counts
	for _, r := range recs {
		total.add(r.Counts())
	}
	return total
}

// sample checks that the watched informers' last synced resourceVersion
// has not gone back (I3).
func (c *Checker[T]) sample() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, inf := range c.infs {
		rv := inf.LastSyncResourceVersion()
		if rv == "" {
			continue
		}
		if c.lastRV != "" {
			if cmp, err := resourceversion.CompareResourceVersion(rv, c.lastRV); err == nil && cmp < 0 && len(c.rvIssues) < maxViolations {
				c.rvIssues = append(c.rvIssues, fmt.Sprintf("I3 informer: last synced RV %s after %s", rv, c.lastRV))
			}
		}
		c.lastRV = rv
	}
}

// Divergence is the error Converge returns: what broke, and what replays
// it.
type Divergence struct {
	// Violations are the broken invariants, each starting with its name
	// (I1...I8), with a cmp.Diff (-want +got) where states differ.
	Violations []string
	// Plan is the fault plan (sourcetest.Faulty.Plan), if a faulty source
	// was given: with its seed, the same faults happen again.
	Plan string
	// Faults are the faults that happened.
	Faults []sourcetest.FaultRecord
}

// maxFaultLines bounds the faults Error prints.
const maxFaultLines = 40

// Error lists the violations, then the plan and the faults.
func (d *Divergence) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %d violations", ErrDiverged, len(d.Violations))
	for _, v := range d.Violations {
		b.WriteString("\n  " + strings.ReplaceAll(v, "\n", "\n    "))
	}
	if d.Plan != "" {
		fmt.Fprintf(&b, "\nreplay with %s", d.Plan)
	}
	for i, f := range d.Faults {
		if i == maxFaultLines {
			fmt.Fprintf(&b, "\n  ... and %d more faults", len(d.Faults)-i)
			break
		}
		b.WriteString("\n  " + f.String())
	}
	return b.String()
}

// Unwrap returns ErrDiverged.
func (d *Divergence) Unwrap() error { return ErrDiverged }

// Converge waits, until ctx ends, for inf and every handler of the checker
// to match the truth, then checks the invariants and returns nil, or a
// *Divergence saying which broke, with the plan that replays them. Call it
// once the faults are healed and the changes have stopped:
//
//   - I1: inf's cache holds what the truth lists (key, RV, UID);
//   - I2: each handler's calls, replayed, give the same;
//   - I3, I4: no handler saw a key's RV go back, a second Add, an Update
//     or Delete of a key it did not have; inf's last synced RV never
//     went back (for handlers added with AddHandler);
//   - I6: inf has synced and reports no error; every error the faults
//     injected reached the ErrorHandler (except 403 and 410 or
//     too-large answers, which the informer recovers from without
//     reporting where it can: a streaming list that falls back to LIST,
//     a relist);
//   - I7: no object a handler was given has changed since;
//   - I8: the informer completed no more lists than one plus one per
//     error that forces a relist (with Options.Faults).
func (c *Checker[T]) Converge(ctx context.Context, inf *typed.Informer[T]) error {
	var want State
	var lastErr error
	quiet := func() bool {
		c.sample()
		w, err := c.list(ctx)
		if err != nil {
			lastErr = err
			return false
		}
		want = w
		if !inf.HasSynced() || inf.Status().LastError != nil {
			return false
		}
		if !maps.Equal(want, StateOf(inf.Store().List())) {
			return false
		}
		for _, r := range c.recorders() {
			if !maps.Equal(want, r.Replay()) {
				return false
			}
		}
		return len(c.unreported()) == 0
	}
	t := time.NewTicker(c.opts.PollInterval)
	defer t.Stop()
	for !quiet() {
		select {
		case <-ctx.Done():
			if want == nil {
				return fmt.Errorf("informertest: cannot list the truth: %w", errors.Join(lastErr, ctx.Err()))
			}
			return c.divergence(want, inf, ctx.Err())
		case <-t.C:
		}
	}
	return c.divergence(want, inf, nil)
}

func (c *Checker[T]) recorders() []*Recorder[T] {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.recs)
}

// list lists the truth, every page.
func (c *Checker[T]) list(ctx context.Context) (State, error) {
	opts := c.opts.List
	s := State{}
	for {
		l, err := c.truth.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, o := range l.Items {
			s[cache.KeyOf(o)] = stateOf(o)
		}
		if l.Continue == "" {
			return s, nil
		}
		opts = metav1.ListOptions{Limit: opts.Limit, Continue: l.Continue}
	}
}

// unreported describes the injected errors that did not reach
// ErrorHandler: each one handed out as an error, found by errors.Is; and
// the events with a nil object or of an unknown type, which the informer
// must tell itself, counted against the reported errors wrapping
// source.ErrMalformed.
func (c *Checker[T]) unreported() []string {
	if c.opts.Faults == nil {
		return nil
	}
	errs := c.Errors()
	log := c.opts.Faults.Log()
	var out []string
	bad := 0
	for _, f := range log {
		if f.Err == nil && (f.Kind == sourcetest.FaultNilObject || f.Kind == sourcetest.FaultMalformed) && f.Op == sourcetest.OpNext {
			bad++
		}
		if f.Err == nil || exempt(f) {
			continue
		}
		if !slices.ContainsFunc(errs, func(err error) bool { return errors.Is(err, f.Err) }) {
			out = append(out, fmt.Sprintf("%v: %v", f, f.Err))
		}
	}
	// The informer's own errors about malformed events: those wrapping
	// ErrMalformed that are not one the faults handed out.
	own := 0
	for _, err := range errs {
		if errors.Is(err, source.ErrMalformed) && !slices.ContainsFunc(log, func(f sourcetest.FaultRecord) bool { return f.Err != nil && errors.Is(err, f.Err) }) {
			own++
		}
	}
	if own < bad {
		out = append(out, fmt.Sprintf("%d events with a nil object or of an unknown type, %d reported errors about malformed events", bad, own))
	}
	return out
}

// exempt reports the injected errors an informer need not report: it
// recovers from them by design without an error to show.
func exempt(f sourcetest.FaultRecord) bool {
	return apierrors.IsResourceExpired(f.Err) || apierrors.IsGone(f.Err) || apierrors.IsTimeout(f.Err) ||
		(f.StreamingList && apierrors.IsForbidden(f.Err))
}

// divergence checks every invariant and returns a *Divergence if one
// broke; waitErr, if set, is why Converge stopped waiting.
func (c *Checker[T]) divergence(want State, inf *typed.Informer[T], waitErr error) error {
	var v []string
	if got := StateOf(inf.Store().List()); !maps.Equal(want, got) {
		v = append(v, "I1: the cache differs from the truth (-want +got):\n"+truncate(cmp.Diff(want, got)))
	}
	for _, r := range c.recorders() {
		if got := r.Replay(); !maps.Equal(want, got) {
			v = append(v, fmt.Sprintf("I2 %s: its calls replayed differ from the truth (-want +got):\n%s", r.opts.Name, truncate(cmp.Diff(want, got))))
		}
		v = append(v, r.final()...)
	}
	c.mu.Lock()
	v = append(v, c.rvIssues...)
	c.mu.Unlock()
	if !inf.HasSynced() {
		v = append(v, "I6: the informer has not synced")
	}
	if err := inf.Status().LastError; err != nil {
		v = append(v, fmt.Sprintf("I6: the informer still reports an error: %v", err))
	}
	for _, u := range c.unreported() {
		v = append(v, "I6: injected error did not reach the ErrorHandler: "+u)
	}
	var d Divergence
	if c.opts.Faults != nil {
		r := c.opts.Faults.Requests()
		if r.CompletedLists > r.RelistBound() {
			v = append(v, fmt.Sprintf("I8: %d lists completed, want at most %d (1 + %d expired + %d too large + %d repeated bad content)",
				r.CompletedLists, r.RelistBound(), r.Expired, r.TooLarge, r.RepeatedBadContent))
		}
		d.Plan, d.Faults = c.opts.Faults.Plan(), c.opts.Faults.Log()
	}
	if len(v) == 0 {
		return nil
	}
	if waitErr != nil {
		v = append(v, fmt.Sprintf("(gave up waiting for convergence: %v)", waitErr))
	}
	d.Violations = v
	return &d
}

// maxDiff bounds a diff in a violation: the first lines of a diff of
// thousands of objects say all there is.
const maxDiff = 6000

func truncate(s string) string {
	if len(s) <= maxDiff {
		return s
	}
	return s[:maxDiff] + fmt.Sprintf("\n... (%d more bytes)", len(s)-maxDiff)
}

func sortKeys(keys []cache.Key) {
	slices.SortFunc(keys, func(a, b cache.Key) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}
