package fleet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/factory"
)

var (
	// ErrNil is returned for a nil fleet, config or factory.
	ErrNil = errors.New("fleet: nil argument")
	// ErrBadName is returned by Engage for an empty cluster name, and
	// with Options.Factory.WarmStart for one that cannot name a
	// directory.
	ErrBadName = errors.New("fleet: invalid cluster name")
	// ErrEngaged is returned by Engage for a name that is engaged already.
	ErrEngaged = errors.New("fleet: cluster already engaged")
	// ErrSameServer is returned by Engage for a config whose server is
	// that of a cluster engaged under another name.
	ErrSameServer = errors.New("fleet: server already engaged under another name")
	// ErrUnknownCluster is returned by Disengage for a name that is not
	// engaged.
	ErrUnknownCluster = errors.New("fleet: cluster not engaged")
	// ErrRunning is returned by a second Run while the fleet runs.
	ErrRunning = errors.New("fleet: already running")
	// ErrStopped is returned by Run, Engage and InformerFor once Run has
	// returned.
	ErrStopped = errors.New("fleet: stopped")
)

// Options configures New. The zero value gives every cluster a factory
// with factory.Options' defaults and logs errors with the cluster's name.
type Options struct {
	// Factory are the options of the factory each cluster engaged with a
	// rest.Config gets. Leave HTTPClient and Mapper nil: each cluster gets
	// its own, freed when it is disengaged. ErrorHandler is replaced by
	// the fleet's. Leave MaxConcurrentLists and ListLimit unset unless
	// MaxConcurrentLists below is negative: the fleet's bound replaces
	// them.
	Factory factory.Options
	// MaxConcurrentLists bounds the list requests in flight at once over
	// the whole fleet (counted as factory.Options.MaxConcurrentLists
	// counts a factory's), so that clusters that all lose their watches
	// at once relist a few at a time. Default (0):
	// factory.DefaultMaxConcurrentLists. Negative: no fleet-wide bound,
	// each cluster's factory bounds its own (Factory.MaxConcurrentLists).
	// A factory given to EngageFactory keeps the bound it was made with.
	MaxConcurrentLists int
	// ErrorHandler receives every error of a cluster: its informers'
	// (those factory.Options.ErrorHandler receives) and its factory
	// stopping with an error. Default: logged, with the cluster's name.
	ErrorHandler func(cluster string, err error)
}

// Fleet runs the informers of many clusters in one process: each engaged
// cluster has a factory of its own, and each fleet Informer has an
// informer in every engaged cluster. Clusters are engaged and disengaged
// while it runs; disengaging one stops and frees everything of it.
type Fleet struct {
	opts Options

	mu       sync.Mutex
	state    int // 0 new, 1 running, 2 stopped
	ctx      context.Context
	clusters map[string]*cluster
	members  []member // the fleet informers
}

const (
	created = iota
	running
	stopped
)

// member is a fleet Informer of any type.
type member interface {
	// attach records that c is engaged, before its informer is made;
	// called with the fleet's lock held.
	attach(c *cluster)
	// engage makes the member's informer (or controller) in c. It may
	// make requests (discovery), and is called from c's goroutine, with
	// c's context (ended when c is disengaged), without the fleet's lock.
	engage(ctx context.Context, c *cluster) error
	// disengage forgets c, whose factory has stopped. Members are
	// disengaged in the reverse of their order, so that a controller
	// drains before the informer it reads is released.
	disengage(c *cluster)
}

// cluster is an engaged cluster.
type cluster struct {
	name    string
	host    string // the config's server; "" for EngageFactory
	factory *factory.Factory
	release func() // closes the cluster's connections; nil when the factory was given (EngageFactory)

	// Guarded by the fleet's lock:
	pending []member      // members without an informer in this cluster yet
	wake    chan struct{} // signalled when pending grows
	cancel  context.CancelFunc
	done    chan struct{} // closed when the cluster's goroutine returned; nil before Run
}

// Retries of a member whose informer cannot be made in a cluster (its
// discovery failed): the first after retryMin, doubling up to retryMax,
// each with up to a fifth more at random.
const (
	retryMin = time.Second
	retryMax = 30 * time.Second
)

// discoveryTimeout bounds each discovery request of a cluster, so that a
// cluster that hangs holds up neither its engagement nor its Disengage
// for long.
const discoveryTimeout = 15 * time.Second

