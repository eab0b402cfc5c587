package sharding

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// Errors of NewMembership and Membership.Run.
var (
	// ErrBadOptions is wrapped by the errors of constructors given
	// options that cannot work.
	ErrBadOptions = errors.New("sharding: bad options")
)

// Lease labels and annotations of a membership.
const (
	// GroupLabel is the label of every Lease of a group; its value is
	// Options.Group.
	GroupLabel = "sharding.typedinformer.io/group"
	// WeightAnnotation holds a replica's weight.
	WeightAnnotation = "sharding.typedinformer.io/weight"
	// HeldAnnotation holds the range a replica may be handling, as
	// "0x<start>-0x<end>"; absent when it handles none.
	HeldAnnotation = "sharding.typedinformer.io/held"
	// ReleasedAtAnnotation is when a replica last gave up (part of) a range,
	// in RFC 3339 with nanoseconds.
	ReleasedAtAnnotation = "sharding.typedinformer.io/released-at"
)

// Defaults of Options.
const (
	DefaultLeaseDuration = 15 * time.Second
)

// Options configure NewMembership. Namespace and Group are required; the
// rest has defaults.
type Options struct {
	// Namespace holds the group's Leases.
	Namespace string
	// Group names the set of replicas that share a resource; each
	// replica's Lease is named <Group>-<Identity> and labelled
	// GroupLabel=<Group>.
	Group string
	// Identity is this replica's name, unique in the group; it orders the
	// ranges. Default: the host name (a pod's name).
	Identity string
	// Weight is this replica's share relative to the others'. Default 1.
	Weight int
	// LeaseDuration is how long a Lease lives without renewal: a replica
	// that stops renewing is out of the group that long after its last
	// renewal, and stops handling its range itself by then. Whole seconds
	// (the Lease's unit); default DefaultLeaseDuration.
	LeaseDuration time.Duration
	// RenewInterval is how often the Lease is renewed. Default:
	// LeaseDuration / 3. It must be below LeaseDuration.
	RenewInterval time.Duration
	// KeepLeaseOnStop leaves the Lease to expire when Run returns, as a
	// crashed replica's would, instead of deleting it: a replica restarted
	// under the same identity within the lease duration gets its range
	// back without two reshards. A Lease expired for 20 lease durations
	// is deleted by the group's first member. Default: false, the Lease is
	// deleted and the others take the range over at once.
	KeepLeaseOnStop bool
	// ErrorHandler receives the errors Run recovers from (failed renewals,
	// lease informer errors). Default: logged.
	ErrorHandler func(error)
}

// Member is one live replica of a group as a membership sees it.
type Member struct {
	// Identity is the replica's name.
	Identity string
	// Weight is its weight.
	Weight int
	// Range is the range assigned to it.
	Range Range
	// Held is the range it says it may be handling (nil for none): what a
	// replica taking over waits for.
	Held *Range
	// Expires is when its Lease expires unless renewed.
	Expires time.Time
}

// Assignment is a group's membership at one moment and the ranges it
// assigns: every replica that sees the same live Leases computes the same.
type Assignment struct {
	// Members are the live replicas, sorted by identity.
	Members []Member
	// Self is this replica's index in Members, or -1 when it is not a
	// member (its Lease is not created yet or was not renewed in time).
	Self int
}

// Range returns this replica's range, and false when it has none.
func (a Assignment) Range() (Range, bool) {
	if a.Self < 0 || a.Self >= len(a.Members) {
		return Range{}, false
	}
	return a.Members[a.Self].Range, true
}

// release is a range a member stopped holding, and when.
type release struct {
	identity string
	r        Range
	at       time.Time
}

// Membership keeps this replica's Lease in a group and computes, from the
// group's live Leases, the contiguous range of the hash space each replica
// owns. There is no leader: each replica sorts the live identities and
// splits the space by their weights (Split). Create it with NewMembership;
// run it with Run (a sharding Informer runs it).
type Membership struct {
	leases  coordclient.LeaseInterface
	opts    Options
	name    string
	inf     *typed.Informer[*coordinationv1.Lease]
	running atomic.Bool
	taken   atomic.Bool // by a sharded Informer
	kick    chan struct{}

	writeMu sync.Mutex // serialises writes of the own Lease
	own     *coordinationv1.Lease

	// leasedUntil is when the own Lease expires by this replica's clock
	// (UnixNano), for the fence of every delivery (Informer.kept).
	leasedUntil atomic.Int64

	mu        sync.Mutex
	view      Assignment
	summary   string
	changed   chan struct{}
	renewedAt time.Time // start of the last successful renewal
	lapsedAt  time.Time // when a renewal found the Lease lapsed with a range held; zero once renewed
	held      *Range
	seenHeld  map[string]Range // the last held range seen per identity
	releases  []release        // recent releases, oldest first
}

