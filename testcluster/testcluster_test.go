//go:build integration

package testcluster_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/testcluster"
)

const widgetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
---
`

// TestStartAndInstallCRDs: a controller's test starts the cluster,
// installs its CRD from a file, and reaches the server through the
// kubeconfig it is given; a manifest that is not a CRD is refused.
func TestStartAndInstallCRDs(t *testing.T) {
	leakcheck.Check(t) // after the cluster's stop
	c := testcluster.Start(t, testcluster.Options{})
	path := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(path, []byte(widgetCRD), 0o600); err != nil {
		t.Fatal(err)
	}
	testcluster.InstallCRDFiles(t, c, path)
	testcluster.InstallCRDFiles(t, c, path) // twice: left as it is

	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	if _, err := dyn.Resource(widgets).Namespace("default").List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatalf("list widgets right after InstallCRDs: %v", err)
	}
	err = testcluster.InstallCRDs(context.Background(), c.AdminConfig(), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"))
	if err == nil || !strings.Contains(err.Error(), "not a CustomResourceDefinition") {
		t.Errorf("a ConfigMap manifest: %v, want it refused", err)
	}
}