// New returns a fleet with no clusters. It fails for options the fleet
// cannot honour: a Factory.HTTPClient or Factory.Mapper, which would be
// shared by every cluster.
func New(opts Options) (*Fleet, error) {
	if ws := opts.Factory.WarmStart; ws != nil {
		if ws.Informer.Cluster != "" {
			return nil, errors.New("fleet: Options.Factory.WarmStart.Informer.Cluster must be empty: each cluster's files are marked with its name")
		}
		if st, err := os.Stat(ws.Dir); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("fleet: Options.Factory.WarmStart.Dir %q is not a directory (%v)", ws.Dir, err)
		}
	}
	if opts.Factory.HTTPClient != nil || opts.Factory.Mapper != nil {
		return nil, errors.New("fleet: Options.Factory.HTTPClient and Mapper must be nil: each cluster gets its own")
	}
	if opts.MaxConcurrentLists >= 0 {
		if opts.Factory.MaxConcurrentLists != 0 || opts.Factory.ListLimit != nil {
			return nil, errors.New("fleet: Options.Factory.MaxConcurrentLists and ListLimit must be unset: the fleet bounds the lists of all its clusters (Options.MaxConcurrentLists; negative for a bound per cluster)")
		}
		n := opts.MaxConcurrentLists
		if n == 0 {
			n = factory.DefaultMaxConcurrentLists
		}
		limit, err := factory.NewListLimit(n)
		if err != nil {
			return nil, fmt.Errorf("fleet: %w", err)
		}
		opts.Factory.ListLimit = limit
	}
	if opts.ErrorHandler == nil {
		opts.ErrorHandler = func(cluster string, err error) {
			klog.ErrorS(err, "fleet: cluster error", "cluster", cluster)
		}
	}
	return &Fleet{opts: opts, clusters: map[string]*cluster{}}, nil
}

