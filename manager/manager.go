// Package manager runs a controller program's parts together: a Factory's
// informers, informers of your own, reconcile controllers, other
// runnables, and the HTTP endpoints that report on them (readiness, the
// debug page, and handlers of your own such as /metrics).
//
//	f, _ := factory.New(cfg, factory.Options{})
//	m, _ := manager.New(manager.Options{Factory: f, Addr: "127.0.0.1:8081"})
//	pods, _ := manager.InformerFor[*corev1.Pod](m, factory.Scope{})
//	ctrl, _ := reconcile.New(pods, r, reconcile.Options[*corev1.Pod]{})
//	_ = m.AddController(ctrl)
//	err := m.Run(ctx) // until ctx ends
//
// For, Owns and Complete build a controller in fewer lines, as
// controller-runtime's builder does:
//
//	m, _ := manager.New(manager.Options{Config: cfg})
//	ctrl := manager.For[*corev1.Service](m, "service-ports", factory.Scope{})
//	configMaps := manager.Owns[*corev1.ConfigMap](ctrl, reconcile.WatchOptions[*corev1.ConfigMap]{})
//	err := ctrl.Complete(r) // r reads ctrl.Informer() and configMaps, writes with m.Clientset()
//
// # Order
//
// Run starts the HTTP server first (readiness fails until every informer
// has synced), then the informers (the factory's and those added with
// AddInformer), then the controllers and runnables; each controller waits
// for the caches it reads before its workers start. When ctx ends, or any
// part fails, the manager stops them in reverse: controllers and runnables
// first (each drains its reconciles in progress), then the informers, then
// the HTTP server. Run returns the first part's error, or nil after a
// clean stop, with no goroutine of it left.
//
// # Leader election
//
// With Options.LeaderElection, the controllers and runnables run only on
// the replica that holds a Lease. Followers keep their informers listed
// and watched (warm standby), so a promotion reconciles at once from a
// synced cache; with ColdStandby they start nothing until they lead. A
// leader that stops releases the Lease; one that cannot renew it stops
// its controllers and Run returns ErrLeaderLost (exit, and start again as
// a follower). A Lease the manager may not read or write fails Run at
// once with the Forbidden error.
package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/httpinfo"
	"github.com/typedinformer/informer/reconcile"
	"github.com/typedinformer/informer/typed"
)

// Errors of the manager.
var (
	// ErrDuplicate is returned for a second controller or runnable under a
	// name already added.
	ErrDuplicate = errors.New("manager: name already added")
	// ErrStarted is returned by the Add methods once Run has started.
	ErrStarted = errors.New("manager: already started")
	// ErrNil is returned for a nil controller, runnable or informer.
	ErrNil = errors.New("manager: nil argument")
	// ErrNoFactory is returned by InformerFor for a manager without
	// Options.Factory.
	ErrNoFactory = errors.New("manager: no Options.Factory")
)

// Runnable is a part of the program the manager runs with its
// controllers: Run blocks until ctx ends and returns nil then, or returns
// an error, which stops the whole manager.
type Runnable interface {
	Run(ctx context.Context) error
}

// Controller is a runnable with a name and a status: *reconcile.Controller
// of any type is one.
type Controller interface {
	Runnable
	Name() string
	Status() reconcile.Status
}

// Options configures New. The zero value runs what is added, with no HTTP
// server.
type Options struct {
	// Config, if set without Factory, is the cluster's: the manager makes
	// a Factory over it (factory.New with factory.Options{}) and a
	// clientset (Clientset) for the controllers' writes. Set Factory
	// instead for a factory with options. Default: none.
	Config *rest.Config
	// Clientset, if set, is what Clientset returns: client-go's fake
	// clientset beside a Factory over it in unit tests
	// (factory.NewForClientsets), so that the same wiring runs against
	// the fake and a cluster. Default: one over Config, if set.
	Clientset kubernetes.Interface
	// Factory, if set, is started with the manager's informers, and every
	// informer it makes, whoever asks for it (InformerFor, or
	// factory.InformerFor elsewhere in the program), is on the page and
	// the readiness check until its last release (httpinfo.AddFactory).
	// Default: none.
	Factory *factory.Factory
	// Addr, if set, is the address of an HTTP server for /readyz (the
	// readiness of every informer and controller), /healthz (the manager
	// is running), /debug/informers (the debug page) and Handlers. Serve it
	// on a private port: see package httpinfo. ":0" picks a free port
	// (Manager.Addr says which). Default: no server.
	Addr string
	// Handlers are more endpoints of the HTTP server by pattern
	// (http.ServeMux), such as "/metrics": promhttp.HandlerFor(registry,
	// promhttp.HandlerOpts{}). Default: none.
	Handlers map[string]http.Handler
	// Registry is the httpinfo registry the page and the readiness check
	// read; the manager adds its informers and controllers to it.
	// Default: a new one.
	Registry *httpinfo.Registry
	// Readiness configures the readiness check. Default: its zero value.
	Readiness httpinfo.ReadinessOptions
	// ShutdownTimeout bounds the HTTP server's graceful shutdown, the last
	// step of a stop. Default (0): 5s.
	ShutdownTimeout time.Duration
	// LeaderElection, if set, runs the controllers and runnables only
	// while this replica holds a Lease; see LeaderElection. Default: they
	// run at once.
	LeaderElection *LeaderElection
}

