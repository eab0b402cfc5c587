package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/reconcile"
)

// Reconciler brings one cluster's world in line with the cached state of
// one of its objects. Reconcile gets the object's key with its cluster,
// reads the object from the cluster's lister (Informer.Cluster, or
// Informer.Get with the key) and returns as reconcile.Reconciler does:
// nil, reconcile.RequeueAfter, reconcile.Terminal or an error to retry.
type Reconciler interface {
	Reconcile(ctx context.Context, key Key) error
}

// ReconcileFunc adapts a function to a Reconciler.
type ReconcileFunc func(ctx context.Context, key Key) error

// Reconcile calls f.
func (f ReconcileFunc) Reconcile(ctx context.Context, key Key) error { return f(ctx, key) }

// ControllerOptions configures NewController. The zero value is ready to
// use.
type ControllerOptions[T cache.Object] struct {
	// Controller configures the controller of every cluster
	// (reconcile.Options: workers, retries, predicates, periodic
	// reconciles). Its Name defaults to the cluster's name and the
	// informer's; its ErrorHandler to the fleet's, with the cluster's
	// name. It may not have Watches or a Trigger, which belong to one
	// cluster: set ForCluster instead. Default: reconcile's defaults.
	Controller reconcile.Options[T]
	// ForCluster, if set, gives the options of the named cluster's
	// controller, in place of Controller: Watches of that cluster's
	// informers (Informer.Cluster of another fleet informer), a Trigger
	// of its own. An error (such as another informer not made in the
	// cluster yet) is reported for the cluster and the call retried with
	// backoff, as an informer the cluster cannot make yet is.
	ForCluster func(cluster string) (reconcile.Options[T], error)
}

// Controller reconciles the objects of a fleet informer in every engaged
// cluster: each cluster has a reconcile.Controller of its own, with its
// own queue and workers, started when its informer is made and stopped,
// its reconciles drained, when the cluster is disengaged or the fleet
// stops. A cluster whose reconciles fail or hang slows no other.
type Controller[T cache.Object] struct {
	inf  *Informer[T]
	r    Reconciler
	opts ControllerOptions[T]
	errs func(cluster string, err error)

	mu       sync.Mutex
	clusters map[string]*run[T]
}

// run is a controller running in one cluster.
type run[T cache.Object] struct {
	ctl    *reconcile.Controller[T]
	cancel context.CancelFunc
	done   chan struct{}
}

// NewController returns a controller that calls r with the keys, and
// clusters, of inf's changes in every cluster of fl, engaged now or later.
// It runs with the fleet: call it before or while fl runs, and the fleet's
// Run starts and stops it. inf must be an informer of fl. It fails for a
// nil fleet, informer or reconciler, for Controller options with Watches
// or a Trigger, and for options reconcile.New refuses.
func NewController[T cache.Object](fl *Fleet, inf *Informer[T], r Reconciler, opts ControllerOptions[T]) (*Controller[T], error) {
	switch {
	case fl == nil:
		return nil, ErrNil
	case inf == nil:
		return nil, fmt.Errorf("%w: informer", ErrNil)
	case r == nil:
		return nil, fmt.Errorf("%w: reconciler", ErrNil)
	case len(opts.Controller.Watches) > 0 || opts.Controller.Trigger != nil:
		return nil, fmt.Errorf("%w: ControllerOptions.Controller has Watches or a Trigger, which belong to one cluster: give them in ForCluster", reconcile.ErrBadOptions)
	}
	if !fl.hasMember(inf) {
		return nil, errors.New("fleet: NewController: the informer is not one of this fleet's")
	}
	if err := opts.Controller.Validate(); err != nil {
		return nil, err
	}
	c := &Controller[T]{inf: inf, r: r, opts: opts, errs: fl.opts.ErrorHandler, clusters: map[string]*run[T]{}}
	if err := fl.addMember(c); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller[T]) attach(*cluster) {}

// engage starts the controller of cl, once the fleet informer has its
// informer there.
func (c *Controller[T]) engage(ctx context.Context, cl *cluster) error {
	name := cl.name
	c.mu.Lock()
	started := c.clusters[name] != nil
	c.mu.Unlock()
	if started {
		return nil
	}
	in, ok := c.inf.Cluster(name)
	if !ok {
		return errors.New("controller: its informer is not made in the cluster yet")
	}
	opts := c.opts.Controller
	if c.opts.ForCluster != nil {
		var err error
		if opts, err = c.opts.ForCluster(name); err != nil {
			return fmt.Errorf("controller options: %w", err)
		}
	}
	if opts.Name == "" {
		opts.Name = name + "/" + in.Name()
	}
	if opts.ErrorHandler == nil {
		opts.ErrorHandler = func(err error) { c.errs(name, err) }
	}
	ctl, err := reconcile.New(in, reconcile.Func(func(ctx context.Context, k cache.Key) error {
		return c.r.Reconcile(ctx, Key{Cluster: name, Key: k})
	}), opts)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	rn := &run[T]{ctl: ctl, cancel: cancel, done: make(chan struct{})}
	c.mu.Lock()
	c.clusters[name] = rn
	c.mu.Unlock()
	go func() {
		defer close(rn.done)
		if err := ctl.Run(ctx); err != nil && ctx.Err() == nil {
			c.errs(name, fmt.Errorf("fleet: cluster %q: controller %s stopped: %w", name, ctl.Name(), err))
		}
	}()
	return nil
}

// disengage stops the controller of cl and waits for it to drain.
func (c *Controller[T]) disengage(cl *cluster) {
	c.mu.Lock()
	rn := c.clusters[cl.name]
	delete(c.clusters, cl.name)
	c.mu.Unlock()
	if rn == nil {
		return
	}
	rn.cancel()
	<-rn.done
}

// Cluster returns the controller of the named cluster, for its Status,
// and whether there is one: none for a cluster not engaged, or whose
// informer is not made yet.
func (c *Controller[T]) Cluster(name string) (*reconcile.Controller[T], bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rn := c.clusters[name]; rn != nil {
		return rn.ctl, true
	}
	return nil, false
}
