// Command samplecontroller is k8s.io/sample-controller's Foo controller
// written with this library (controller.go; this file is the setup: flags
// and the CRD): each Foo owns a Deployment of its
// spec.deploymentName with spec.replicas, put back when edited by hand,
// and reports the Deployment's available replicas in its status.
//
//	make demo-cluster DEMO_FLAGS=--duration=0   # another terminal; prints "kubeconfig <path>"
//	go run ./examples/samplecontroller --kubeconfig <path>
//	KUBECONFIG=<path> kubectl apply -f examples/samplecontroller/foo.yaml
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "path to a kubeconfig")
	addr := flag.String("addr", "127.0.0.1:8081", "address of /readyz and /debug/informers")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err == nil {
		err = installCRD(ctx, cfg)
	}
	if err == nil {
		err = run(ctx, cfg, *addr)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "samplecontroller:", err)
		os.Exit(1)
	}
}

// fooCRD is sample-controller's artifacts/examples/crd-status.yaml: the
// Foo resource with a status subresource.
var fooCRD = map[string]any{
	"apiVersion": "apiextensions.k8s.io/v1",
	"kind":       "CustomResourceDefinition",
	"metadata": map[string]any{"name": "foos.samplecontroller.k8s.io", "annotations": map[string]any{
		// a *.k8s.io group needs this, as sample-controller's CRD has it
		"api-approved.kubernetes.io": "unapproved, experimental-only",
	}},
	"spec": map[string]any{
		"group": "samplecontroller.k8s.io",
		"names": map[string]any{"kind": "Foo", "plural": "foos", "singular": "foo", "listKind": "FooList"},
		"scope": "Namespaced",
		"versions": []any{map[string]any{
			"name": "v1alpha1", "served": true, "storage": true,
			"subresources": map[string]any{"status": map[string]any{}},
			"schema": map[string]any{"openAPIV3Schema": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"spec": map[string]any{"type": "object", "properties": map[string]any{
						"deploymentName": map[string]any{"type": "string"},
						"replicas":       map[string]any{"type": "integer", "minimum": 0, "maximum": 10},
					}},
					"status": map[string]any{"type": "object", "properties": map[string]any{
						"availableReplicas": map[string]any{"type": "integer"},
					}},
				},
			}},
		}},
	},
}

// installCRD creates the Foo CRD if the server does not have it, and waits
// until discovery lists foos: this is the example's setup (sample-controller
// has it as a YAML file to kubectl create), not part of the controller.
func installCRD(ctx context.Context, cfg *rest.Config) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	_, err = dyn.Resource(crds).Create(ctx, &unstructured.Unstructured{Object: fooCRD}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the Foo CRD: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		rl, err := dc.ServerResourcesForGroupVersion(fooGVK.GroupVersion().String())
		if err != nil {
			return false, nil
		}
		for _, r := range rl.APIResources {
			if r.Name == "foos" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("wait for discovery to list foos: %w", err)
	}
	return nil
}