// NewMembership returns the membership of this replica in opts.Group,
// with Leases in opts.Namespace through client (clientset.CoordinationV1()).
// It does nothing until Run. It fails for a nil client, a missing
// namespace or group, a name that is not a valid Lease name, a weight below
// 0, or a renew interval not below the lease duration.
func NewMembership(client coordclient.LeasesGetter, opts Options) (*Membership, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrBadOptions)
	}
	if opts.Namespace == "" || opts.Group == "" {
		return nil, fmt.Errorf("%w: Namespace and Group are required", ErrBadOptions)
	}
	if opts.Identity == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("%w: no Identity and no host name: %w", ErrBadOptions, err)
		}
		opts.Identity = h
	}
	if opts.Weight == 0 {
		opts.Weight = 1
	}
	if opts.Weight < 0 {
		return nil, fmt.Errorf("%w: Weight %d", ErrBadOptions, opts.Weight)
	}
	if opts.LeaseDuration == 0 {
		opts.LeaseDuration = DefaultLeaseDuration
	}
	opts.LeaseDuration = opts.LeaseDuration.Round(time.Second)
	if opts.LeaseDuration < time.Second {
		opts.LeaseDuration = time.Second
	}
	if opts.RenewInterval == 0 {
		opts.RenewInterval = opts.LeaseDuration / 3
	}
	if opts.RenewInterval <= 0 || opts.RenewInterval >= opts.LeaseDuration {
		return nil, fmt.Errorf("%w: RenewInterval %v must be in (0, LeaseDuration %v)", ErrBadOptions, opts.RenewInterval, opts.LeaseDuration)
	}
	name := opts.Group + "-" + opts.Identity
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, fmt.Errorf("%w: Lease name %q: %s", ErrBadOptions, name, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(opts.Group); len(errs) > 0 {
		return nil, fmt.Errorf("%w: Group %q: %s", ErrBadOptions, opts.Group, strings.Join(errs, "; "))
	}
	leases := client.Leases(opts.Namespace)
	src, err := source.FromClient[*coordinationv1.Lease](leases)
	if err != nil {
		return nil, fmt.Errorf("sharding: %w", err)
	}
	m := &Membership{
		leases: leases, opts: opts, name: name,
		kick:     make(chan struct{}, 1),
		view:     Assignment{Self: -1},
		changed:  make(chan struct{}),
		seenHeld: map[string]Range{},
	}
	m.inf, err = typed.NewInformer(src, typed.Options[*coordinationv1.Lease]{
		Name:          "sharding-leases-" + opts.Group,
		LabelSelector: GroupLabel + "=" + opts.Group,
		ErrorHandler:  opts.ErrorHandler,
	})
	if err != nil {
		return nil, fmt.Errorf("sharding: %w", err)
	}
	return m, nil
}

// Identity returns this replica's identity.
func (m *Membership) Identity() string { return m.opts.Identity }

// LeaseDuration returns the lease duration in use.
func (m *Membership) LeaseDuration() time.Duration { return m.opts.LeaseDuration }

// Assignment returns the current assignment.
func (m *Membership) Assignment() Assignment {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.view
}

// Changed returns a channel closed at the next change of the assignment
// or of a member's held range.
func (m *Membership) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

// Run creates and renews this replica's Lease, follows the group's Leases
// and keeps the assignment current, until ctx ends; it then deletes the
// Lease (unless Options.KeepLeaseOnStop) and returns nil. It returns
// typed.ErrRunning if the membership already runs, and typed.ErrStopped if
// it ran before.
func (m *Membership) Run(ctx context.Context) error {
	if !m.running.CompareAndSwap(false, true) {
		return typed.ErrRunning
	}
	defer m.running.Store(false)
	ictx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	_, err := m.inf.AddHandler(handler.Funcs[*coordinationv1.Lease]{
		AddFunc:    func(*coordinationv1.Lease, bool) { m.poke() },
		UpdateFunc: func(_, _ *coordinationv1.Lease) { m.poke() },
		DeleteFunc: func(handler.Deleted[*coordinationv1.Lease]) { m.poke() },
	})
	if err != nil {
		stop()
		return fmt.Errorf("sharding: %w", err)
	}
	go func() { done <- m.inf.Run(ictx) }()
	defer func() {
		stop()
		<-done
		m.leave(ctx)
	}()

	renew := time.NewTicker(m.opts.RenewInterval)
	defer renew.Stop()
	expiry := time.NewTimer(time.Hour)
	defer expiry.Stop()
	m.renew(ctx)
	for {
		m.fenced(ctx, time.Now())
		next := m.recompute(time.Now())
		expiry.Reset(time.Until(next))
		select {
		case <-ctx.Done():
			return nil
		case err := <-done:
			done <- err
			if err != nil {
				return fmt.Errorf("sharding: lease informer: %w", err)
			}
			return nil
		case <-renew.C:
			m.renew(ctx)
			m.collect(ctx, time.Now())
		case <-m.kick:
			if m.rejoining() {
				m.renew(ctx)
			}
		case <-expiry.C:
		}
	}
}