// Manager runs informers, controllers and HTTP endpoints together; see the
// package documentation. Create it with New, add parts, then Run it once.
type Manager struct {
	opts Options
	reg  *httpinfo.Registry
	// unfollow stops registering the Factory's informers (AddFactory).
	unfollow func()
	ready    *httpinfo.Readiness
	page     *httpinfo.Page

	mu        sync.Mutex
	started   bool
	informers []named
	parts     []named // controllers and runnables, in the order added
	names     map[string]bool
	releases  []func()
	addr      net.Addr
	stopped   chan struct{} // closed when Run has returned
	runSince  time.Time
	// With LeaderElection, controllers appear on the page and the
	// readiness check once they run: a follower is ready when its caches
	// are.
	elector  *elector
	deferred []Controller
	builders []incomplete // For's, checked by Run
	kube     kubernetes.Interface
}

type named struct {
	name string
	r    Runnable
}

// New returns a manager with nothing added. It fails for a negative
// ShutdownTimeout and invalid Readiness options.
func New(opts Options) (*Manager, error) {
	if opts.Config != nil {
		if opts.Factory != nil {
			return nil, errors.New("manager: both Options.Config and Options.Factory set: give one")
		}
		f, err := factory.New(opts.Config, factory.Options{})
		if err != nil {
			return nil, fmt.Errorf("manager: %w", err)
		}
		opts.Factory = f
	}
	if opts.ShutdownTimeout < 0 {
		return nil, fmt.Errorf("manager: ShutdownTimeout %v is negative", opts.ShutdownTimeout)
	}
	if opts.ShutdownTimeout == 0 {
		opts.ShutdownTimeout = 5 * time.Second
	}
	if err := checkHandlers(opts.Handlers); err != nil {
		return nil, err
	}
	reg := opts.Registry
	if reg == nil {
		var err error
		if reg, err = httpinfo.NewRegistry(httpinfo.Options{}); err != nil {
			return nil, fmt.Errorf("manager: %w", err)
		}
	}
	ready, err := httpinfo.NewReadiness(reg, opts.Readiness)
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	page, err := httpinfo.NewPage(reg, httpinfo.PageOptions{Readiness: ready})
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	m := &Manager{opts: opts, reg: reg, ready: ready, page: page, names: map[string]bool{}, stopped: make(chan struct{})}
	m.kube = opts.Clientset
	if opts.Config != nil && m.kube == nil {
		if m.kube, err = kubernetes.NewForConfig(opts.Config); err != nil {
			return nil, fmt.Errorf("manager: %w", err)
		}
	}
	if opts.LeaderElection != nil {
		if m.elector, err = newElector(*opts.LeaderElection); err != nil {
			return nil, err
		}
	}
	if opts.Factory != nil {
		// Every informer of the factory, whoever asks for it, is on the
		// page and the readiness check until its last release.
		if m.unfollow, err = httpinfo.AddFactory(reg, opts.Factory); err != nil {
			return nil, fmt.Errorf("manager: %w", err)
		}
	}
	return m, nil
}

// InformerFor returns the informer of T in scope s of the manager's
// Factory (factory.InformerFor), which is on the page and the readiness
// check like every informer of the factory. The factory runs it; the
// manager releases it when Run returns. Add handlers and indexes; do not
// Run it.
func InformerFor[T cache.Object](m *Manager, s factory.Scope) (*typed.Informer[T], error) {
	if m == nil {
		return nil, ErrNil
	}
	if m.opts.Factory == nil {
		return nil, ErrNoFactory
	}
	inf, release, err := factory.InformerFor[T](m.opts.Factory, s)
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	m.mu.Lock()
	m.releases = append(m.releases, release)
	m.mu.Unlock()
	return inf, nil
}

