package source_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// One informer over the namespaces a controller may read: one cache and
// one lister for all of them, and a namespace added while it runs.
func ExampleInNamespaces() {
	cs := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "web"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-b", Name: "db"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "dns"}},
	)
	tenants, err := source.NewNamespaces("tenant-a")
	if err != nil {
		panic(err)
	}
	src, err := source.InNamespaces(tenants, func(ns string) (source.Source[*corev1.Pod], error) {
		return source.FromClient[*corev1.Pod](cs.CoreV1().Pods(ns))
	})
	if err != nil {
		panic(err)
	}
	inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- inf.Run(ctx) }()
	if err := inf.WaitForSync(ctx); err != nil {
		panic(err)
	}
	show := func() {
		pods, _ := inf.Lister().List(labels.Everything())
		var keys []string
		for _, p := range pods {
			keys = append(keys, p.Namespace+"/"+p.Name)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Println(" ", k)
		}
	}
	fmt.Println(tenants, "holds:")
	show()

	if err := tenants.Add("tenant-b"); err != nil {
		panic(err)
	}
	for inf.Store().Len() != 2 {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println(tenants, "holds:")
	show()
	cancel()
	<-done
	// Output:
	// tenant-a holds:
	//   tenant-a/web
	// tenant-a,tenant-b holds:
	//   tenant-a/web
	//   tenant-b/db
}

// A set refuses what is not a set of namespaces.
func ExampleNewNamespaces() {
	_, err := source.NewNamespaces("shop", "shop")
	fmt.Println(err)
	set, _ := source.NewNamespaces("shop", "lab")
	fmt.Println(set.Names(), set.Remove("shop", "lab"))
	// Output:
	// source: invalid namespace set: NewNamespaces: namespace "shop" given twice
	// [lab shop] source: invalid namespace set: Remove: removing lab,shop would leave the set empty
}
