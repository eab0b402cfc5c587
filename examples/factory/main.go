// Command factory shows a factory sharing informers: two parts of a
// program ask for the pods of one namespace and get one informer (one list,
// one watch), a third asks for another namespace and gets its own; the
// factory starts them all, waits for their sync, and stops an informer
// when its last user releases it.
//
// By default it runs on client-go's fake clientset, so it needs no
// cluster, and counts the watch requests the clientset sees. With
// --kubeconfig it asks a real cluster for the pods of --namespaces.
//
//	go run ./examples/factory
//	go run ./examples/factory --kubeconfig ~/.kube/config --namespaces default,kube-system
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path to a kubeconfig: use that cluster instead of a fake clientset")
	namespaces := flag.String("namespaces", "shop,lab", "comma-separated namespaces, one informer each (the first one asked for twice)")
	timeout := flag.Duration("timeout", 30*time.Second, "how long to wait for the informers to sync")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, os.Stdout, *kubeconfig, strings.Split(*namespaces, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "factory:", err)
		os.Exit(1)
	}
}

// run asks for the pods of each namespace (the first twice), starts the
// factory, and reports what it shares and caches to out.
func run(ctx context.Context, out io.Writer, kubeconfig string, namespaces []string) error {
	f, watches, cs, err := newFactory(kubeconfig)
	if err != nil {
		return err
	}
	type user struct {
		ns      string
		pods    *podInformer
		release func()
	}
	var users []user
	for _, ns := range append([]string{namespaces[0]}, namespaces...) {
		inf, release, err := factory.InformerFor[*corev1.Pod](f, factory.Scope{Namespace: ns})
		if err != nil {
			return err
		}
		users = append(users, user{ns: ns, pods: inf, release: release})
	}
	fmt.Fprintf(out, "%d users, same informer for the first two: %v\n", len(users), users[0].pods == users[1].pods)

	added := make(chan string, 16)
	if _, err := users[0].pods.AddHandler(handler.Funcs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, initial bool) {
			if !initial {
				added <- p.Namespace + "/" + p.Name
			}
		},
	}); err != nil {
		return err
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Start(runCtx) }()
	defer func() { stop(); <-done }()
	if err := f.WaitForSync(ctx); err != nil {
		return err // names each informer not synced, and why
	}
	for _, u := range users[1:] {
		fmt.Fprintf(out, "%s: %d pods cached\n", u.pods.Name(), u.pods.Store().Len())
	}
	if cs == nil {
		return nil // a real cluster: nothing is created there
	}

	// Once the watch is open, a pod created in the first namespace reaches
	// the informer both users share.
	for watches.Load() < int64(len(namespaces)) {
		time.Sleep(10 * time.Millisecond)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespaces[0], Name: "web-1"}}
	if _, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return err
	}
	select {
	case key := <-added:
		fmt.Fprintf(out, "%s saw a new pod: %s\n", users[0].pods.Name(), key)
	case <-ctx.Done():
		return ctx.Err()
	}
	fmt.Fprintf(out, "watch requests: %d for %d scopes\n", watches.Load(), len(namespaces))

	for _, u := range users {
		u.release()
	}
	select {
	case <-users[0].pods.Stopped(): // the last release stops the informer
	case <-ctx.Done():
		return ctx.Err()
	}
	_, err = users[0].pods.AddHandler(handler.Funcs[*corev1.Pod]{})
	fmt.Fprintf(out, "after every release: %v\n", err)
	return nil
}

type podInformer = typed.Informer[*corev1.Pod]

// newFactory returns a factory on the cluster of kubeconfig, or, without
// one, on a fake clientset with a few pods whose watch requests it counts.
func newFactory(kubeconfig string) (*factory.Factory, *atomic.Int64, *fake.Clientset, error) {
	watches := new(atomic.Int64)
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("kubeconfig: %w", err)
		}
		f, err := factory.New(cfg, factory.Options{})
		return f, watches, nil, err
	}
	pod := func(ns, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	cs := fake.NewClientset(pod("shop", "web-0"), pod("shop", "db-0"), pod("lab", "x-0"))
	cs.PrependWatchReactor("pods", func(clienttesting.Action) (bool, watch.Interface, error) {
		watches.Add(1)
		return false, nil, nil // counted, then served as usual
	})
	f, err := factory.New(nil, factory.Options{})
	if err != nil {
		return nil, nil, nil, err
	}
	err = factory.Register(f, func(s factory.Scope) (source.Source[*corev1.Pod], error) {
		return source.FromClient[*corev1.Pod](cs.CoreV1().Pods(s.Namespace))
	})
	return f, watches, cs, err
}
