package factory

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// DefaultServedInterval is how often Served reads discovery by default.
const DefaultServedInterval = 5 * time.Second

// ServedOptions configures NewServed.
type ServedOptions struct {
	// Include reports whether to follow a resource. Default: every
	// resource discovery lists with the list and watch verbs, in its
	// group's preferred version.
	Include func(schema.GroupVersionResource) bool
	// Interval is how often discovery is read, with a tenth of jitter.
	// Default (0): DefaultServedInterval.
	Interval time.Duration
	// Added is called with the informer of a resource that appeared,
	// before the informer runs: add handlers and indexes there. Called
	// from Run's goroutine, one call at a time. Default: none.
	Added func(schema.GroupVersionResource, *typed.Informer[*metav1.PartialObjectMetadata])
	// Removed is called once the informer of a resource that went away
	// has stopped. Default: none.
	Removed func(schema.GroupVersionResource)
	// Informer is the options of every informer; its Name is set per
	// resource. Default: its zero value, with the factory's ErrorHandler.
	Informer typed.Options[*metav1.PartialObjectMetadata]
	// ErrorHandler receives the errors of discovery reads (a group whose
	// discovery failed keeps its informers). Default: the factory's
	// ErrorHandler.
	ErrorHandler func(error)
}

// Served runs a metadata informer (names, labels, annotations and owner
// references, no specs) for every resource a cluster serves, as a cluster
// cache of a fleet manager does: a resource that appears (a CRD
// installed) gets an informer, one that goes away has its informer stopped
// and removed. The informers list under the factory's bound on
// concurrent lists. Create it with NewServed and Run it.
type Served struct {
	f    *Factory
	opts ServedOptions
	dc   discovery.DiscoveryInterface
	md   metadata.Interface

	mu      sync.Mutex
	running map[schema.GroupVersionResource]*servedInformer
}

type servedInformer struct {
	inf    *typed.Informer[*metav1.PartialObjectMetadata]
	cancel context.CancelFunc
	done   chan struct{}
}

