// Command localcluster runs the integration test cluster (etcd plus
// kube-apiserver on loopback ports) outside of go test, for demos and
// manual experiments.
//
// It writes an admin kubeconfig to the path given by -kubeconfig, prints a
// line "ready <kubeconfig path> <API server URL>" on stdout once the API
// server is ready, and runs until SIGINT or SIGTERM, when it stops the API
// server and etcd and removes their temporary directory and the kubeconfig.
//
// Usage:
//
//	go run ./internal/testcluster/cmd/localcluster -kubeconfig /tmp/kc \
//	    [-apiserver-flag=--feature-gates=WatchList=true ...]
//
// The binaries are found as in package testcluster: -bin-dir,
// $TESTCLUSTER_BIN_DIR, or <repo>/bin (build them with `make cluster-bin`).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/typedinformer/informer/internal/testcluster"
)

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, " ") }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("localcluster: ")
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	var (
		kubeconfig     = flag.String("kubeconfig", "", "path to write the admin kubeconfig to (required)")
		binDir         = flag.String("bin-dir", "", "directory with the etcd and kube-apiserver binaries (default $"+testcluster.BinDirEnv+" or <repo>/bin)")
		startTimeout   = flag.Duration("start-timeout", 0, "how long each process may take to become ready (default 90s)")
		apiserverFlags stringList
		etcdFlags      stringList
	)
	flag.Var(&apiserverFlags, "apiserver-flag", "extra kube-apiserver flag, e.g. --watch-cache=false (repeatable)")
	flag.Var(&etcdFlags, "etcd-flag", "extra etcd flag (repeatable)")
	flag.Parse()
	if *kubeconfig == "" || flag.NArg() > 0 {
		flag.Usage()
		return fmt.Errorf("-kubeconfig is required and no arguments are accepted")
	}
	path, err := filepath.Abs(*kubeconfig)
	if err != nil {
		return fmt.Errorf("resolve -kubeconfig: %w", err)
	}

	// Catch signals before starting anything so an early Ctrl-C still
	// stops the processes that are already up.
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()

	start := time.Now()
	c, err := testcluster.Launch(ctx, testcluster.Options{
		APIServerFlags: apiserverFlags,
		EtcdFlags:      etcdFlags,
		BinDir:         *binDir,
		StartTimeout:   *startTimeout,
		Logf:           log.Printf,
	})
	if err != nil {
		return fmt.Errorf("start cluster: %w", err)
	}
	if err := c.WriteKubeconfig(path); err != nil {
		return stopAfter(c, err)
	}
	log.Printf("cluster ready in %v; etcd at %s; data and logs in %s",
		time.Since(start).Round(time.Millisecond), c.EtcdURL(), c.Dir())
	fmt.Printf("ready %s %s\n", path, c.Host())

	<-ctx.Done()
	log.Printf("stopping")
	if err := c.Stop(); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove kubeconfig: %w", err)
	}
	log.Printf("stopped")
	return nil
}

// stopAfter stops the cluster after err and returns err, joined with any
// error from stopping.
func stopAfter(c *testcluster.Cluster, err error) error {
	if stopErr := c.Stop(); stopErr != nil {
		return fmt.Errorf("%w (and stopping the cluster: %w)", err, stopErr)
	}
	return err
}
