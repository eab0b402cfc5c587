// Command controllerruntime is k8s.io/sample-controller's Foo controller
// written with controller-runtime, for comparison with ../controller.go
// (this library's): the same reconciler, tested with the same scenario
// against kube-apiserver. It is a module of its own so that
// controller-runtime stays out of the library's dependencies.
//
//	make demo-cluster DEMO_FLAGS=--duration=0   # another terminal; prints "kubeconfig <path>"
//	KUBECONFIG=<path> kubectl apply -f crd.yaml
//	go run . --kubeconfig <path>
package main

import (
	"flag"
	"fmt"
	"os"

	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "path to a kubeconfig")
	addr := flag.String("addr", "127.0.0.1:8081", "address of /readyz")
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err == nil {
		err = run(ctrl.SetupSignalHandler(), cfg, *addr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "controllerruntime:", err)
		os.Exit(1)
	}
}
