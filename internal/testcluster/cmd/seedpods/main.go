// Command seedpods creates pods in a cluster for demos: -n pods spread over
// the namespaces given by -namespaces (created if missing), each with one
// container and no node, so nothing runs. Pods that already exist are left
// as they are, so running it twice is harmless.
//
// Usage:
//
//	go run ./internal/testcluster/cmd/seedpods -kubeconfig /tmp/kc -n 50 \
//	    [-namespaces demo-a,demo-b] [-nodes node-a,node-b] [-workers 8]
//
// Pods get the labels app (web, db or cache, in turn) and tier. With
// -nodes, spec.nodeName is set to those names in turn (no node object or
// kubelet is needed for the API server to store them; deleting such a pod
// is graceful, though, and nothing completes it).
//
// It reads the kubeconfig that cmd/localcluster writes (its current
// context: server, certificate authority data and bearer token).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/tools/clientcmd/api/latest"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("seedpods: ")
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	var (
		kubeconfig = flag.String("kubeconfig", "", "path of the kubeconfig (required)")
		n          = flag.Int("n", 50, "number of pods to create, spread over the namespaces")
		namespaces = flag.String("namespaces", "demo-a,demo-b", "comma-separated namespaces, created if missing")
		nodes      = flag.String("nodes", "", "comma-separated node names to assign the pods to in turn (default: none)")
		workers    = flag.Int("workers", 8, "concurrent requests")
		timeout    = flag.Duration("timeout", 2*time.Minute, "give up after this long")
	)
	flag.Parse()
	if *kubeconfig == "" || flag.NArg() > 0 || *n < 0 || *workers < 1 {
		flag.Usage()
		return fmt.Errorf("-kubeconfig is required, -n must be >= 0, -workers >= 1, and no arguments are accepted")
	}
	var nss []string
	for _, ns := range strings.Split(*namespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			nss = append(nss, ns)
		}
	}
	if len(nss) == 0 {
		return fmt.Errorf("-namespaces is empty")
	}
	var nodeNames []string
	for _, n := range strings.Split(*nodes, ",") {
		if n = strings.TrimSpace(n); n != "" {
			nodeNames = append(nodeNames, n)
		}
	}
	cfg, err := restConfig(*kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	for _, ns := range nss {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
	}
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(*workers)
	for i := range *n {
		ns := nss[i%len(nss)]
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: ns,
				Name:      fmt.Sprintf("pod-%03d", i),
				Labels: map[string]string{
					"app":  []string{"web", "db", "cache"}[i%3],
					"tier": []string{"frontend", "backend"}[i%2],
				},
			},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
		}
		if len(nodeNames) > 0 {
			pod.Spec.NodeName = nodeNames[i%len(nodeNames)]
		}
		g.Go(func() error {
			_, err := cs.CoreV1().Pods(ns).Create(gctx, pod, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create pod %s/%s: %w", ns, pod.Name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	log.Printf("%d pods in namespaces %s after %v", *n, strings.Join(nss, ","), time.Since(start).Round(time.Millisecond))
	return nil
}

// restConfig reads the current context of a kubeconfig with a bearer token
// (what cmd/localcluster writes), without the clientcmd loader.
func restConfig(path string) (*rest.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	obj, err := runtime.Decode(latest.Codec, data)
	if err != nil {
		return nil, fmt.Errorf("decode kubeconfig %s: %w", path, err)
	}
	cfg, ok := obj.(*clientcmdapi.Config)
	if !ok {
		return nil, fmt.Errorf("kubeconfig %s: unexpected %T", path, obj)
	}
	kctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return nil, fmt.Errorf("kubeconfig %s: no current context %q", path, cfg.CurrentContext)
	}
	cluster, ok := cfg.Clusters[kctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("kubeconfig %s: no cluster %q", path, kctx.Cluster)
	}
	user, ok := cfg.AuthInfos[kctx.AuthInfo]
	if !ok {
		return nil, fmt.Errorf("kubeconfig %s: no user %q", path, kctx.AuthInfo)
	}
	return &rest.Config{
		Host:            cluster.Server,
		BearerToken:     user.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: cluster.CertificateAuthorityData},
	}, nil
}
