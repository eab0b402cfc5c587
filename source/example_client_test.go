package source_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/source"
)

// FromClient takes any typed clientset client; the list type is inferred,
// and the source tells what it lists.
func ExampleFromClient() {
	clientset := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}})
	src, err := source.FromClient[*corev1.Pod](clientset.CoreV1().Pods("default"))
	if err != nil {
		panic(err)
	}
	r := source.ResourceOf(src)
	fmt.Println(r.Resource, r.Scope)

	list, err := src.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	for _, p := range list.Items { // p is a *corev1.Pod
		fmt.Println(p.Namespace, p.Name)
	}

	// A client of another type is refused at once.
	_, err = source.FromClient[*corev1.Pod](clientset.CoreV1().Services("default"))
	fmt.Println(err)
	// Output:
	// pods namespaced
	// default web-0
	// source: object of the wrong type: FromClient: list type *v1.ServiceList holds v1.Service, not *v1.Pod
}

// FromListerWatcher takes any client-go cache.ListerWatcher. A list or
// event of the wrong type becomes an error naming both types, not a panic,
// and so does an ERROR event: Next returns it.
func ExampleFromListerWatcher() {
	ctx := context.Background()
	events := watch.NewFakeWithChanSize(1, false)
	lw := &clientcache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &corev1.ServiceList{Items: []corev1.Service{{ObjectMeta: metav1.ObjectMeta{Name: "oops"}}}}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return events, nil
		},
	}
	src, err := source.FromListerWatcher[*corev1.Pod](lw)
	if err != nil {
		panic(err)
	}
	_, err = src.List(ctx, metav1.ListOptions{})
	fmt.Println(err)

	w, err := src.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	defer w.Stop()
	events.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version: 1 (2)"})
	_, err = w.Next(ctx)
	fmt.Println(err)
	// Output:
	// list: source: object of the wrong type: want *v1.Pod, got *v1.Service
	// watch: too old resource version: 1 (2)
}

// Check finds a nil source before it is handed to another goroutine.
func ExampleCheck() {
	var src source.Source[*corev1.Pod]
	fmt.Println(source.Check(src))
	// Output:
	// source: nil source (Source[*v1.Pod])
}
