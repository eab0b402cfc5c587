// Command podwatch is a small typed pod controller: it watches pods, logs
// typed events, keeps an index of pods by node and by app label, answers
// lister queries, and reconciles pod keys with a reconcile loop (package
// reconcile, over client-go's typed workqueue).
//
// By default it runs against an in-process simulated cluster (a fake source
// seeded from testdata/demo/pods.yaml plus generated pods, with churn), so it
// needs no cluster. With --kubeconfig it runs the same controller against a
// real cluster.
//
//	go run ./examples/podwatch                      # simulated cluster, 10s
//	go run ./examples/podwatch --kubeconfig ~/.kube/config --duration 1m
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/typedinformer/informer/source"
)

type config struct {
	kubeconfig string
	namespace  string
	duration   time.Duration
	seedFile   string
	pods       int
	churn      time.Duration
	workers    int
	verbose    bool
	debugAddr  string
}

func main() {
	var c config
	flag.StringVar(&c.kubeconfig, "kubeconfig", "", "path to a kubeconfig: run against that cluster instead of the simulated one")
	flag.StringVar(&c.namespace, "namespace", metav1.NamespaceAll, "namespace to watch (default: all)")
	flag.DurationVar(&c.duration, "duration", 10*time.Second, "how long to run before exiting (0: until interrupted)")
	flag.StringVar(&c.seedFile, "seed", "testdata/demo/pods.yaml", "simulated cluster: YAML pods to start with")
	flag.IntVar(&c.pods, "pods", 20000, "simulated cluster: generated pods besides the seed file")
	flag.DurationVar(&c.churn, "churn", 20*time.Millisecond, "simulated cluster: interval between pod changes")
	flag.IntVar(&c.workers, "workers", 2, "reconcile workers")
	flag.BoolVar(&c.verbose, "v", false, "log every event, not a sample")
	flag.StringVar(&c.debugAddr, "debug-addr", "127.0.0.1:8081", "serve /readyz and /debug/informers here (a private address; empty: off)")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "podwatch:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	ctrl, sim, err := setup(c)
	if err != nil {
		return err
	}
	return runWith(c, ctrl, sim)
}

// setup builds the source (a real cluster or the simulated one) and the
// controller.
func setup(c config) (*controller, *simulation, error) {
	var src source.Source[*corev1.Pod]
	var sim *simulation
	if c.kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
		if err != nil {
			return nil, nil, fmt.Errorf("kubeconfig: %w", err)
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, nil, fmt.Errorf("clientset: %w", err)
		}
		if src, err = source.FromClient[*corev1.Pod](cs.CoreV1().Pods(c.namespace)); err != nil {
			return nil, nil, err
		}
		fmt.Printf("podwatch: watching pods on %s (namespace %q) for %v\n", cfg.Host, c.namespace, c.duration)
	} else {
		var err error
		sim, err = newSimulation(c.seedFile, c.pods)
		if err != nil {
			return nil, nil, err
		}
		src = sim.fake
		fmt.Printf("podwatch: simulated cluster with %d pods, a change every %v, running %v\n", sim.fake.Len(), c.churn, c.duration)
	}
	ctrl, err := newController(src, c)
	if err != nil {
		return nil, nil, err
	}
	return ctrl, sim, nil
}

// runWith runs the controller (and the simulation's churn) until the
// duration ends or a signal arrives, or until the controller fails: then
// the churn stops too and runWith returns the controller's error.
func runWith(c config, ctrl *controller, sim *simulation) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if c.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.duration)
		defer cancel()
	}
	g, ctx := errgroup.WithContext(ctx)
	if sim != nil {
		g.Go(func() error { sim.churn(ctx, c.churn); return nil })
	}
	g.Go(func() error { return ctrl.run(ctx) })
	if c.debugAddr != "" {
		g.Go(func() error { return serveDebug(ctx, c.debugAddr, ctrl) })
	}
	return g.Wait()
}
