package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
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
	cfg      config
	inf      *typed.Informer[*corev1.Pod]
	queue    workqueue.TypedRateLimitingInterface[cache.Key]
	initial  atomic.Int64
	adds     atomic.Int64
	updates  atomic.Int64
	deletes  atomic.Int64
	unknown  atomic.Int64 // deletions inferred by a relist
	reconcil atomic.Int64
	logged   atomic.Int64
}

func newController(src source.Source[*corev1.Pod], cfg config) (*controller, error) {
	c := &controller{cfg: cfg}
	c.inf = typed.NewInformer(src, typed.Options[*corev1.Pod]{
		Resource: podsResource,
		Indexers: cache.Indexers[*corev1.Pod]{
			byNode:                      indexByNode,
			cache.LabelIndexName("app"): cache.IndexByLabel[*corev1.Pod]("app"),
		},
		ErrorHandler: func(err error) { fmt.Println("error:", err) },
	})
	c.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.Key]())
	if _, err := c.inf.AddHandler(c.handler()); err != nil {
		return nil, err
	}
	return c, nil
}

// handler logs a sample of typed events and enqueues every key.
func (c *controller) handler() handler.Funcs[*corev1.Pod] {
	enqueue := handler.EnqueueKeys[*corev1.Pod](c.queue)
	return handler.Funcs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, initial bool) {
			if initial {
				c.initial.Add(1)
			} else {
				c.adds.Add(1)
				c.log("ADD     %s/%s on %s (%s)", p.Namespace, p.Name, nodeOf(p), p.Status.Phase)
			}
			enqueue.OnAdd(p, initial)
		},
		UpdateFunc: func(old, cur *corev1.Pod) {
			c.updates.Add(1)
			if old.Status.Phase != cur.Status.Phase {
				c.log("UPDATE  %s/%s phase %s -> %s", cur.Namespace, cur.Name, old.Status.Phase, cur.Status.Phase)
			}
			enqueue.OnUpdate(old, cur)
		},
		DeleteFunc: func(d handler.Deleted[*corev1.Pod]) {
			c.deletes.Add(1)
			if d.FinalStateUnknown {
				c.unknown.Add(1)
			}
			c.log("DELETE  %v (final state unknown: %v)", d.Key, d.FinalStateUnknown)
			enqueue.OnDelete(d)
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

// run starts the informer, waits for sync while showing progress, then
// reconciles until ctx ends, printing lister queries every few seconds.
func (c *controller) run(ctx context.Context) error {
	// Cancelled on every return, so the informer stops also when the sync
	// fails (for example Forbidden) before the deadline.
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	defer c.queue.ShutDown()
	wg.Go(func() { _ = c.inf.Run(ctx) })

	start := time.Now()
	synced := make(chan error, 1)
	go func() { synced <- c.inf.WaitForSync(ctx) }()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case err := <-synced:
			if err != nil {
				return fmt.Errorf("pods cache: %w", err)
			}
			break wait
		case <-tick.C:
			fmt.Printf("initial list: %d pods in the cache so far\n", c.inf.Store().Len())
		}
	}
	fmt.Printf("synced %d pods in %v at resourceVersion %s\n", c.inf.Store().Len(), time.Since(start).Round(time.Millisecond), c.inf.LastSyncResourceVersion())
	c.report()

	for range c.cfg.workers {
		wg.Go(c.worker)
	}
	every := time.NewTicker(3 * time.Second)
	defer every.Stop()
	for {
		select {
		case <-ctx.Done():
			c.report()
			fmt.Printf("events: %d initial adds, %d adds, %d updates, %d deletes (%d inferred by a relist); %d reconciles\n",
				c.initial.Load(), c.adds.Load(), c.updates.Load(), c.deletes.Load(), c.unknown.Load(), c.reconcil.Load())
			st := c.inf.Stats()
			fmt.Printf("source: %d lists, %d streaming lists, %d watches, %d relists, %d events\n", st.Lists, st.WatchLists, st.Watches, st.Relists, st.Events)
			return ctx.Err()
		case <-every.C:
			c.report()
		}
	}
}

// report answers a few lister queries, all typed.
func (c *controller) report() {
	web, _ := c.inf.Lister().List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	var perNode []string
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		pods, err := c.inf.ByIndex(byNode, n)
		if err == nil {
			perNode = append(perNode, fmt.Sprintf("%s=%d", n, len(pods)))
		}
	}
	shop, _ := c.inf.Lister().Namespace("shop").List(labels.Everything())
	fmt.Printf("query: %d pods cached, %d with app=web, by node %v, %d in namespace shop, queue depth %d\n",
		c.inf.Store().Len(), len(web), perNode, len(shop), c.queue.Len())
}

// worker reconciles keys from the workqueue: it reads the pod from the
// lister, typed, and counts it.
func (c *controller) worker() {
	for {
		key, shutdown := c.queue.Get()
		if shutdown {
			return
		}
		p, err := c.inf.Lister().Namespace(key.Namespace).Get(key.Name)
		switch {
		case apierrors.IsNotFound(err):
			// Deleted: nothing to reconcile.
			c.queue.Forget(key)
		case err != nil:
			c.queue.AddRateLimited(key) // retry with backoff
		default:
			_ = p.Spec.NodeName // a real controller would act on the typed pod here
			c.queue.Forget(key)
		}
		c.reconcil.Add(1)
		c.queue.Done(key)
	}
}
