package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/reconcile"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

var podsResource = schema.GroupResource{Resource: "pods"}

// byNode is the name of the index of pods by the node they run on.
const byNode = "node"

func indexByNode(p *corev1.Pod) ([]string, error) {
	if p.Spec.NodeName == "" {
		return nil, nil
	}
	return []string{p.Spec.NodeName}, nil
}

// controller is the demo's typed controller.
type controller struct {
	cfg        config
	inf        *typed.Informer[*corev1.Pod]
	reg        *typed.Registration
	loop       *reconcile.Controller[*corev1.Pod]
	initial    atomic.Int64
	adds       atomic.Int64
	updates    atomic.Int64
	deletes    atomic.Int64
	unknown    atomic.Int64 // deletions inferred by a relist
	reconciles atomic.Int64
	logged     atomic.Int64
}

func newController(src source.Source[*corev1.Pod], cfg config) (*controller, error) {
	inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{
		// Pods live in namespaces: the lister refuses a lookup without one.
		Scope:        cache.ScopeNamespaced,
		Indexers:     cache.Indexers[*corev1.Pod]{byNode: indexByNode},
		LabelIndexes: []string{"app"},
		ErrorHandler: func(err error) { fmt.Println("error:", err) },
	})
	if err != nil {
		return nil, err
	}
	c := &controller{cfg: cfg, inf: inf}
	if c.reg, err = inf.AddHandler(c.handler()); err != nil {
		return nil, err
	}
	// The reconcile loop: workers, retries with backoff, initial-list keys
	// behind live changes, a drain on shutdown. Resyncs and relists of
	// unchanged pods reconcile nothing.
	c.loop, err = reconcile.New(inf, reconcile.Func(c.reconcile), reconcile.Options[*corev1.Pod]{
		Workers:      cfg.workers,
		Predicates:   []reconcile.Predicate[*corev1.Pod]{reconcile.IgnoreResync[*corev1.Pod]()},
		ErrorHandler: func(err error) { fmt.Println("reconcile error:", err) },
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// reconcile is the controller's reconciler: it reads the pod from the
// lister, typed, and counts it. An error would retry the key with backoff.
func (c *controller) reconcile(_ context.Context, key cache.Key) error {
	c.reconciles.Add(1)
	p, err := c.inf.Lister().Namespace(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil // deleted: nothing to reconcile
	} else if err != nil {
		return err
	}
	_ = p.Spec.NodeName // a real controller would act on the typed pod here
	return nil
}

// handler logs a sample of typed events.
func (c *controller) handler() handler.Funcs[*corev1.Pod] {
	return handler.Funcs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, initial bool) {
			if initial {
				c.initial.Add(1)
			} else {
				c.adds.Add(1)
				c.log("ADD     %s/%s on %s (%s)", p.Namespace, p.Name, nodeOf(p), p.Status.Phase)
			}
		},
		UpdateFunc: func(old, cur *corev1.Pod) {
			c.updates.Add(1)
			if old.Status.Phase != cur.Status.Phase {
				c.log("UPDATE  %s/%s phase %s -> %s", cur.Namespace, cur.Name, old.Status.Phase, cur.Status.Phase)
			}
		},
		DeleteFunc: func(d handler.Deleted[*corev1.Pod]) {
			c.deletes.Add(1)
			if d.FinalStateUnknown {
				c.unknown.Add(1)
			}
			c.log("DELETE  %v (final state unknown: %v)", d.Key, d.FinalStateUnknown)
		},
	}
}

func nodeOf(p *corev1.Pod) string {
	if p.Spec.NodeName == "" {
		return "<unscheduled>"
	}
	return p.Spec.NodeName
}

func (c *controller) log(format string, args ...any) {
	if c.cfg.verbose || c.logged.Add(1) <= 25 {
		fmt.Printf(format+"\n", args...)
	}
}

// run runs the informer and the reconcile loop until ctx ends. It waits
// for the cache and the handler to sync, showing progress, then prints
// lister queries every few seconds and a summary at the end. It returns
// nil when ctx ends after the sync, the sync error if the sync fails, and
// the informer's error if Run fails, which ends everything at once.
func (c *controller) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Everything below runs on the group's context: if Run fails, the sync
	// wait, the report loop and the workers end at once and g.Wait
	// returns Run's error.
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return c.inf.Run(ctx) })

	start := time.Now()
	if err := c.waitForSync(ctx); err != nil {
		cancel()
		if runErr := g.Wait(); runErr != nil {
			return runErr // why the sync did not finish
		}
		return fmt.Errorf("pods cache: %w", err)
	}
	fmt.Printf("synced %d pods in %v at resourceVersion %s\n",
		c.inf.Store().Len(), time.Since(start).Round(time.Millisecond), c.inf.LastSyncResourceVersion())
	c.lookup()
	c.report()

	// The loop drains when ctx ends: reconciles in progress finish.
	g.Go(func() error { return c.loop.Run(ctx) })
	c.reportEvery(ctx, 3*time.Second)
	if err := g.Wait(); err != nil {
		return err
	}
	c.summary()
	return nil
}