// Engage adds the cluster of cfg under name, with a factory, HTTP client
// and discovery of its own; every fleet Informer gets an informer in it,
// started at once if the fleet runs. The config is not contacted here:
// an unreachable cluster, a wrong CA or Forbidden are reported for this
// cluster (ErrorHandler, and its informers' sync errors) and slow no other.
func (fl *Fleet) Engage(name string, cfg *rest.Config) error {
	if fl == nil || cfg == nil {
		return ErrNil
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.Proxy == nil {
		// A config with a Proxy gets a transport of its own rather than
		// one from client-go's process-wide cache, so that disengaging the
		// cluster frees the transport.
		cfg.Proxy = http.ProxyFromEnvironment
	}
	// The cluster's connections are dialled through a tracker that
	// Disengage closes; a config with a Dial is not cached either.
	cs := newConns(cfg.Dial)
	cfg.Dial = cs.DialContext
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("fleet: cluster %q: HTTP client: %w", name, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, &http.Client{Transport: hc.Transport, Timeout: discoveryTimeout})
	if err != nil {
		cs.closeAll()
		return fmt.Errorf("fleet: cluster %q: discovery client: %w", name, err)
	}
	opts := fl.opts.Factory
	if ws := opts.WarmStart; ws != nil {
		// Each cluster saves its caches in a directory of its own, its
		// files marked with its name.
		if !safeDirName(name) {
			cs.closeAll()
			return fmt.Errorf("%w: %q cannot name a directory of Options.Factory.WarmStart.Dir (letters, digits, '.', '-', '_')", ErrBadName, name)
		}
		w := *ws
		w.Dir, w.Informer.Cluster = filepath.Join(ws.Dir, name), name
		if err := os.MkdirAll(w.Dir, 0o700); err != nil {
			cs.closeAll()
			return fmt.Errorf("fleet: cluster %q: warm start: %w", name, err)
		}
		opts.WarmStart = &w
	}
	opts.HTTPClient = hc
	opts.Mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	opts.ErrorHandler = func(err error) { fl.opts.ErrorHandler(name, err) }
	f, err := factory.New(cfg, opts)
	if err != nil {
		cs.closeAll()
		return fmt.Errorf("fleet: cluster %q: %w", name, err)
	}
	if err := fl.engage(name, strings.TrimSuffix(cfg.Host, "/"), f, func() {
		hc.CloseIdleConnections()
		cs.closeAll()
	}); err != nil {
		cs.closeAll()
		return err
	}
	return nil
}

// EngageFactory adds a cluster served by f, a factory the caller made
// (factory.NewForClientsets over a fake clientset, in tests) and that
// nothing else starts. Disengaging the cluster stops f.
func (fl *Fleet) EngageFactory(name string, f *factory.Factory) error {
	if fl == nil || f == nil {
		return ErrNil
	}
	return fl.engage(name, "", f, nil)
}

func (fl *Fleet) engage(name, host string, f *factory.Factory, release func()) error {
	if name == "" {
		return fmt.Errorf("%w: empty", ErrBadName)
	}
	fl.mu.Lock()
	defer fl.mu.Unlock()
	switch {
	case fl.state == stopped:
		return ErrStopped
	case fl.clusters[name] != nil:
		return fmt.Errorf("%w: %q", ErrEngaged, name)
	}
	for _, o := range fl.clusters {
		if host != "" && o.host == host {
			return fmt.Errorf("%w: cluster %q has the server %s of cluster %q", ErrSameServer, name, host, o.name)
		}
	}
	c := &cluster{name: name, host: host, factory: f, release: release,
		pending: slices.Clone(fl.members), wake: make(chan struct{}, 1)}
	for _, m := range fl.members {
		m.attach(c)
	}
	fl.clusters[name] = c
	if fl.state == running {
		fl.start(c)
	}
	return nil
}

// start runs c's goroutine until c is disengaged or the fleet stops;
// called with the fleet's lock held.
func (fl *Fleet) start(c *cluster) {
	ctx, cancel := context.WithCancel(fl.ctx)
	c.cancel, c.done = cancel, make(chan struct{})
	go func() {
		defer close(c.done)
		fl.run(ctx, c)
	}()
}

// run runs c's factory, and makes the informers of the fleet's members in
// it, retrying those that fail, until ctx ends.
func (fl *Fleet) run(ctx context.Context, c *cluster) {
	started := make(chan struct{})
	go func() {
		defer close(started)
		if err := c.factory.Start(ctx); err != nil {
			fl.opts.ErrorHandler(c.name, fmt.Errorf("fleet: cluster %q stopped: %w", c.name, err))
		}
	}()
	defer func() { <-started }()
	delay := retryMin
	for {
		fl.mu.Lock()
		pending := c.pending
		c.pending = nil
		fl.mu.Unlock()
		var failed []member
		for _, m := range pending {
			if ctx.Err() != nil {
				failed = append(failed, m)
				continue
			}
			if err := m.engage(ctx, c); err != nil {
				fl.opts.ErrorHandler(c.name, fmt.Errorf("fleet: cluster %q: %w", c.name, err))
				failed = append(failed, m)
			}
		}
		var retry *time.Timer
		var fire <-chan time.Time
		if len(failed) > 0 {
			fl.mu.Lock()
			c.pending = append(failed, c.pending...)
			fl.mu.Unlock()
			retry = time.NewTimer(delay + time.Duration(rand.Int64N(int64(delay)/5+1)))
			fire = retry.C
			delay = min(2*delay, retryMax)
		} else {
			delay = retryMin
		}
		select {
		case <-ctx.Done():
		case <-c.wake:
		case <-fire:
		}
		if retry != nil {
			retry.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// Disengage stops every informer of the cluster, waits for their
// goroutines, closes its connections and forgets it: its objects leave
// the fleet's listers (handlers get no deletions for them). A cluster
// disengaged in the middle of its list stops as well.
func (fl *Fleet) Disengage(name string) error {
	if fl == nil {
		return ErrNil
	}
	fl.mu.Lock()
	c := fl.clusters[name]
	if c == nil {
		fl.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrUnknownCluster, name)
	}
	delete(fl.clusters, name)
	members := slices.Clone(fl.members)
	fl.mu.Unlock()
	fl.stop(c, members)
	return nil
}

// stop stops c's factory, waits for it and frees c.
func (fl *Fleet) stop(c *cluster, members []member) {
	if c.done != nil {
		c.cancel()
		<-c.done
	}
	for _, m := range slices.Backward(members) {
		m.disengage(c)
	}
	if c.release != nil {
		c.release()
	}
}

// Clusters returns the names of the engaged clusters, sorted.
func (fl *Fleet) Clusters() []string {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	names := make([]string, 0, len(fl.clusters))
	for n := range fl.clusters {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Run runs the factories of the engaged clusters, and of each cluster
// engaged later (at once), until ctx ends; it then stops them all, waits
// for their goroutines and returns nil. A cluster whose factory stops with
// an error is reported for that cluster; the others go on. A fleet runs
// once: Run returns ErrRunning while it runs and ErrStopped after.
func (fl *Fleet) Run(ctx context.Context) error {
	if fl == nil {
		return ErrNil
	}
	fl.mu.Lock()
	switch fl.state {
	case running:
		fl.mu.Unlock()
		return ErrRunning
	case stopped:
		fl.mu.Unlock()
		return ErrStopped
	}
	fl.state, fl.ctx = running, ctx
	for _, c := range fl.clusters {
		fl.start(c)
	}
	fl.mu.Unlock()

	<-ctx.Done()

	fl.mu.Lock()
	fl.state = stopped
	clusters := fl.clusters
	fl.clusters = map[string]*cluster{}
	members := slices.Clone(fl.members)
	fl.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range clusters {
		wg.Go(func() { fl.stop(c, members) })
	}
	wg.Wait()
	return nil
}

// hasMember reports whether m is one of the fleet's members.
func (fl *Fleet) hasMember(m member) bool {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return slices.Contains(fl.members, m)
}

// addMember adds m, to be engaged in every engaged cluster.
func (fl *Fleet) addMember(m member) error {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.state == stopped {
		return ErrStopped
	}
	fl.members = append(fl.members, m)
	for _, c := range fl.clusters {
		m.attach(c)
		c.pending = append(c.pending, m)
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// safeDirName reports whether a cluster's name can name its directory.
func safeDirName(name string) bool {
	if name == "" || name == "." || name == ".." {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