// collectAfter is how many lease durations a Lease of the group must have
// been expired for before a member deletes it: long past a restart under
// the same identity (KeepLeaseOnStop), so that the Leases of replicas that
// were killed, under names that will not come back (a Deployment's pods),
// do not pile up.
const collectAfter = 20

// collect deletes the group's Leases expired for collectAfter lease
// durations (their own) at now. Only the first member does, so that the
// group sends one request per Lease; the delete is conditional on the
// version seen, so a Lease renewed meanwhile stays.
func (m *Membership) collect(ctx context.Context, now time.Time) {
	if a := m.Assignment(); a.Self != 0 {
		return
	}
	for _, l := range m.inf.Store().List() {
		if l.Name == m.name || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
			continue
		}
		d := time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
		if now.Sub(l.Spec.RenewTime.Time) < time.Duration(collectAfter+1)*d {
			continue
		}
		rv, uid := l.ResourceVersion, l.UID
		err := m.leases.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv, UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
			m.report(ctx, fmt.Errorf("sharding: delete expired Lease %s/%s: %w", m.opts.Namespace, l.Name, err))
		}
	}
}

// poke asks Run's loop to recompute.
func (m *Membership) poke() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// report hands err to the error handler.
func (m *Membership) report(ctx context.Context, err error) {
	if m.opts.ErrorHandler != nil {
		m.opts.ErrorHandler(err)
		return
	}
	klog.FromContext(ctx).Error(err, "sharding membership", "group", m.opts.Group, "identity", m.opts.Identity)
}

// renew renews the own Lease, creating it if needed: unless the Lease
// lapsed by this replica's own clock (the process was paused, or could not
// reach the server for a lease duration) while the replica claims a range.
// The others may have taken that range over since, so the replica first
// gives it up, as for any reshard (its assignment says it is no member;
// the Informer moves to nothing and claims nothing), and only then renews,
// joining the group again as a new member. A renewal that returns after
// the Lease it renews lapsed counts for nothing: the others saw it expire.
func (m *Membership) renew(ctx context.Context) {
	start := time.Now()
	if m.fenced(ctx, start) {
		return
	}
	_, err := m.write(ctx, func(l *coordinationv1.Lease) {
		l.Spec.RenewTime = &metav1.MicroTime{Time: start}
	})
	if err != nil {
		if ctx.Err() == nil {
			m.report(ctx, fmt.Errorf("sharding: renew Lease %s/%s: %w", m.opts.Namespace, m.name, err))
		}
		return
	}
	if m.fenced(ctx, time.Now()) {
		return
	}
	m.mu.Lock()
	m.renewedAt, m.lapsedAt = start, time.Time{}
	m.mu.Unlock()
	m.leasedUntil.Store(start.Add(m.opts.LeaseDuration).UnixNano())
	m.poke()
}

// fenced reports whether the own Lease lapsed by this replica's clock at
// now while the replica claims a range, and reports the lapse the first
// time it finds it.
func (m *Membership) fenced(ctx context.Context, now time.Time) bool {
	m.mu.Lock()
	lapsed := !m.renewedAt.IsZero() && !now.Before(m.renewedAt.Add(m.opts.LeaseDuration))
	fence := lapsed && m.held != nil
	first := fence && m.lapsedAt.IsZero()
	if first {
		m.lapsedAt = now
	}
	expired, held := m.renewedAt.Add(m.opts.LeaseDuration), m.held
	m.mu.Unlock()
	if first {
		m.report(ctx, fmt.Errorf("sharding: Lease %s/%s lapsed %v ago by this replica's clock (paused, or cut off from the server): giving range %v up before renewing",
			m.opts.Namespace, m.name, now.Sub(expired).Round(time.Millisecond), *held))
	}
	return fence
}

// rejoining reports whether the Lease lapsed with a range held and the
// range has been given up since: the replica can renew.
func (m *Membership) rejoining() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.lapsedAt.IsZero() && m.held == nil
}

// leased reports whether the own Lease is unexpired at now by this
// replica's clock. Another replica may take over this one's range once the
// Lease expires by its own clock, from the renewal's start: the two agree
// but for the clocks' skew.
func (m *Membership) leased(now time.Time) bool {
	return now.UnixNano() < m.leasedUntil.Load()
}

