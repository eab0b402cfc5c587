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

// FromClient takes any typed clientset client; the list type is inferred.
func ExampleFromClient() {
	clientset := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}})
	src := source.FromClient[*corev1.Pod](clientset.CoreV1().Pods(metav1.NamespaceAll))

	list, err := src.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	for _, p := range list.Items { // p is a *corev1.Pod
		fmt.Println(p.Namespace, p.Name)
	}
	// Output:
	// default web-0
}

// FromListerWatcher takes any client-go cache.ListerWatcher. A list or
// event of the wrong type becomes an error naming both types, not a panic.
func ExampleFromListerWatcher() {
	lw := &clientcache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &corev1.ServiceList{Items: []corev1.Service{{ObjectMeta: metav1.ObjectMeta{Name: "oops"}}}}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return watch.NewEmptyWatch(), nil
		},
	}
	src := source.FromListerWatcher[*corev1.Pod](lw)
	_, err := src.List(context.Background(), metav1.ListOptions{})
	fmt.Println(err)
	// Output:
	// list: source: object of the wrong type: want *v1.Pod, got *v1.Service
}
