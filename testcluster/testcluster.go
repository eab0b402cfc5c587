// Package testcluster runs a real kube-apiserver and etcd on loopback ports
// for a controller's own tests: the API server itself, with its watch
// cache, admission, RBAC, CRDs, 410s and bookmarks, where client-go's fake
// clientset has an object tracker.
//
//	func TestMyController(t *testing.T) {
//		c := testcluster.Start(t, testcluster.Options{})
//		testcluster.InstallCRDFiles(t, c, "config/crd/widgets.yaml")
//		cfg := c.AdminConfig() // or c.Kubeconfig(t), a file path
//		...
//	}
//
// # Binaries
//
// Nothing is downloaded. The binaries are built from the Go module proxy
// (k8s.io/kubernetes for kube-apiserver, go.etcd.io/etcd for etcd) by
// `make cluster-bin` in a checkout of this module, into its bin/
// directory; a test outside this module finds them through
// $TESTCLUSTER_BIN_DIR or Options.BinDir:
//
//	git clone https://github.com/typedinformer/informer && make -C informer cluster-bin
//	export TESTCLUSTER_BIN_DIR=$PWD/informer/bin
//
// Without them, Start fails the test and says how to build them; it never
// skips. A cluster starts in about 5 to 10 seconds on 2 cores; tests that
// can share one start it once with Launch from TestMain. No build tag is
// needed; this module's own tests use -tags integration only to keep them
// out of a plain go test ./... .
//
// Options and Cluster are aliases, so `go doc` shows their fields and
// methods under internal/testcluster: Options has APIServerFlags,
// EtcdFlags, BinDir, StartTimeout and StopGracePeriod; a Cluster has
// AdminConfig, UserConfig, Kubeconfig(t), WriteKubeconfig(path), Host,
// Stop, StopAPIServer(t), StartAPIServer(t), RestartAPIServer(t),
// CompactEtcd(t), EtcdRevision(t) and LogTails(n).
//
// [Cluster.AdminConfig] is a member of system:masters; [Cluster.UserConfig]
// is the user "alice", who has no RBAC bindings (bind roles to her to test
// what a controller may do). [Cluster.RestartAPIServer],
// [Cluster.CompactEtcd] and the rest make the faults an informer must
// survive.
package testcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	itc "github.com/typedinformer/informer/internal/testcluster"
)

// Options configure a cluster: extra flags for kube-apiserver and etcd,
// where the binaries are, and timeouts. The zero value is the default
// cluster.
type Options = itc.Options

// Cluster is a running etcd and kube-apiserver; see the package
// documentation for its methods.
type Cluster = itc.Cluster

// BinDirEnv names the environment variable that holds the directory of
// the etcd and kube-apiserver binaries.
const BinDirEnv = itc.BinDirEnv

// Start starts a cluster for the test and stops it when the test ends;
// it fails the test if the cluster cannot start (binaries missing, ports,
// a process that exits), with the tails of the processes' logs.
func Start(t testing.TB, opts Options) *Cluster { t.Helper(); return itc.Start(t, opts) }

// Launch starts a cluster outside a test (from TestMain, or a program);
// the caller stops it with Stop.
func Launch(ctx context.Context, opts Options) (*Cluster, error) { return itc.Launch(ctx, opts) }

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs creates the CustomResourceDefinitions of manifests (YAML or
// JSON, any number of documents each; documents of other kinds are an
// error) on the server of cfg, and waits until each is Established, so
// that its resource can be listed when InstallCRDs returns. A CRD the
// server has already is left as it is.
func InstallCRDs(ctx context.Context, cfg *rest.Config, manifests ...[]byte) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("testcluster: InstallCRDs: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("testcluster: InstallCRDs: %w", err)
	}
	var names []string
	for i, m := range manifests {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(m), 4096)
		for {
			var obj unstructured.Unstructured
			if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return fmt.Errorf("testcluster: InstallCRDs: manifest %d: %w", i, err)
			}
			if len(obj.Object) == 0 {
				continue // an empty document
			}
			if gvk := obj.GroupVersionKind(); gvk.Group != crdResource.Group || gvk.Kind != "CustomResourceDefinition" {
				return fmt.Errorf("testcluster: InstallCRDs: manifest %d: a %s, not a CustomResourceDefinition", i, gvk)
			}
			_, err := dyn.Resource(crdResource).Create(ctx, &obj, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("testcluster: InstallCRDs: create %s: %w", obj.GetName(), err)
			}
			names = append(names, obj.GetName())
		}
	}
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			crd, err := dyn.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conds {
				cm, _ := c.(map[string]any)
				if cm["type"] == "Established" && cm["status"] == "True" {
					return discovered(dc, crd), nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("testcluster: InstallCRDs: %s not established: %w", name, err)
		}
	}
	return nil
}

// discovered reports whether discovery lists the resource of crd in each
// of its served versions, as a REST mapper will look it up.
func discovered(dc discovery.DiscoveryInterface, crd *unstructured.Unstructured) bool {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		name, _ := vm["name"].(string)
		if served, _ := vm["served"].(bool); !served {
			continue
		}
		rl, err := dc.ServerResourcesForGroupVersion(group + "/" + name)
		if err != nil {
			return false
		}
		found := false
		for _, r := range rl.APIResources {
			found = found || r.Name == plural
		}
		if !found {
			return false
		}
	}
	return true
}

// InstallCRDFiles installs the CRDs of the manifest files at paths on c
// (InstallCRDs) and fails the test if it cannot.
func InstallCRDFiles(t testing.TB, c *Cluster, paths ...string) {
	t.Helper()
	var manifests [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("testcluster: %v", err)
		}
		manifests = append(manifests, b)
	}
	if err := InstallCRDs(t.Context(), c.AdminConfig(), manifests...); err != nil {
		t.Fatal(err)
	}
}
