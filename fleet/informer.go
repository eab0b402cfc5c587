package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/typed"
)

// Key identifies an object in a fleet: its cluster and its key there.
type Key struct {
	Cluster string
	cache.Key
}

// String is "cluster/namespace/name", or "cluster/name" for a
// cluster-scoped object.
func (k Key) String() string { return k.Cluster + "/" + k.Key.String() }

// Item is an object and the cluster it is from.
type Item[T cache.Object] struct {
	Cluster string
	Object  T
}

// Handler receives the changes to a fleet informer's objects, each with
// the cluster it happened in. The calls for one cluster come from one
// goroutine, in order (as handler.Handler's); calls for different
// clusters may overlap.
type Handler[T cache.Object] interface {
	OnAdd(cluster string, obj T, isInInitialList bool)
	OnUpdate(cluster string, oldObj, newObj T)
	OnDelete(cluster string, d handler.Deleted[T])
}

// HandlerFuncs is a Handler from functions; a nil one ignores its calls.
type HandlerFuncs[T cache.Object] struct {
	AddFunc    func(cluster string, obj T, isInInitialList bool)
	UpdateFunc func(cluster string, oldObj, newObj T)
	DeleteFunc func(cluster string, d handler.Deleted[T])
}

// OnAdd calls AddFunc if set.
func (h HandlerFuncs[T]) OnAdd(cluster string, obj T, initial bool) {
	if h.AddFunc != nil {
		h.AddFunc(cluster, obj, initial)
	}
}

// OnUpdate calls UpdateFunc if set.
func (h HandlerFuncs[T]) OnUpdate(cluster string, oldObj, newObj T) {
	if h.UpdateFunc != nil {
		h.UpdateFunc(cluster, oldObj, newObj)
	}
}

// OnDelete calls DeleteFunc if set.
func (h HandlerFuncs[T]) OnDelete(cluster string, d handler.Deleted[T]) {
	if h.DeleteFunc != nil {
		h.DeleteFunc(cluster, d)
	}
}

// Informer is a typed informer over every engaged cluster of a fleet: one
// factory informer of T in the scope it was asked for in each cluster,
// made when the cluster starts, released when it is disengaged.
type Informer[T cache.Object] struct {
	scope factory.Scope

	mu       sync.RWMutex
	clusters map[string]*slot[T]
	handlers []Handler[T]
	attached chan struct{} // closed, and replaced, when a cluster is attached; nil until one waits
}

// slot is an informer's place in one engaged cluster.
type slot[T cache.Object] struct {
	inf     *typed.Informer[T] // nil until made
	release func()
	lastErr error         // why it could not be made, until it is
	made    chan struct{} // closed once inf is set, or the cluster disengaged
}

// InformerFor returns a fleet informer of T in scope s: the informer of T
// in s of each engaged cluster's factory (factory.InformerFor), now and
// for each cluster engaged later. Two calls give two fleet informers over
// the same shared informers of the clusters. The informers are made when
// the fleet runs: an informer a cluster cannot make yet (its discovery
// fails) is reported for that cluster and tried again, with backoff.
func InformerFor[T cache.Object](fl *Fleet, s factory.Scope) (*Informer[T], error) {
	if fl == nil {
		return nil, ErrNil
	}
	inf := &Informer[T]{scope: s, clusters: map[string]*slot[T]{}}
	if err := fl.addMember(inf); err != nil {
		return nil, err
	}
	return inf, nil
}

func (inf *Informer[T]) attach(c *cluster) {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if inf.clusters[c.name] == nil {
		inf.clusters[c.name] = &slot[T]{made: make(chan struct{})}
		if inf.attached != nil {
			close(inf.attached)
			inf.attached = nil
		}
	}
}

func (inf *Informer[T]) engage(_ context.Context, c *cluster) error {
	in, release, err := factory.InformerFor[T](c.factory, inf.scope)
	inf.mu.Lock()
	defer inf.mu.Unlock()
	sl := inf.clusters[c.name]
	if sl == nil || sl.inf != nil { // disengaged meanwhile, or made already
		if release != nil {
			release()
		}
		return nil
	}
	if err != nil {
		sl.lastErr = err
		return err
	}
	for _, h := range inf.handlers {
		if _, err := in.AddHandler(bind(c.name, h)); err != nil {
			release()
			sl.lastErr = err
			return err
		}
	}
	sl.inf, sl.release, sl.lastErr = in, release, nil
	close(sl.made)
	return nil
}

