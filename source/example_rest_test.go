package source_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// FromConfig needs only a *rest.Config: a built-in T's kind comes from its
// Go package, its resource and scope from one discovery request. Here the API server is a
// stand-in serving a Fake over HTTP; with a cluster, the config comes from
// clientcmd or rest.InClusterConfig.
func ExampleFromConfig() {
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: []*corev1.Pod{
		pod("shop", "web-1", map[string]string{"app": "web"}),
		pod("shop", "db-1", map[string]string{"app": "db"}),
		pod("other", "web-9", map[string]string{"app": "web"}),
	}})
	server := podserver.Start(fake)
	defer server.Close()
	cfg := &rest.Config{Host: server.URL}

	src, err := source.FromConfig[*corev1.Pod](cfg, source.RESTOptions{Namespace: "shop"})
	if err != nil {
		fmt.Println(err)
		return
	}
	r := source.ResourceOf(src)
	fmt.Println(r.GroupResource, r.Scope)

	inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	if err := inf.WaitForSync(ctx); err != nil {
		fmt.Println(err)
		return
	}
	web, _ := inf.Lister().List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	for _, p := range web {
		fmt.Println(p.Namespace + "/" + p.Name)
	}
	cancel()
	fmt.Println("Run:", <-done)
	// Output:
	// pods namespaced
	// shop/web-1
	// Run: <nil>
}
