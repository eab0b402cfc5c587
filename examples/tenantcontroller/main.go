// Command tenantcontroller keeps, for every Service in a set of tenant
// namespaces, a ConfigMap "<service>-ports" listing its ports, owned by
// the Service: a ConfigMap edited or deleted by hand is put back (an owned
// watch maps it to its Service), and every Service is looked at again
// every ten minutes (RequeueAfter). It reads only the namespaces it is
// given, as a controller RBAC keeps out of cluster-wide lists does: one
// informer per type over the set (controller.go; this file is the flags).
//
//	make demo-cluster DEMO_FLAGS=--duration=0   # another terminal; prints "kubeconfig <path>"
//	go run ./examples/tenantcontroller --kubeconfig <path> --namespaces shop,team-0
//	KUBECONFIG=<path> kubectl -n shop create service clusterip web --tcp=80:8080
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/typedinformer/informer/source"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "path to a kubeconfig")
	namespaces := flag.String("namespaces", "default", "comma-separated tenant namespaces")
	addr := flag.String("addr", "127.0.0.1:8081", "address of /readyz and /debug/informers")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	var tenants *source.Namespaces
	if err == nil {
		tenants, err = source.NewNamespaces(strings.Split(*namespaces, ",")...)
	}
	if err == nil {
		err = run(ctx, cfg, tenants, *addr)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "tenantcontroller:", err)
		os.Exit(1)
	}
}