// NewServed returns the follower of f's cluster. It fails for a nil
// factory, one made without a config (ErrNoConfig), and a negative
// Interval.
func NewServed(f *Factory, opts ServedOptions) (*Served, error) {
	switch {
	case f == nil:
		return nil, errors.New("factory: NewServed: nil factory")
	case f.cfg == nil:
		return nil, fmt.Errorf("factory: NewServed needs a factory over a rest.Config: %w", ErrNoConfig)
	case opts.Interval < 0:
		return nil, fmt.Errorf("factory: ServedOptions.Interval is %v, want 0 or more", opts.Interval)
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultServedInterval
	}
	if opts.ErrorHandler == nil {
		opts.ErrorHandler = f.opts.ErrorHandler
	}
	if opts.Informer.ErrorHandler == nil {
		opts.Informer.ErrorHandler = f.opts.ErrorHandler
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(f.cfg, f.client)
	if err != nil {
		return nil, fmt.Errorf("factory: NewServed: discovery client: %w", err)
	}
	md, err := metadata.NewForConfigAndClient(f.cfg, f.client)
	if err != nil {
		return nil, fmt.Errorf("factory: NewServed: metadata client: %w", err)
	}
	return &Served{f: f, opts: opts, dc: dc, md: md, running: map[schema.GroupVersionResource]*servedInformer{}}, nil
}

// Run reads discovery every Interval and starts and stops informers to
// match, until ctx ends; then it stops them all (calling Removed for
// each) and returns nil.
func (s *Served) Run(ctx context.Context) error {
	defer s.stopAll()
	for {
		s.sync(ctx)
		t := time.NewTimer(s.opts.Interval + time.Duration(rand.Int64N(int64(s.opts.Interval)/10+1)))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// Informers returns the informers running now, by resource.
func (s *Served) Informers() map[schema.GroupVersionResource]*typed.Informer[*metav1.PartialObjectMetadata] {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[schema.GroupVersionResource]*typed.Informer[*metav1.PartialObjectMetadata], len(s.running))
	for gvr, si := range s.running {
		out[gvr] = si.inf
	}
	return out
}

// sync starts the informers of resources served now and not followed
// yet, and stops those of resources no longer served. A group whose
// discovery failed keeps its informers.
func (s *Served) sync(ctx context.Context) {
	served, failed, err := s.served()
	if err != nil {
		s.report(err)
		if served == nil {
			return
		}
	}
	s.mu.Lock()
	gone := slices.Collect(maps.Keys(s.running))
	s.mu.Unlock()
	for _, gvr := range gone {
		if _, ok := served[gvr]; !ok && !failed[gvr.GroupVersion()] && !failed[schema.GroupVersion{Group: gvr.Group}] {
			s.stop(gvr)
		}
	}
	for _, gvr := range slices.SortedFunc(maps.Keys(served), func(a, b schema.GroupVersionResource) int {
		return strings.Compare(a.String(), b.String())
	}) {
		s.mu.Lock()
		_, ok := s.running[gvr]
		s.mu.Unlock()
		if !ok && ctx.Err() == nil {
			s.start(ctx, gvr, served[gvr])
		}
	}
}

// served reads discovery: the resources to follow and their scopes, and
// the group versions whose discovery failed.
func (s *Served) served() (map[schema.GroupVersionResource]cache.Scope, map[schema.GroupVersion]bool, error) {
	lists, err := s.dc.ServerPreferredResources()
	failed := map[schema.GroupVersion]bool{}
	if err != nil {
		var gde *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &gde) && len(lists) == 0 {
			return nil, nil, fmt.Errorf("factory: Served: discovery: %w", err)
		}
		if gde != nil {
			for gv := range gde.Groups {
				failed[gv] = true
			}
		}
		err = fmt.Errorf("factory: Served: discovery, partly (their informers are kept): %w", err)
	}
	out := map[schema.GroupVersionResource]cache.Scope{}
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "watch") {
				continue // a subresource, or not for informers
			}
			gvr := gv.WithResource(r.Name)
			if s.opts.Include != nil && !s.opts.Include(gvr) {
				continue
			}
			out[gvr] = cache.ScopeCluster
			if r.Namespaced {
				out[gvr] = cache.ScopeNamespaced
			}
		}
	}
	return out, failed, err
}

func (s *Served) start(ctx context.Context, gvr schema.GroupVersionResource, scope cache.Scope) {
	src, err := source.FromMetadata(s.md, gvr, source.DynamicOptions{Scope: scope})
	if err != nil {
		s.report(fmt.Errorf("factory: Served: %v: %w", gvr, err))
		return
	}
	opts := s.opts.Informer
	opts.Name = ""
	inf, err := typed.NewInformer(limit(src, s.f.sem), opts)
	if err != nil {
		s.report(fmt.Errorf("factory: Served: %v: %w", gvr, err))
		return
	}
	if s.opts.Added != nil {
		s.opts.Added(gvr, inf)
	}
	ictx, cancel := context.WithCancel(ctx)
	si := &servedInformer{inf: inf, cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	s.running[gvr] = si
	s.mu.Unlock()
	go func() {
		defer close(si.done)
		if err := inf.Run(ictx); err != nil {
			s.report(fmt.Errorf("factory: Served: %v: %w", gvr, err))
		}
	}()
}

func (s *Served) stop(gvr schema.GroupVersionResource) {
	s.mu.Lock()
	si := s.running[gvr]
	delete(s.running, gvr)
	s.mu.Unlock()
	if si == nil {
		return
	}
	si.cancel()
	<-si.done
	if s.opts.Removed != nil {
		s.opts.Removed(gvr)
	}
}

func (s *Served) stopAll() {
	s.mu.Lock()
	all := slices.Collect(maps.Keys(s.running))
	s.mu.Unlock()
	for _, gvr := range all {
		s.stop(gvr)
	}
}

func (s *Served) report(err error) {
	if s.opts.ErrorHandler != nil {
		s.opts.ErrorHandler(err)
		return
	}
	klog.Background().Error(err, "following served resources")
}
