// Command seedbench creates the pods of the real-server benchmarks
// (BenchmarkRealServerSync and BenchmarkRealServerRelist in
// internal/bench) in a cluster: -n pods of the benchmark fixture
// (bench.Pod, about 4 KB of JSON each) in its namespaces, laid out as
// Deployments make them (bench.LabelsDeployment: one label set and
// pod-template-hash per ReplicaSet of 20 pods), each created and
// then given the fixture's status through the status subresource, as a
// ReplicaSet controller and a kubelet would, so that the server keeps
// a managedFields entry for each writer. Pods that already exist are left
// as they are, so running it twice is harmless.
//
// Usage:
//
//	go run ./internal/bench/cmd/seedbench -kubeconfig /tmp/kc -n 10000 [-workers 16]
//
// It prints how long the seeding took.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/typedinformer/informer/internal/bench"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("seedbench: ")
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	var (
		kubeconfig = flag.String("kubeconfig", "", "path of the kubeconfig (required)")
		n          = flag.Int("n", 10000, "number of pods to create")
		workers    = flag.Int("workers", 16, "concurrent requests")
		timeout    = flag.Duration("timeout", 20*time.Minute, "give up after this long")
	)
	flag.Parse()
	if *kubeconfig == "" || flag.NArg() > 0 || *n < 0 || *workers < 1 {
		flag.Usage()
		return fmt.Errorf("-kubeconfig is required, -n must be >= 0, -workers >= 1, and no arguments are accepted")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("read kubeconfig %s: %w", *kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 5000, 10000
	cfg.ContentType = runtime.ContentTypeProtobuf // cheaper for the server, and for this process
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("clientset: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	start := time.Now()
	for i := range bench.Namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%d", i)}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns.Name, err)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(*workers)
	var created int
	for i := range *n {
		g.Go(func() error { return seedPod(gctx, cs, i) })
		created++
	}
	if err := g.Wait(); err != nil {
		return err
	}
	log.Printf("%d pods (created, then their status written) in %d namespaces in %v",
		created, bench.Namespaces, time.Since(start).Round(time.Millisecond))
	return nil
}

// seedPod creates fixture pod i, fields the server sets cleared, and then
// writes its status, which a create ignores.
func seedPod(ctx context.Context, cs kubernetes.Interface, i int) error {
	p := bench.Pod(i, bench.PodOptions{Labels: bench.LabelsDeployment})
	status := p.Status
	p.ResourceVersion, p.UID, p.CreationTimestamp = "", "", metav1.Time{}
	p.Status = corev1.PodStatus{}
	pods := cs.CoreV1().Pods(p.Namespace)
	got, err := pods.Create(ctx, p, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	got.Status = status
	if _, err := pods.UpdateStatus(ctx, got, metav1.UpdateOptions{FieldManager: "kubelet"}); err != nil {
		return fmt.Errorf("write the status of pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}