func (inf *Informer[T]) disengage(c *cluster) {
	inf.mu.Lock()
	sl := inf.clusters[c.name]
	delete(inf.clusters, c.name)
	inf.mu.Unlock()
	if sl == nil {
		return
	}
	if sl.inf == nil {
		close(sl.made)
		return
	}
	sl.release()
}

// bind is h for the informer of one cluster.
func bind[T cache.Object](cluster string, h Handler[T]) handler.Handler[T] {
	return handler.Funcs[T]{
		AddFunc:    func(obj T, initial bool) { h.OnAdd(cluster, obj, initial) },
		UpdateFunc: func(o, n T) { h.OnUpdate(cluster, o, n) },
		DeleteFunc: func(d handler.Deleted[T]) { h.OnDelete(cluster, d) },
	}
}

// AddHandler adds h to the informer of every engaged cluster, and of each
// cluster engaged later; each cluster's informer gives it its objects
// first, as typed.Informer.AddHandler does.
func (inf *Informer[T]) AddHandler(h Handler[T]) error {
	if h == nil {
		return fmt.Errorf("%w: handler", ErrNil)
	}
	inf.mu.Lock()
	defer inf.mu.Unlock()
	for name, sl := range inf.clusters {
		if sl.inf == nil {
			continue // gets the handler when made
		}
		if _, err := sl.inf.AddHandler(bind(name, h)); err != nil {
			return fmt.Errorf("fleet: cluster %q: %w", name, err)
		}
	}
	inf.handlers = append(inf.handlers, h)
	return nil
}

// Cluster returns the informer of T of the named cluster, and whether
// there is one: a view of one cluster, with its own lister, status and
// sync. There is none for a cluster not engaged, and none yet for one
// engaged before the fleet runs or whose discovery has not answered
// (WaitForCluster waits for it). Do not Run it; the fleet does.
func (inf *Informer[T]) Cluster(name string) (*typed.Informer[T], bool) {
	inf.mu.RLock()
	defer inf.mu.RUnlock()
	if sl := inf.clusters[name]; sl != nil && sl.inf != nil {
		return sl.inf, true
	}
	return nil, false
}

// WaitForCluster waits until the named cluster is engaged (a provider may
// engage it later) and has its informer of T, and returns the informer
// once it has synced. It returns nil and an error if the cluster is
// disengaged while it waits, or if ctx ends first: wrapping
// ErrUnknownCluster if the cluster was never engaged, or with the reason
// the informer could not be made, or its sync error.
func (inf *Informer[T]) WaitForCluster(ctx context.Context, name string) (*typed.Informer[T], error) {
	var sl *slot[T]
	for sl == nil {
		inf.mu.Lock()
		sl = inf.clusters[name]
		if sl == nil && inf.attached == nil {
			inf.attached = make(chan struct{})
		}
		attached := inf.attached
		inf.mu.Unlock()
		if sl != nil {
			break
		}
		select {
		case <-attached:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %q, while waiting for it: %w", ErrUnknownCluster, name, ctx.Err())
		}
	}
	if err := sl.wait(ctx, inf, name); err != nil {
		return nil, err
	}
	return sl.inf, nil
}

// wait waits for sl's informer to be made and synced.
func (sl *slot[T]) wait(ctx context.Context, inf *Informer[T], name string) error {
	select {
	case <-sl.made:
	case <-ctx.Done():
		inf.mu.RLock()
		last := sl.lastErr
		inf.mu.RUnlock()
		if last != nil {
			return fmt.Errorf("cluster %q: no informer: %w (and %w)", name, last, ctx.Err())
		}
		return fmt.Errorf("cluster %q: no informer yet: %w", name, ctx.Err())
	}
	if sl.inf == nil {
		return fmt.Errorf("%w: %q (disengaged)", ErrUnknownCluster, name)
	}
	if err := sl.inf.WaitForSync(ctx); err != nil {
		return fmt.Errorf("cluster %q: %w", name, err)
	}
	return nil
}

