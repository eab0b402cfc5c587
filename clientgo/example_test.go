package clientgo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/clientgo"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// A typed informer handed to code written for client-go: a generated
// lister, WaitForCacheSync and a ResourceEventHandler, all on the
// informer's own cache and watch.
func ExampleSharedIndexInformer() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pod := func(ns, name, app string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}}}
	}
	// In a program: source.FromClient[*corev1.Pod](clientset.CoreV1().Pods(""))
	src := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{
		Resource: podsResource, Scope: cache.ScopeNamespaced,
		Objects: []*corev1.Pod{pod("default", "web-0", "web"), pod("default", "web-1", "web"), pod("default", "db-0", "db")},
	})
	inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	v, err := clientgo.SharedIndexInformer(inf, clientgo.Options[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}

	// From here on, what a library written for client-go does.
	events := make(chan string, 16)
	reg, err := v.AddEventHandler(clientcache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { events <- "add " + obj.(*corev1.Pod).Name },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(clientcache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			events <- "delete " + obj.(*corev1.Pod).Name
		},
	})
	if err != nil {
		panic(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); v.RunWithContext(ctx) }()
	if !clientcache.WaitForCacheSync(ctx.Done(), v.HasSynced, reg.HasSynced) {
		panic("not synced")
	}
	var initial []string
	for range 3 {
		initial = append(initial, <-events)
	}
	slices.Sort(initial)
	fmt.Println(strings.Join(initial, ", "))

	lister := corelisters.NewPodLister(v.GetIndexer())
	web, _ := lister.Pods("default").List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	var names []string
	for _, p := range web {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	fmt.Println("app=web:", names)
	_, err = lister.Pods("default").Get("nope")
	fmt.Println(err)

	if _, err := src.Delete(cache.Key{Namespace: "default", Name: "db-0"}); err != nil {
		panic(err)
	}
	fmt.Println(<-events)

	err = v.GetStore().Add(pod("default", "x", "x"))
	fmt.Println("write refused:", errors.Is(err, clientgo.ErrReadOnly))

	cancel()
	<-done
	fmt.Println("stopped:", v.IsStopped())
	// Output:
	// add db-0, add web-0, add web-1
	// app=web: [web-0 web-1]
	// pod "nope" not found
	// delete db-0
	// write refused: true
	// stopped: true
}
