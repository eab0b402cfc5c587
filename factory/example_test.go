package factory_test

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

func examplePod(ns, name, app string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}}}
}

// podNames returns the sorted names of pods.
func podNames(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	slices.Sort(out)
	return out
}

// New on a client-go fake clientset: Register gives pods the clientset's
// source (in a program, leave it out and pass a rest.Config), InformerFor
// asks for the pods of one namespace, Start runs the informers and
// WaitForSync waits for them all.
func ExampleNew() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := fake.NewClientset(examplePod("shop", "web-0", "web"), examplePod("shop", "db-0", "db"), examplePod("lab", "x-0", "x"))

	f, err := factory.New(nil, factory.Options{MaxConcurrentLists: 5})
	if err != nil {
		panic(err)
	}
	err = factory.Register(f, func(s factory.Scope) (source.Source[*corev1.Pod], error) {
		return source.FromClient[*corev1.Pod](cs.CoreV1().Pods(s.Namespace))
	})
	if err != nil {
		panic(err)
	}
	pods, release, err := factory.InformerFor[*corev1.Pod](f, factory.Scope{Namespace: "shop"})
	if err != nil {
		panic(err)
	}
	defer release()

	done := make(chan error)
	go func() { done <- f.Start(ctx) }()
	if err := f.WaitForSync(ctx); err != nil {
		panic(err) // names each informer not synced, and why
	}
	web, _ := pods.Lister().Namespace("shop").List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	all, _ := pods.Lister().List(labels.Everything())
	fmt.Println(pods.Name())
	fmt.Println("app=web:", podNames(web))
	fmt.Println("cached:", podNames(all))

	cancel()
	fmt.Println("Start returned:", <-done)
	// Output:
	// pods (namespace shop)
	// app=web: [shop/web-0]
	// cached: [shop/db-0 shop/web-0]
	// Start returned: <nil>
}

// InformerFor shares: the same type and scope give the same informer,
// another scope another one. A release per caller; the last one stops the
// informer, and the next InformerFor makes a new one.
func ExampleInformerFor() {
	cs := fake.NewClientset()
	f, err := factory.New(nil, factory.Options{})
	if err != nil {
		panic(err)
	}
	if err := factory.Register(f, func(s factory.Scope) (source.Source[*corev1.Pod], error) {
		return source.FromClient[*corev1.Pod](cs.CoreV1().Pods(s.Namespace))
	}); err != nil {
		panic(err)
	}

	a, releaseA, _ := factory.InformerFor[*corev1.Pod](f, factory.Scope{Namespace: "shop", LabelSelector: "tier=web,app=shop"})
	b, releaseB, _ := factory.InformerFor[*corev1.Pod](f, factory.Scope{Namespace: "shop", LabelSelector: "app=shop, tier=web"})
	c, releaseC, _ := factory.InformerFor[*corev1.Pod](f, factory.Scope{Namespace: "lab"})
	defer releaseC()
	fmt.Println("a == b:", a == b, "a == c:", a == c)
	fmt.Println(a.Name())

	releaseA()
	releaseB() // the last user: a is stopped and forgotten
	d, releaseD, _ := factory.InformerFor[*corev1.Pod](f, factory.Scope{Namespace: "shop", LabelSelector: "app=shop,tier=web"})
	defer releaseD()
	fmt.Println("a == d:", a == d)

	_, _, err = factory.InformerFor[*corev1.Pod](f, factory.Scope{LabelSelector: "app in (web"})
	fmt.Println(errors.Is(err, factory.ErrBadScope))
	// Output:
	// a == b: true a == c: false
	// pods (namespace shop, labels app=shop,tier=web)
	// a == d: false
	// true
}

// A factory over a clientset: here client-go's fake, as in a unit test;
// any type the clientset serves needs no Register.
func ExampleNewForClientsets() {
	cs := fake.NewClientset(examplePod("shop", "web-0", "web"), examplePod("shop", "db-0", "db"))
	f, err := factory.NewForClientsets([]any{cs}, factory.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	pods, release, err := factory.InformerFor[*corev1.Pod](f, factory.Scope{Namespace: "shop"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx) }()
	if err := f.WaitForSync(ctx); err != nil {
		fmt.Println(err)
	}
	web, _ := pods.Lister().Namespace("shop").List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	fmt.Println(podNames(web))
	cancel()
	fmt.Println("start:", <-done)
	// Output:
	// [shop/web-0]
	// start: <nil>
}

// Defaults gives every informer of a type the same options, whoever asks
// for it: here a label index on app and a Transform that drops the pods'
// annotations. Defaults set twice, or after the first InformerFor, are an
// error.
func ExampleDefaults() {
	pod := examplePod("shop", "web-0", "web")
	pod.Annotations = map[string]string{"note": "large"}
	cs := fake.NewClientset(pod, examplePod("shop", "db-0", "db"), examplePod("lab", "web-9", "web"))
	f, err := factory.NewForClientsets([]any{cs}, factory.Options{})
	if err != nil {
		panic(err)
	}
	err = factory.Defaults(f, typed.Options[*corev1.Pod]{
		LabelIndexes: []string{"app"},
		Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
			p.Annotations = nil
			return p, nil
		},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("again:", errors.Is(factory.Defaults(f, typed.Options[*corev1.Pod]{}), factory.ErrRegistered))

	pods, release, err := factory.InformerFor[*corev1.Pod](f, factory.Scope{})
	if err != nil {
		panic(err)
	}
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx) }()
	if err := f.WaitForSync(ctx); err != nil {
		panic(err)
	}
	web, _ := pods.Lister().List(labels.SelectorFromSet(labels.Set{"app": "web"})) // from the app index
	got, _ := pods.Lister().Namespace("shop").Get("web-0")
	fmt.Println("app=web:", podNames(web))
	fmt.Println("annotations:", got.Annotations)
	cancel()
	fmt.Println("start:", <-done)
	// Output:
	// again: true
	// app=web: [lab/web-9 shop/web-0]
	// annotations: map[]
	// start: <nil>
}

// Two factories (two clusters of one process) share one bound on their
// list requests: at most 4 in flight over both.
func ExampleNewListLimit() {
	limit, err := factory.NewListLimit(4)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done, started := make(chan error, 2), 0
	defer func() {
		cancel()
		for range started {
			<-done
		}
	}()
	for _, name := range []string{"east-0", "west-0"} {
		f, err := factory.NewForClientsets([]any{fake.NewClientset(examplePod("shop", name, "web"))}, factory.Options{ListLimit: limit})
		if err != nil {
			fmt.Println(err)
			return
		}
		pods, release, err := factory.InformerFor[*corev1.Pod](f, factory.Scope{})
		if err != nil {
			fmt.Println(err)
			return
		}
		defer release()
		go func() { done <- f.Start(ctx) }()
		started++
		if err := f.WaitForSync(ctx); err != nil {
			fmt.Println(err)
		}
		all, _ := pods.Lister().List(labels.Everything())
		fmt.Println(podNames(all))
	}
	// Output:
	// [shop/east-0]
	// [shop/west-0]
}
