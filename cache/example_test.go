package cache_test

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
)

func examplePod(ns, name, app string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns,
		Name:      name,
		Labels:    map[string]string{"app": app},
	}}
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, cache.KeyOf(p).String())
	}
	slices.Sort(out)
	return out
}

func ExampleNewIndexer() {
	byNode := func(p *corev1.Pod) ([]string, error) {
		if p.Spec.NodeName == "" {
			return nil, nil // unscheduled pods are not indexed
		}
		return []string{p.Spec.NodeName}, nil
	}
	x, err := cache.NewIndexer(cache.IndexerOptions[*corev1.Pod]{
		Indexers: cache.Indexers[*corev1.Pod]{"node": byNode},
	})
	if err != nil {
		panic(err)
	}
	a := examplePod("default", "a", "web")
	a.Spec.NodeName = "node-1"
	b := examplePod("default", "b", "web")
	b.Spec.NodeName = "node-1"
	c := examplePod("kube-system", "c", "dns")
	for _, p := range []*corev1.Pod{a, b, c} {
		if err := x.Add(p); err != nil {
			panic(err)
		}
	}

	onNode, _ := x.ByIndex("node", "node-1")
	fmt.Println("on node-1:", names(onNode))
	inNS, _ := x.ByIndex(cache.NamespaceIndex, "kube-system")
	fmt.Println("in kube-system:", names(inNS))
	got, ok, _ := x.GetByKey(cache.Key{Namespace: "default", Name: "b"})
	fmt.Println("get default/b:", got.Spec.NodeName, ok)
	fmt.Println("nodes:", x.ListIndexFuncValues("node"))
	// Output:
	// on node-1: [default/a default/b]
	// in kube-system: [kube-system/c]
	// get default/b: node-1 true
	// nodes: [node-1]
}

func ExampleNewLister() {
	x, err := cache.NewIndexer(cache.IndexerOptions[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	for _, p := range []*corev1.Pod{
		examplePod("default", "web-0", "web"),
		examplePod("default", "web-1", "web"),
		examplePod("default", "db-0", "db"),
		examplePod("staging", "web-0", "web"),
	} {
		if err := x.Add(p); err != nil {
			panic(err)
		}
	}
	l := cache.NewLister(x, schema.GroupResource{Resource: "pods"})

	web, _ := l.List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	fmt.Println("app=web:", names(web))
	inDefault, _ := l.Namespace("default").List(labels.Everything())
	fmt.Println("default:", names(inDefault))
	p, _ := l.Namespace("staging").Get("web-0")
	fmt.Println("got:", cache.KeyOf(p))
	_, err = l.Namespace("staging").Get("db-0")
	fmt.Println(err, apierrors.IsNotFound(err))
	// Output:
	// app=web: [default/web-0 default/web-1 staging/web-0]
	// default: [default/db-0 default/web-0 default/web-1]
	// got: staging/web-0
	// pods "db-0" not found true
}

func ExampleParseKey() {
	for _, s := range []string{"default/web-0", "node-1", "a/b/c"} {
		k, err := cache.ParseKey(s)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Printf("namespace=%q name=%q string=%q\n", k.Namespace, k.Name, k.String())
	}
	// Output:
	// namespace="default" name="web-0" string="default/web-0"
	// namespace="" name="node-1" string="node-1"
	// error: cache: malformed key: "a/b/c"
}

func ExampleIndexByLabel() {
	x, err := cache.NewIndexer(cache.IndexerOptions[*corev1.Pod]{
		Indexers: cache.Indexers[*corev1.Pod]{
			// Registered under LabelIndexName, the index also speeds up
			// Lister queries with app=... and app in (...) selectors.
			cache.LabelIndexName("app"): cache.IndexByLabel[*corev1.Pod]("app"),
		},
	})
	if err != nil {
		panic(err)
	}
	for _, p := range []*corev1.Pod{
		examplePod("default", "web-0", "web"),
		examplePod("default", "db-0", "db"),
		examplePod("staging", "web-0", "web"),
	} {
		if err := x.Add(p); err != nil {
			panic(err)
		}
	}
	web, _ := x.ByIndex(cache.LabelIndexName("app"), "web")
	fmt.Println("web:", names(web))
	fmt.Println("apps:", x.ListIndexFuncValues(cache.LabelIndexName("app")))

	l := cache.NewLister(x, schema.GroupResource{Resource: "pods"})
	sel, _ := labels.Parse("app in (db,web)")
	both, _ := l.Namespace("default").List(sel)
	fmt.Println("default, app in (db,web):", names(both))
	// Output:
	// web: [default/web-0 staging/web-0]
	// apps: [db web]
	// default, app in (db,web): [default/db-0 default/web-0]
}