// reportEvery prints the lister queries at every period until ctx ends.
func (c *controller) reportEvery(ctx context.Context, period time.Duration) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			c.report()
		}
	}
}

// waitForSync waits until the initial list is in the cache and the handler
// has seen all of it, printing progress meanwhile.
func (c *controller) waitForSync(ctx context.Context) error {
	done := make(chan struct{})
	var progress sync.WaitGroup
	progress.Go(func() { c.showProgress(done) })
	defer progress.Wait()
	defer close(done)
	return typed.WaitForCacheSync(ctx, c.inf, c.reg)
}

// showProgress prints where the sync is until done is closed. The cache
// takes the whole list at once; the handler then works through it.
func (c *controller) showProgress(done <-chan struct{}) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			line := fmt.Sprintf("waiting for sync: %d pods cached, %d handled",
				c.inf.Store().Len(), c.initial.Load())
			if err := c.inf.Status().LastError; err != nil {
				line += fmt.Sprintf(" (retrying after: %v)", err)
			}
			fmt.Println(line)
		}
	}
}

// lookup shows a typed Get of one cached pod and, once, the error of the
// same Get without its namespace: pods are namespaced, so that lookup can
// never find anything and the lister says so instead of "not found".
func (c *controller) lookup() {
	var first cache.Key
	for k := range c.inf.Store().All() {
		if first.Name == "" || k.String() < first.String() {
			first = k
		}
	}
	if first.Name == "" {
		return
	}
	p, err := c.inf.Lister().Namespace(first.Namespace).Get(first.Name)
	if err != nil {
		fmt.Printf("lookup: Namespace(%q).Get(%q): %v\n", first.Namespace, first.Name, err)
	} else {
		fmt.Printf("lookup: Namespace(%q).Get(%q): on %s, %s, labels %v\n",
			first.Namespace, first.Name, nodeOf(p), p.Status.Phase, p.Labels)
	}
	if _, err := c.inf.Lister().Get(first.Name); err != nil {
		fmt.Printf("lookup: Get(%q): %v\n", first.Name, err)
	}
}

// report answers a few lister queries, all typed: the app label selector
// and the namespace are answered from their indexes, the per-node counts
// from the custom index.
func (c *controller) report() {
	web, _ := c.inf.Lister().List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	store := c.inf.Store()
	nodes, _ := store.IndexValues(byNode)
	perNode := make([]string, 0, len(nodes))
	for _, n := range nodes {
		pods, err := store.ByIndex(byNode, n)
		if err == nil {
			perNode = append(perNode, fmt.Sprintf("%s=%d", n, len(pods)))
		}
	}
	shop, _ := c.inf.Lister().Namespace("shop").List(labels.Everything())
	fmt.Printf("query: %d pods cached, %d with app=web, by node [%s], %d in namespace shop, queue depth %d\n",
		store.Len(), len(web), strings.Join(perNode, " "), len(shop), c.loop.Len())
}

// summary prints what the handler and the workers did, and what the
// informer asked of its source.
func (c *controller) summary() {
	c.report()
	fmt.Printf("events: %d initial adds, %d adds, %d updates, %d deletes (%d inferred by a relist); %d reconciles\n",
		c.initial.Load(), c.adds.Load(), c.updates.Load(), c.deletes.Load(), c.unknown.Load(), c.reconciles.Load())
	st := c.inf.Status()
	fmt.Printf("source: %d lists, %d streaming lists, %d watches, %d relists, %d events, %d bookmarks, %d errors recovered\n",
		st.Stats.Lists, st.Stats.WatchLists, st.Stats.Watches, st.Stats.Relists, st.Stats.Events, st.Stats.Bookmarks, st.Stats.Errors)
	if st.LastError != nil {
		fmt.Printf("source: unhealthy since %v: %v\n", st.StaleSince.Format(time.TimeOnly), st.LastError)
	}
}
