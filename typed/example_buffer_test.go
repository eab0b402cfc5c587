package typed_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/typed"
)

// A handler that may lag behind (it calls a slow API, say) gets a buffer
// that holds at most one notification per object: it sees fewer calls,
// and always each object's final state.
func ExampleInformer_AddHandlerWithOptions() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := exampleSource()
	inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	gate := make(chan struct{}) // the handler stalls until the gate opens
	calls := make(chan string, 16)
	reg, err := inf.AddHandlerWithOptions(handler.Funcs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, _ bool) { <-gate; calls <- "add " + p.Name + " " + p.Labels["app"] },
		UpdateFunc: func(old, cur *corev1.Pod) {
			<-gate
			calls <- "update " + cur.Name + " " + old.Labels["app"] + "->" + cur.Labels["app"]
		},
	}, typed.HandlerOptions{Name: "slow", Buffer: typed.CoalesceByKey})
	if err != nil {
		panic(err)
	}
	go func() { _ = inf.Run(ctx) }()
	if err := inf.WaitForSync(ctx); err != nil {
		panic(err)
	}
	// Three updates of web-0 while the handler stalls.
	var rv string
	for _, app := range []string{"v2", "v3", "v4"} {
		p, _ := src.Get(cache.Key{Namespace: "default", Name: "web-0"})
		p = p.DeepCopy()
		p.Labels["app"] = app
		p, err = src.Update(p)
		if err != nil {
			panic(err)
		}
		rv = p.ResourceVersion
	}
	if err := inf.WaitForResourceVersion(ctx, rv); err != nil { // the cache has the last one
		panic(err)
	}
	close(gate)
	// The first Add was in the handler when it stalled; web-0's Add was
	// pending, and its three updates merged into it.
	for range 4 {
		fmt.Println(<-calls)
	}
	fmt.Println("merged:", reg.Merged())
	// Output:
	// add db-0 db
	// add web-0 v4
	// add web-1 web
	// add dns-0 dns
	// merged: 3
}

// After a write, wait for the cache to have it before reading it back:
// the lister then never returns the state from before the write.
func ExampleInformer_WaitForResourceVersion() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := exampleSource() // in a program, writes go through a clientset
	inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	go func() { _ = inf.Run(ctx) }()
	if err := inf.WaitForSync(ctx); err != nil {
		panic(err)
	}
	p, _ := src.Get(cache.Key{Namespace: "default", Name: "web-1"})
	p = p.DeepCopy()
	p.Labels["app"] = "web-canary"
	written, err := src.Update(p) // clientset.CoreV1().Pods(ns).Update(...)
	if err != nil {
		panic(err)
	}
	if err := inf.WaitForResourceVersion(ctx, written.ResourceVersion); err != nil {
		panic(err)
	}
	cached, _ := inf.Lister().Namespace("default").Get("web-1")
	fmt.Println(cached.Labels["app"])
	// Output:
	// web-canary
}
