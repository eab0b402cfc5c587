package factory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/typedinformer/informer/metrics"
	"github.com/typedinformer/informer/typed"
)

// DefaultMaxConcurrentLists is the bound on list requests in flight when
// Options.MaxConcurrentLists is 0.
const DefaultMaxConcurrentLists = 10

// Errors of the factory's lifecycle.
var (
	// ErrNoConfig is returned by InformerFor for a type with no
	// registered source in a factory made without a rest.Config.
	ErrNoConfig = errors.New("factory: no rest.Config and no registered source")
)

// Options configure [New]. The zero value serves every type of client-go's
// scheme, with discovery and connections shared by all informers, at most
// DefaultMaxConcurrentLists list requests in flight, no resync, and errors
// logged.
type Options struct {
	// Scheme is where the Go types' kinds are looked up. Default: a
	// built-in type's own (source.RESTOptions.Scheme). Add a CRD's Go
	// struct to a scheme of your own (scheme.AddKnownTypes) to get
	// informers for it.
	Scheme *runtime.Scheme
	// Mapper maps kinds to resources and scopes. Default: one
	// discovery-based mapper over the config, with a memory cache,
	// shared by every informer of the factory. A kind the mapper does
	// not know makes a mapper that can be reset (meta.ResettableRESTMapper,
	// as the default is) discover again once, so CRDs created later are
	// found.
	Mapper meta.RESTMapper
	// HTTPClient carries every request of the factory's informers.
	// Default: one client made from the config (rest.HTTPClientFor),
	// so all informers share its connections.
	HTTPClient *http.Client
	// MaxConcurrentLists bounds the list requests in flight at once over
	// all informers of the factory: LIST pages, and streaming lists until
	// their initial events have ended. Watches are not bounded. Default
	// (0): DefaultMaxConcurrentLists; a negative value means no bound.
	MaxConcurrentLists int
	// ListLimit, if set, is a bound shared with other factories (the
	// clusters of a fleet): the factory's lists take its permits instead
	// of a bound of their own. MaxConcurrentLists must then be 0.
	ListLimit *ListLimit
	// ResyncPeriod is the typed.Options.ResyncPeriod of every informer.
	// Default: 0, no resync.
	ResyncPeriod time.Duration
	// WarmStart, if set, gives every informer a warm restart from a file
	// of its own in WarmStart.Dir (see WarmStart for those left out); a
	// fleet gives each cluster a directory of its own under it. Default:
	// none, every start lists.
	WarmStart *WarmStart
	// ErrorHandler receives every error the informers recover from, each
	// wrapped in an error naming its informer; see
	// typed.Options.ErrorHandler. Default: errors are logged.
	ErrorHandler func(error)
	// DropAnnotations are annotation keys every informer of the factory
	// over its config drops from the objects before they are decoded
	// (source.RESTOptions.DropAnnotations), such as
	// corev1.LastAppliedConfigAnnotation. Default: none.
	DropAnnotations []string
	// Metrics receives the metrics of every informer of the factory
	// (typed.Options.Metrics), each under its informer's name; package
	// metrics/prometheus exports them. Default: nil, none. A type's
	// Defaults may give its informers other Metrics.
	Metrics metrics.Metrics
	// Transform, if set, runs on every object of every informer of the
	// factory before it enters the cache, before the Transform of the
	// type's Defaults: to drop fields no controller of the program reads,
	// whatever the type. It may modify and return its argument (the
	// factory's sources decode for the informer alone; a fake clientset
	// hands out copies), or return a copy; it must return an object of
	// the type it was given. An error, a panic or an object of another
	// type refuses the object as typed.Options.Transform's would.
	// Default: nil.
	Transform func(Object) (Object, error)
	// FollowDiscovery makes the informers over the config (not those of
	// a registered source or a clientset) follow what the server serves:
	// InformerFor a kind the server does not serve yet (a CRD not
	// installed) returns an informer that waits for it, and an informer
	// whose kind goes away (the CRD deleted) parks rather than retrying.
	// A parked informer reports once, an error wrapping ErrNotServed, and
	// sends no request but one discovery lookup of its group version
	// every DiscoveryInterval, shared by the factory's informers of that
	// group version; once discovery lists the kind again, it lists and
	// watches again and its cache follows the server's. While parked it
	// keeps the objects it had (a CRD's deletion deletes its objects
	// first, so the cache has seen them go), its Status holds the
	// ErrNotServed, and WaitForSync waits on. Release it as any informer:
	// the last release stops it. Default: false, a kind not served fails
	// InformerFor and a removed one is retried with backoff, as NotFound.
	FollowDiscovery bool
	// DiscoveryInterval is how often a parked informer looks its group
	// version up. Default (0): DefaultDiscoveryInterval; it must not be
	// negative.
	DiscoveryInterval time.Duration
}

// Object is what a factory-wide Transform gets and returns: any API
// object, with its metadata and its runtime type.
type Object interface {
	metav1.Object
	runtime.Object
}

// Factory hands out informers shared by type and [Scope], runs them, and
// waits for their sync: two parts of a program that ask for the pods of
// one namespace get the same *typed.Informer and the server sees one
// watch. Create it with [New], get informers with [InformerFor], run them
// with Start.
type Factory struct {
	cfg    *rest.Config
	opts   Options
	mapper meta.RESTMapper
	client *http.Client
	sem    *semaphore.Weighted // nil: no bound

	mu        sync.Mutex
	state     state
	informers map[key]entry
	sources   map[reflect.Type]any // func(Scope) (source.Source[T], error), by T
	defaults  map[reflect.Type]any // typed.Options[T], by T (Defaults)
	followers []*follower
	checks    *discoveryChecks // FollowDiscovery's lookups; nil without it
	// clientsets serve the types without a source (NewForClientsets).
	clientsets []clientset
	group      *errgroup.Group
	ctx        context.Context // Start's group context
}

