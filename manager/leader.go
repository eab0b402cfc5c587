package manager

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrLeaderLost is the error of Run when the manager led and lost its
// Lease (it could not renew it in time): the controllers are stopped, so
// that two replicas never reconcile at once, and the program should exit
// and start again as a follower.
var ErrLeaderLost = errors.New("manager: leader election lost")

// LeaderElection makes the controllers and runnables of a manager run on
// one replica at a time, the holder of a Lease (client-go's
// leaderelection). The others are followers: with warm standby (the
// default) their informers list and watch while they wait, so that a
// follower that takes the Lease reconciles at once, from a synced cache,
// with no list; with ColdStandby they start nothing until they lead.
type LeaderElection struct {
	// Client reads and writes the Lease (coordination.k8s.io/v1). The
	// manager needs get, create and update on leases in Namespace.
	// Required.
	Client kubernetes.Interface
	// Namespace and Name are the Lease's. Required.
	Namespace, Name string
	// Identity names this replica in the Lease. Default: the host name,
	// an underscore and a random text.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's
	// (leaderelection.LeaderElectionConfig): how long a Lease holds
	// without renewal, how long the leader tries to renew before it gives
	// up, and how often everyone tries. Defaults: 15s, 10s, 2s, as
	// controller-runtime's.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// ColdStandby, if set, starts the informers only once the replica
	// leads: followers hold no cache and make no requests but for the
	// Lease, and a promotion lists everything first. Default: warm.
	ColdStandby bool
}

// elector is a configured LeaderElection.
type elector struct {
	cfg LeaderElection
	le  *leaderelection.LeaderElector

	leading   chan struct{} // closed once the Lease is acquired
	forbidden chan error    // gets the first Forbidden answer about the Lease
	lost      chan struct{} // closed if the Lease is lost after leading

	mu       sync.Mutex
	isLeader bool
	since    time.Time
}

// newElector checks cfg and fills its defaults.
func newElector(cfg LeaderElection) (*elector, error) {
	switch {
	case cfg.Client == nil:
		return nil, fmt.Errorf("manager: LeaderElection.Client: %w", ErrNil)
	case cfg.Namespace == "" || cfg.Name == "":
		return nil, fmt.Errorf("manager: LeaderElection needs the Lease's Namespace and Name (got %q/%q)", cfg.Namespace, cfg.Name)
	}
	if cfg.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("manager: LeaderElection: identity: %w", err)
		}
		cfg.Identity = host + "_" + rand.Text()
	}
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = 15 * time.Second
	}
	if cfg.RenewDeadline == 0 {
		cfg.RenewDeadline = 10 * time.Second
	}
	if cfg.RetryPeriod == 0 {
		cfg.RetryPeriod = 2 * time.Second
	}
	e := &elector{cfg: cfg, leading: make(chan struct{}), forbidden: make(chan error, 1), lost: make(chan struct{})}
	lock := &reportingLock{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Name},
		Client:     cfg.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
	}, forbidden: e.forbidden}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod,
		ReleaseOnCancel: true, // a replica that stops hands over at once
		Name:            cfg.Namespace + "/" + cfg.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { e.promoted() },
			OnStoppedLeading: e.stopped,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("manager: LeaderElection: %w", err)
	}
	e.le = le
	return e, nil
}

func (e *elector) promoted() {
	e.mu.Lock()
	e.isLeader, e.since = true, time.Now()
	e.mu.Unlock()
	close(e.leading)
}

// stopped is called whenever the elector's Run returns: after leading, or
// without ever leading (ctx ended while it waited).
func (e *elector) stopped() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.isLeader {
		e.isLeader = false
		close(e.lost)
	}
}

func (e *elector) leader() (bool, time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.isLeader, e.since
}

// reportingLock is a Lease lock that hands the first Forbidden answer to
// the manager: client-go's elector only logs it and tries again every
// RetryPeriod, forever, which looks like a follower that never leads.
type reportingLock struct {
	resourcelock.Interface
	forbidden chan error
}

func (l *reportingLock) report(op string, err error) error {
	if apierrors.IsForbidden(err) {
		select {
		case l.forbidden <- fmt.Errorf("%s Lease %s: %w (grant get, create and update on leases.coordination.k8s.io)", op, l.Describe(), err):
		default:
		}
	}
	return err
}

func (l *reportingLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r, b, err := l.Interface.Get(ctx)
	return r, b, l.report("get", err)
}

func (l *reportingLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.report("create", l.Interface.Create(ctx, ler))
}

func (l *reportingLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.report("update", l.Interface.Update(ctx, ler))
}

// Leader reports whether the manager holds its Lease, and since when;
// true with the time Run started for a manager without LeaderElection,
// once it runs.
func (m *Manager) Leader() (bool, time.Time) {
	if m.elector == nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		return !m.runSince.IsZero(), m.runSince
	}
	return m.elector.leader()
}