// write applies change to the own Lease and stores it, creating it first
// if needed and retrying a conflict with a fresh copy. It returns the
// written Lease's resourceVersion.
func (m *Membership) write(ctx context.Context, change func(*coordinationv1.Lease)) (string, error) {
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	for attempt := 0; ; attempt++ {
		cur := m.own
		if cur == nil {
			got, err := m.leases.Get(ctx, m.name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				got = nil
			case err != nil:
				return "", err
			}
			cur = got
		}
		var next *coordinationv1.Lease
		if cur == nil {
			next = m.fresh()
		} else {
			next = cur.DeepCopy()
		}
		m.stamp(next)
		change(next)
		var out *coordinationv1.Lease
		var err error
		if cur == nil {
			out, err = m.leases.Create(ctx, next, metav1.CreateOptions{})
		} else {
			out, err = m.leases.Update(ctx, next, metav1.UpdateOptions{})
		}
		if err == nil {
			m.own = out
			return out.ResourceVersion, nil
		}
		m.own = nil
		if (apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err)) && attempt < 5 {
			continue
		}
		return "", err
	}
}

// fresh is a new own Lease.
func (m *Membership) fresh() *coordinationv1.Lease {
	now := metav1.NowMicro()
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: m.name, Namespace: m.opts.Namespace},
		Spec:       coordinationv1.LeaseSpec{AcquireTime: &now},
	}
}

// stamp sets what every write of the own Lease carries.
func (m *Membership) stamp(l *coordinationv1.Lease) {
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[GroupLabel] = m.opts.Group
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[WeightAnnotation] = strconv.Itoa(m.opts.Weight)
	id := m.opts.Identity
	secs := int32(m.opts.LeaseDuration / time.Second)
	l.Spec.HolderIdentity = &id
	l.Spec.LeaseDurationSeconds = &secs
	m.mu.Lock()
	held := m.held
	m.mu.Unlock()
	if held != nil {
		l.Annotations[HeldAnnotation] = formatHeld(*held)
	} else {
		delete(l.Annotations, HeldAnnotation)
	}
}

// leave deletes the own Lease when Run ends, unless told to keep it.
func (m *Membership) leave(ctx context.Context) {
	m.mu.Lock()
	m.view = Assignment{Self: -1}
	m.summary = ""
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()
	if m.opts.KeepLeaseOnStop {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	err := m.leases.Delete(dctx, m.name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		m.report(ctx, fmt.Errorf("sharding: delete Lease %s/%s: %w", m.opts.Namespace, m.name, err))
	}
	m.own = nil
}

// Claim records in the own Lease that this replica may handle r from now
// on (nil: none), and waits until the Lease informer has seen the write:
// then every claim another replica wrote before it is in the assignment,
// so a replica that claims and then finds no other live claim overlapping
// its range is the only one that can handle it. A replica claims before it
// starts on a range and after it stopped on one.
func (m *Membership) Claim(ctx context.Context, r *Range) error {
	m.mu.Lock()
	prev := m.held
	m.held = r
	m.mu.Unlock()
	now := time.Now()
	rv, err := m.write(ctx, func(l *coordinationv1.Lease) {
		if prev != nil && (r == nil || *r != *prev) {
			l.Annotations[ReleasedAtAnnotation] = now.UTC().Format(time.RFC3339Nano)
		}
	})
	if err != nil {
		return fmt.Errorf("sharding: claim %v: %w", r, err)
	}
	if r == nil {
		m.poke() // a replica whose Lease lapsed can now renew it
	}
	if rv == "" {
		// A server that hands out no versions (a fake): nothing to wait for.
		m.recompute(time.Now())
		return nil
	}
	// Bounded: a Lease informer that cannot sync (no permission to watch
	// Leases) makes the claim fail, and the caller retry, rather than hang.
	wctx, cancel := context.WithTimeout(ctx, m.opts.LeaseDuration)
	defer cancel()
	if err := m.inf.WaitForResourceVersion(wctx, rv); err != nil {
		return fmt.Errorf("sharding: claim %v: %w", r, err)
	}
	m.recompute(time.Now())
	return nil
}

// Blocker returns a live member other than this replica whose held range
// overlaps r, if there is one.
func (m *Membership) Blocker(r Range) (Member, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, mem := range m.view.Members {
		if i != m.view.Self && mem.Held != nil && mem.Held.Overlaps(r) {
			return mem, true
		}
	}
	return Member{}, false
}

// LastRelease returns the latest time after since at which another
// replica gave up a range overlapping r (it released it, or its Lease
// expired or was deleted), and false if none is known.
func (m *Membership) LastRelease(r Range, since time.Time) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var last time.Time
	for _, rel := range m.releases {
		if rel.at.After(since) && rel.r.Overlaps(r) && rel.at.After(last) {
			last = rel.at
		}
	}
	return last, !last.IsZero()
}

// sortMembers orders members by identity.
func sortMembers(ms []Member) {
	slices.SortFunc(ms, func(a, b Member) int { return strings.Compare(a.Identity, b.Identity) })
}
