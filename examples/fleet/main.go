// Command fleet watches the pods of several clusters from one process:
// one fleet informer, a handler told the cluster of each event, a lister
// over the whole fleet, and a cluster disengaged while the rest go on.
//
// By default the clusters are client-go fake clientsets, so it needs no
// cluster. With one or more --kubeconfig name=path it watches those
// clusters instead (each file's current context).
//
//	go run ./examples/fleet
//	go run ./examples/fleet --kubeconfig east=east.kubeconfig --kubeconfig west=west.kubeconfig
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/fleet"
)

// kubeconfigs is a repeatable --kubeconfig name=path flag.
type kubeconfigs map[string]string

func (k kubeconfigs) String() string { return fmt.Sprint(map[string]string(k)) }

func (k kubeconfigs) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	if !ok || name == "" || path == "" {
		return fmt.Errorf("want name=path, not %q", v)
	}
	k[name] = path
	return nil
}

func main() {
	configs := kubeconfigs{}
	flag.Var(configs, "kubeconfig", "name=path of a cluster's kubeconfig (repeatable); none: two fake clusters")
	namespace := flag.String("namespace", "", "the namespace to watch; empty: all")
	timeout := flag.Duration("timeout", 30*time.Second, "how long to wait for the clusters to sync")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, os.Stdout, configs, *namespace); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

// run engages the clusters (fakes when configs is empty), waits for them
// to sync, and reports the fleet's pods to out.
func run(ctx context.Context, out io.Writer, configs kubeconfigs, namespace string) error {
	fl, err := fleet.New(fleet.Options{ErrorHandler: func(cluster string, err error) {
		fmt.Fprintf(os.Stderr, "cluster %s: %v\n", cluster, err)
	}})
	if err != nil {
		return err
	}
	pods, err := fleet.InformerFor[*corev1.Pod](fl, factory.Scope{Namespace: namespace})
	if err != nil {
		return err
	}
	added := make(chan string, 16)
	if err := pods.AddHandler(fleet.HandlerFuncs[*corev1.Pod]{
		AddFunc: func(cluster string, p *corev1.Pod, initial bool) {
			if initial {
				return
			}
			select { // a handler must not block: a real cluster may add more than the program reads
			case added <- cluster + ": " + p.Namespace + "/" + p.Name:
			default:
			}
		},
	}); err != nil {
		return err
	}
	fakes := map[string]*fake.Clientset{}
	if len(configs) == 0 {
		for _, name := range []string{"east", "west"} {
			cs := fake.NewClientset(
				&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name + "-web-0"}},
				&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name + "-web-1"}})
			f, err := factory.NewForClientsets([]any{cs}, factory.Options{})
			if err != nil {
				return err
			}
			if err := fl.EngageFactory(name, f); err != nil {
				return err
			}
			fakes[name] = cs
		}
	}
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		cfg, err := clientcmd.BuildConfigFromFlags("", configs[name])
		if err != nil {
			return fmt.Errorf("cluster %s: %w", name, err)
		}
		if err := fl.Engage(name, cfg); err != nil {
			return err
		}
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- fl.Run(runCtx) }()
	defer func() {
		stop()
		<-done
	}()
	if err := pods.WaitForSync(ctx); err != nil {
		return err
	}
	list, err := pods.List(nil)
	if err != nil {
		return err
	}
	perCluster := map[string]int{}
	for _, it := range list {
		perCluster[it.Cluster]++
	}
	for _, name := range pods.Clusters() {
		fmt.Fprintf(out, "%s: %d pods\n", name, perCluster[name])
	}
	if len(fakes) == 0 {
		return nil
	}

	// A pod created in one cluster reaches the handler with its cluster.
	if _, err := fakes["west"].CoreV1().Pods("shop").Create(ctx,
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "west-web-2"}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	select {
	case ev := <-added:
		fmt.Fprintln(out, "added", ev)
	case <-ctx.Done():
		return errors.New("no event for the pod created in west")
	}
	// Disengaging a cluster takes its pods out of the fleet's lister.
	if err := fl.Disengage("east"); err != nil {
		return err
	}
	if list, err = pods.List(nil); err != nil {
		return err
	}
	fmt.Fprintf(out, "east disengaged: %d pods left, clusters %v\n", len(list), fl.Clusters())
	return nil
}