// AddInformer has the manager run inf (before the controllers, stopped
// after them) and registers it on the page and the readiness check. Use
// it for informers made with typed.NewInformer, not for a Factory's.
func AddInformer[T cache.Object](m *Manager, inf *typed.Informer[T]) error {
	if m == nil || inf == nil {
		return ErrNil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return ErrStarted
	}
	if _, err := httpinfo.Add(m.reg, inf); err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	m.informers = append(m.informers, named{name: inf.Name(), r: inf})
	return nil
}

// AddController adds a controller, run after the informers, stopped before
// them, and reported on the page and the readiness check (ready once its
// caches synced and its workers run). Two controllers of one name are
// refused with ErrDuplicate.
func (m *Manager) AddController(c Controller) error {
	if c == nil {
		return ErrNil
	}
	if err := m.add(c.Name(), c); err != nil {
		return err
	}
	if m.elector != nil {
		m.mu.Lock()
		m.deferred = append(m.deferred, c)
		m.mu.Unlock()
		return nil
	}
	if err := httpinfo.AddController(m.reg, c); err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	return nil
}

// Add adds a runnable under name, run and stopped with the controllers.
func (m *Manager) Add(name string, r Runnable) error {
	if r == nil {
		return ErrNil
	}
	return m.add(name, r)
}

func (m *Manager) add(name string, r Runnable) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.started:
		return ErrStarted
	case name == "":
		return fmt.Errorf("manager: %w: empty name", ErrNil)
	case m.names[name]:
		return fmt.Errorf("%w: %q", ErrDuplicate, name)
	}
	m.names[name] = true
	m.parts = append(m.parts, named{name: name, r: r})
	return nil
}

// Addr returns the HTTP server's address once it listens, nil without
// Options.Addr or before Run.
func (m *Manager) Addr() net.Addr {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.addr
}

// Clientset returns Options.Clientset, or the clientset over
// Options.Config, for reconcilers to write with; nil for a manager made
// with neither.
func (m *Manager) Clientset() kubernetes.Interface { return m.kube }

// Factory returns the manager's factory (Options.Factory, or the one made
// over Options.Config), nil without one: for factory.KindOf and the
// factory's other functions.
func (m *Manager) Factory() *factory.Factory { return m.opts.Factory }

// Readiness returns the manager's readiness check, to serve elsewhere.
func (m *Manager) Readiness() *httpinfo.Readiness { return m.ready }

// Page returns the manager's debug page, to serve elsewhere.
func (m *Manager) Page() *httpinfo.Page { return m.page }