type state uint8

const (
	idle state = iota
	running
	stopped
)

// entry is a shared informer of any type, as the factory runs and waits
// for it.
type entry interface {
	base() *sharedBase
	name() string
	syncer() typed.Syncer
	view() Informer
	run(ctx context.Context) error
}

// New returns a factory whose informers read from the API server of cfg.
// It makes no request: discovery happens when an informer is asked for.
//
// cfg may be nil; the factory then serves only the types given a source
// with [Register] (in unit tests, a fake clientset's clients), and
// InformerFor fails with ErrNoConfig for any other.
func New(cfg *rest.Config, opts Options) (*Factory, error) {
	f := &Factory{
		cfg: cfg, opts: opts, mapper: opts.Mapper, client: opts.HTTPClient,
		informers: map[key]entry{}, sources: map[reflect.Type]any{}, defaults: map[reflect.Type]any{},
	}
	switch n := opts.MaxConcurrentLists; {
	case opts.ListLimit != nil && n != 0:
		return nil, fmt.Errorf("factory: Options.ListLimit and MaxConcurrentLists %d are both set", n)
	case opts.ListLimit != nil:
		f.sem = opts.ListLimit.sem
	case n == 0:
		f.sem = semaphore.NewWeighted(DefaultMaxConcurrentLists)
	case n > 0:
		f.sem = semaphore.NewWeighted(int64(n))
	}
	if err := opts.WarmStart.check(); err != nil {
		return nil, err
	}
	if opts.DiscoveryInterval < 0 {
		return nil, fmt.Errorf("factory: Options.DiscoveryInterval is %v, want 0 or more", opts.DiscoveryInterval)
	}
	if cfg == nil {
		return f, nil
	}
	if f.client == nil {
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, fmt.Errorf("factory: New: HTTP client: %w", err)
		}
		f.client = hc
	}
	if f.mapper == nil || opts.FollowDiscovery {
		dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, f.client)
		if err != nil {
			return nil, fmt.Errorf("factory: New: discovery client: %w", err)
		}
		if f.mapper == nil {
			f.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
		}
		if opts.FollowDiscovery {
			f.checks = &discoveryChecks{client: dc.RESTClient(), gvs: map[schema.GroupVersion]*gvCheck{}}
		}
	}
	return f, nil
}

// Start runs every informer of the factory, and every informer asked for
// later (at once), until ctx ends; it then stops them all, waits for their
// goroutines and returns nil. If an informer cannot go on (its Run returns
// an error, such as a field selector the server refuses), Start stops the
// others and returns that error. A factory runs once, as an informer does:
// Start returns typed.ErrRunning while it runs and typed.ErrStopped after.
//
// Do not call Run on an informer of the factory: Start runs it.
func (f *Factory) Start(ctx context.Context) error {
	f.mu.Lock()
	switch f.state {
	case running:
		f.mu.Unlock()
		return typed.ErrRunning
	case stopped:
		f.mu.Unlock()
		return typed.ErrStopped
	}
	g, gctx := errgroup.WithContext(ctx)
	f.group, f.ctx, f.state = g, gctx, running
	for _, e := range f.informers {
		f.startLocked(e)
	}
	// The keeper holds the group open until ctx ends, so that informers
	// asked for later can join it, and closes it to newcomers under mu
	// before it returns.
	g.Go(func() error {
		<-gctx.Done()
		f.mu.Lock()
		f.state = stopped
		f.mu.Unlock()
		return nil
	})
	f.mu.Unlock()

	err := g.Wait()
	f.mu.Lock()
	f.state = stopped
	f.informers = map[key]entry{} // let the caches go with their last user
	f.group, f.ctx = nil, nil
	f.mu.Unlock()
	return err
}

// startLocked runs e in the group under a context of its own, which its
// last release cancels. f.mu is held and the factory is running.
func (f *Factory) startLocked(e entry) {
	ctx, cancel := context.WithCancel(f.ctx)
	e.base().cancel = cancel
	f.group.Go(func() error {
		defer cancel()
		return e.run(ctx)
	})
}

// WaitForSync waits, at the same time, for every informer the factory has
// when it is called, and returns nil once each has its initial list, or an
// error that names every informer that did not sync and says why (its
// *typed.NotSyncedError: Forbidden, NotFound, or ctx's end with the last
// error). Each wait ends as typed.Informer.WaitForSync says: at once on an
// error that needs someone to act, such as Forbidden.
//
// It may be called before Start (go f.Start(ctx); f.WaitForSync(ctx)): the
// informers sync once started. It returns typed.ErrStopped once Start has
// returned.
func (f *Factory) WaitForSync(ctx context.Context) error {
	f.mu.Lock()
	if f.state == stopped {
		f.mu.Unlock()
		return typed.ErrStopped
	}
	entries := make([]entry, 0, len(f.informers))
	for _, e := range f.informers {
		entries = append(entries, e)
	}
	f.mu.Unlock()
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(a.name(), b.name()) })
	syncers := make([]typed.Syncer, len(entries))
	for i, e := range entries {
		syncers[i] = e.syncer()
	}
	if err := typed.WaitForCacheSync(ctx, syncers...); err != nil {
		return fmt.Errorf("factory: informers not synced:\n%w", err)
	}
	return nil
}

// discoveryInterval is Options.DiscoveryInterval or its default.
func (f *Factory) discoveryInterval() time.Duration {
	if f.opts.DiscoveryInterval > 0 {
		return f.opts.DiscoveryInterval
	}
	return DefaultDiscoveryInterval
}
