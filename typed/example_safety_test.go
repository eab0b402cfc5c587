package typed_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/typed"
)

// An index function that fails for one pod does not stop the informer: by
// default (Options.OnRefused Quarantine) the pod is left out, reported and
// listed in the status, and the rest of the cache syncs.
func ExampleRefusePolicy() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := exampleSource()
	reported := make(chan string, 10)
	inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{
		Indexers: cache.Indexers[*corev1.Pod]{"tier": func(p *corev1.Pod) ([]string, error) {
			if p.Labels["app"] == "db" {
				return nil, errors.New("no tier label")
			}
			return []string{p.Labels["app"]}, nil
		}},
		ErrorHandler: func(err error) {
			var qe *typed.RefusedError
			if errors.As(err, &qe) {
				reported <- qe.Key.String()
			}
		},
	})
	if err != nil {
		panic(err)
	}
	done := make(chan error)
	go func() { done <- inf.Run(ctx) }()
	if err := inf.WaitForSync(ctx); err != nil {
		panic(err)
	}
	fmt.Println("cached:", names(inf.Store().List()))
	for _, q := range inf.Status().Quarantined {
		fmt.Printf("quarantined: %v (stale %v): %v\n", q.Key, q.Stale, q.Reason)
	}
	fmt.Println("reported:", <-reported)
	cancel()
	<-done
	// Output:
	// cached: default/web-0 default/web-1 kube-system/dns-0
	// quarantined: default/db-0 (stale false): index "tier": no tier label
	// reported: default/db-0
}

// Options.DetectMutations (or TYPEDINFORMER_DETECT_MUTATIONS=true in a test
// suite) finds a handler that changes the cached object it is given
// instead of a copy, and names the object and the field.
func ExampleOptions_detectMutations() {
	ctx, cancel := context.WithCancel(context.Background())
	inf, err := typed.NewInformer(exampleSource(), typed.Options[*corev1.Pod]{
		DetectMutations: true,
		ErrorHandler:    func(error) {}, // gets each *typed.MutationError too
	})
	if err != nil {
		panic(err)
	}
	reg, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{AddFunc: func(p *corev1.Pod, _ bool) {
		if p.Name == "web-1" {
			p.Labels["app"] = "changed" // a bug: p is shared with the cache
		}
	}})
	if err != nil {
		panic(err)
	}
	done := make(chan error)
	go func() { done <- inf.Run(ctx) }()
	if err := typed.WaitForCacheSync(ctx, inf, reg); err != nil { // the handler got every pod
		panic(err)
	}
	cancel()
	<-done // Run compares every cached object with its copy before it returns
	for _, me := range inf.Status().Checks.MutationErrors {
		fmt.Println(me.Key, strings.Join(me.Fields, ","))
	}
	// Output:
	// default/web-1 ObjectMeta.Labels["app"]
}

// Options.ConsistencyCheck compares the cache with the server at a period
// (keys and resourceVersions, at the cache's resourceVersion) and repairs
// a divergence with a relist; Status().Checks says what it found.
func ExampleOptions_consistencyCheck() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inf, err := typed.NewInformer(exampleSource(), typed.Options[*corev1.Pod]{
		ConsistencyCheck: 10 * time.Millisecond, // in production: minutes
	})
	if err != nil {
		panic(err)
	}
	done := make(chan error)
	go func() { done <- inf.Run(ctx) }()
	if err := inf.WaitForSync(ctx); err != nil {
		panic(err)
	}
	for inf.Status().Checks.ConsistencyChecks == 0 {
		time.Sleep(time.Millisecond)
	}
	c := inf.Status().Checks
	fmt.Println("divergences:", c.Divergences, "last:", c.LastDivergence)
	cancel()
	<-done
	// Output:
	// divergences: 0 last: <nil>
}
