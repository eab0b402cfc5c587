// Command shards runs a pod informer as three shards in one process, on
// the API server's sharded list and watch and Leases (package sharding),
// and prints what each shard holds and receives: its range, its share of
// the pods and of the events, whether the server or the client filtered,
// then what happens when one shard stops renewing its Lease and comes back.
//
// By default it starts a local kube-apiserver and etcd with the
// ShardedListAndWatch feature (the binaries of `make cluster-bin` in bin/)
// and seeds pods there; with --kubeconfig it uses that cluster instead
// (without the feature, the shards filter on the client and say so).
//
//	make demo-shards
//	go run ./examples/shards --pods 3000 --replicas 3
//	go run ./examples/shards --kubeconfig ~/.kube/config --namespace shards-demo
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/typedinformer/informer/internal/testcluster"
)

// config is the demo's flags.
type config struct {
	kubeconfig string
	namespace  string
	pods       int
	replicas   int
	lease      time.Duration
	workers    int
}

func main() {
	var cfg config
	flag.StringVar(&cfg.kubeconfig, "kubeconfig", "", "use this cluster instead of starting a local one")
	flag.StringVar(&cfg.namespace, "namespace", "shards-demo", "namespace of the pods and the Leases (created)")
	flag.IntVar(&cfg.pods, "pods", 3000, "pods to create")
	flag.IntVar(&cfg.replicas, "replicas", 3, "shards to run")
	flag.DurationVar(&cfg.lease, "lease", 3*time.Second, "lease duration of the shards (whole seconds)")
	flag.IntVar(&cfg.workers, "workers", 16, "concurrent creates and updates")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := start(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "shards:", err)
		os.Exit(1)
	}
}

// start finds or starts the cluster, then runs the demo on it.
func start(ctx context.Context, cfg config, out io.Writer) error {
	var rc *rest.Config
	if cfg.kubeconfig != "" {
		c, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
		if err != nil {
			return err
		}
		rc = c
	} else {
		fmt.Fprintln(out, "starting kube-apiserver (--feature-gates=ShardedListAndWatch=true) and etcd...")
		c, err := testcluster.Launch(ctx, testcluster.Options{APIServerFlags: []string{"--feature-gates=ShardedListAndWatch=true"}})
		if err != nil {
			return fmt.Errorf("local cluster (build the binaries with make cluster-bin): %w", err)
		}
		defer func() {
			if err := c.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "shards: stop the cluster:", err)
			}
		}()
		rc = c.AdminConfig()
	}
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = 2000, 4000
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	return run(ctx, cs, cfg, out)
}