// Run runs every part until ctx ends or one fails, then stops them in
// reverse order (see the package documentation) and returns the first
// error, or nil. A manager runs once: a second Run returns
// typed.ErrRunning while the first runs, typed.ErrStopped after.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		select {
		case <-m.stopped:
			return typed.ErrStopped
		default:
			return typed.ErrRunning
		}
	}
	m.started = true
	informers, parts, builders := m.informers, m.parts, m.builders
	m.mu.Unlock()
	defer m.release()
	var berrs []error
	for _, b := range builders {
		berrs = append(berrs, b.check())
	}
	if err := errors.Join(berrs...); err != nil {
		close(m.stopped)
		return err
	}
	logger := klog.FromContext(ctx).WithName("manager")

	var first error
	var once sync.Once
	failed := make(chan struct{})
	fail := func(what string, err error) {
		if err == nil {
			return
		}
		once.Do(func() {
			first = fmt.Errorf("manager: %s: %w", what, err)
			close(failed)
		})
	}

	// Each stage runs on its own context, canceled in reverse order.
	httpCtx, stopHTTP := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHTTP()
	var httpDone chan struct{}
	if m.opts.Addr != "" {
		srv, ln, err := m.listen()
		if err != nil {
			close(m.stopped)
			return err
		}
		httpDone = make(chan struct{})
		go func() {
			defer close(httpDone)
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				fail("HTTP server", err)
			}
		}()
		go func() {
			<-httpCtx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), m.opts.ShutdownTimeout)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
	}

	infCtx, stopInformers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopInformers()
	var infs sync.WaitGroup
	startInformers := func() {
		if f := m.opts.Factory; f != nil {
			infs.Go(func() { fail("factory", f.Start(infCtx)) })
		}
		for _, n := range informers {
			infs.Go(func() { fail("informer "+n.name, n.r.Run(infCtx)) })
		}
	}
	e := m.elector
	if e == nil || !e.cfg.ColdStandby {
		startInformers()
	}

	// With leader election, the parts wait for the Lease.
	leCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()
	leDone := make(chan struct{})
	if e == nil {
		close(leDone)
	} else {
		go func() {
			defer close(leDone)
			e.le.Run(leCtx)
		}()
		go func() {
			select {
			case err := <-e.forbidden:
				fail("leader election", err)
			case <-e.lost:
				fail("leader election", fmt.Errorf("%w: Lease %s/%s not renewed within %v", ErrLeaderLost, e.cfg.Namespace, e.cfg.Name, e.cfg.RenewDeadline))
			case <-leCtx.Done():
			}
		}()
		logger.V(2).Info("waiting for the Lease", "lease", e.cfg.Namespace+"/"+e.cfg.Name, "identity", e.cfg.Identity)
	}

	partCtx, stopParts := context.WithCancel(context.WithoutCancel(ctx))
	defer stopParts()
	var partsDone sync.WaitGroup
	startParts := func() {
		for _, n := range parts {
			partsDone.Go(func() { fail(n.name, n.r.Run(partCtx)) })
		}
		logger.V(2).Info("started", "informers", len(informers), "parts", len(parts))
	}
	var leading <-chan struct{}
	if e == nil {
		startParts()
	} else {
		leading = e.leading
	}
	m.mu.Lock()
	m.runSince = time.Now()
	m.mu.Unlock()

	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-failed:
			done = true
		case <-leading:
			leading = nil
			logger.Info("leading", "lease", e.cfg.Namespace+"/"+e.cfg.Name, "identity", e.cfg.Identity)
			if e.cfg.ColdStandby {
				startInformers()
			}
			if err := m.registerDeferred(); err != nil {
				fail("page", err)
				continue
			}
			startParts()
		}
	}
	stopParts()
	partsDone.Wait()
	stopElector() // releases the Lease: a follower takes over at once
	<-leDone
	stopInformers()
	infs.Wait()
	stopHTTP()
	if httpDone != nil {
		<-httpDone
	}
	close(m.stopped)
	logger.V(2).Info("stopped", "err", first)
	return first
}

// newMux is the HTTP server's mux: the manager's endpoints and
// Options.Handlers.
func newMux(ready, page, healthz http.Handler, handlers map[string]http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/readyz", ready)
	mux.Handle("/healthz", healthz)
	mux.Handle("/debug/informers", page)
	for pattern, h := range handlers {
		mux.Handle(pattern, h)
	}
	return mux
}

// checkHandlers refuses what http.ServeMux would panic on: a nil handler,
// an invalid pattern, or one of the manager's own.
func checkHandlers(handlers map[string]http.Handler) (err error) {
	for pattern, h := range handlers {
		if h == nil {
			return fmt.Errorf("manager: %w: Handlers[%q] is nil", ErrNil, pattern)
		}
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("manager: Options.Handlers: %v", r)
		}
	}()
	ok := http.NotFoundHandler()
	newMux(ok, ok, ok, handlers)
	return nil
}

func healthz(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) }

// listen opens the HTTP server's listener and mux.
func (m *Manager) listen() (*http.Server, net.Listener, error) {
	mux := newMux(m.ready, m.page, http.HandlerFunc(healthz), m.opts.Handlers)
	ln, err := net.Listen("tcp", m.opts.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("manager: listen on %s: %w", m.opts.Addr, err)
	}
	m.mu.Lock()
	m.addr = ln.Addr()
	m.mu.Unlock()
	return &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln, nil
}

// registerDeferred puts the controllers on the page and the readiness
// check once they run (with LeaderElection).
func (m *Manager) registerDeferred() error {
	m.mu.Lock()
	cs := m.deferred
	m.deferred = nil
	m.mu.Unlock()
	for _, c := range cs {
		if err := httpinfo.AddController(m.reg, c); err != nil {
			return err
		}
	}
	return nil
}

// release gives back the factory informers InformerFor took.
func (m *Manager) release() {
	m.mu.Lock()
	rs := m.releases
	m.releases = nil
	m.mu.Unlock()
	for _, r := range rs {
		r()
	}
	if m.unfollow != nil {
		m.unfollow()
	}
}