// Clusters returns the names of the engaged clusters, those whose
// informer is not made yet included, sorted.
func (inf *Informer[T]) Clusters() []string {
	inf.mu.RLock()
	defer inf.mu.RUnlock()
	names := make([]string, 0, len(inf.clusters))
	for n := range inf.clusters {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Get returns the object of key k, from the cache of k's cluster. A
// cluster that is not engaged, or an object it does not have, is a
// NotFound error.
func (inf *Informer[T]) Get(k Key) (T, error) {
	in, ok := inf.Cluster(k.Cluster)
	if !ok {
		var zero T
		return zero, apierrors.NewNotFound(schema.GroupResource{}, k.String())
	}
	if k.Namespace == "" {
		return in.Lister().Get(k.Name)
	}
	return in.Lister().Namespace(k.Namespace).Get(k.Name)
}

// List returns the objects the selector matches in every engaged cluster,
// in the order of the clusters' names (a nil selector matches all).
func (inf *Informer[T]) List(selector labels.Selector) ([]Item[T], error) {
	return inf.list(selector, func(in *typed.Informer[T], sel labels.Selector) ([]T, error) { return in.Lister().List(sel) })
}

// ListNamespace is List in one namespace of every cluster.
func (inf *Informer[T]) ListNamespace(namespace string, selector labels.Selector) ([]Item[T], error) {
	return inf.list(selector, func(in *typed.Informer[T], sel labels.Selector) ([]T, error) {
		return in.Lister().Namespace(namespace).List(sel)
	})
}

func (inf *Informer[T]) list(selector labels.Selector, list func(*typed.Informer[T], labels.Selector) ([]T, error)) ([]Item[T], error) {
	if selector == nil {
		selector = labels.Everything()
	}
	var out []Item[T]
	for _, name := range inf.Clusters() {
		in, ok := inf.Cluster(name)
		if !ok {
			continue // disengaged meanwhile
		}
		objs, err := list(in, selector)
		if err != nil {
			return nil, fmt.Errorf("fleet: cluster %q: %w", name, err)
		}
		for _, o := range objs {
			out = append(out, Item[T]{Cluster: name, Object: o})
		}
	}
	return out, nil
}

// HasSynced reports whether every engaged cluster has its informer and
// the informer has its initial list. One cluster that cannot sync keeps
// it false: wait per cluster (WaitForCluster) where one must not wait for
// all.
func (inf *Informer[T]) HasSynced() bool {
	inf.mu.RLock()
	defer inf.mu.RUnlock()
	for _, sl := range inf.clusters {
		if sl.inf == nil || !sl.inf.HasSynced() {
			return false
		}
	}
	return true
}

// WaitForSync waits, at the same time, for every cluster engaged when it
// is called to have its informer of T synced, and returns nil once each
// has, or an error naming every cluster that has not and why (its
// *typed.NotSyncedError, or why its informer could not be made). A
// cluster disengaged meanwhile is not waited for.
func (inf *Informer[T]) WaitForSync(ctx context.Context) error {
	inf.mu.RLock()
	waits := make(map[string]*slot[T], len(inf.clusters))
	for n, sl := range inf.clusters {
		waits[n] = sl
	}
	inf.mu.RUnlock()
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for name, sl := range waits {
		wg.Go(func() {
			err := sl.wait(ctx, inf, name)
			if err == nil || errors.Is(err, ErrUnknownCluster) || errors.Is(err, typed.ErrStopped) && !inf.has(name, sl) {
				return
			}
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(errs) == 0 {
		return nil
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return fmt.Errorf("fleet: not synced: %w", errors.Join(errs...))
}

// has reports whether sl is still the named cluster's slot.
func (inf *Informer[T]) has(name string, sl *slot[T]) bool {
	inf.mu.RLock()
	defer inf.mu.RUnlock()
	return inf.clusters[name] == sl
}
