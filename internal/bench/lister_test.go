package bench_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/bench"
)

// listerPods are 10k pods in bench.Namespaces namespaces; one in ten has
// app=app-3.
const listerPods = 10000

// BenchmarkLister measures the queries controllers make of a cache of 10k
// pods in 10 namespaces: List(app=app-3) over all namespaces by scanning
// and (ours only) from a label index on app, the same List in one
// namespace, and Get by name; client-go's generated pod lister over its
// indexer (with the namespace index) on the same pods.
func BenchmarkLister(b *testing.B) {
	pods := bench.Pods(listerPods, bench.PodOptions{})
	sel := labels.SelectorFromSet(labels.Set{"app": "app-3"})
	want := listerPods / 10
	ns := pods[3].Namespace
	name := pods[3].Name

	ours := func(b *testing.B, labelIndex bool) *cache.Lister[*corev1.Pod] {
		opts := cache.Options[*corev1.Pod]{Scope: cache.ScopeNamespaced, Resource: corev1.Resource("pods")}
		if labelIndex {
			opts.LabelIndexes = []string{"app"}
		}
		w, err := cache.NewWriter(opts)
		if err != nil {
			b.Fatal(err)
		}
		es := make([]cache.Entry[*corev1.Pod], len(pods))
		for i, p := range pods {
			es[i] = cache.Entry[*corev1.Pod]{Object: p}
		}
		if _, err := w.Replace(es); err != nil {
			b.Fatal(err)
		}
		return w.Store().Lister()
	}
	x := clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		if err := x.Add(p); err != nil {
			b.Fatal(err)
		}
	}
	theirs := corelisters.NewPodLister(x)
	scan, indexed := ours(b, false), ours(b, true)

	check := func(b *testing.B, got, want int) {
		if got != want {
			b.Fatalf("listed %d pods, want %d", got, want)
		}
	}
	run := func(name string, f func(b *testing.B)) {
		if runs(name[strings.LastIndex(name, "=")+1:]) {
			b.Run(name, func(b *testing.B) { b.ReportAllocs(); f(b) })
		}
	}
	run("query=list-all/impl=ours", func(b *testing.B) {
		for b.Loop() {
			got, _ := scan.List(sel)
			check(b, len(got), want)
		}
	})
	run("query=list-all/impl=client-go", func(b *testing.B) {
		for b.Loop() {
			got, _ := theirs.List(sel)
			check(b, len(got), want)
		}
	})
	run("query=list-all-label-index/impl=ours", func(b *testing.B) {
		for b.Loop() {
			got, _ := indexed.List(sel)
			check(b, len(got), want)
		}
	})
	run("query=list-all-label-index/impl=client-go", func(b *testing.B) {
		for b.Loop() {
			got, _ := theirs.List(sel)
			check(b, len(got), want)
		}
	})
	perNS := want / bench.Namespaces
	run("query=list-namespace/impl=ours", func(b *testing.B) {
		for b.Loop() {
			got, _ := scan.Namespace(ns).List(sel)
			check(b, len(got), perNS)
		}
	})
	run("query=list-namespace/impl=client-go", func(b *testing.B) {
		for b.Loop() {
			got, _ := theirs.Pods(ns).List(sel)
			check(b, len(got), perNS)
		}
	})
	run("query=get/impl=ours", func(b *testing.B) {
		for b.Loop() {
			if _, err := scan.Namespace(ns).Get(name); err != nil {
				b.Fatal(err)
			}
		}
	})
	run("query=get/impl=client-go", func(b *testing.B) {
		for b.Loop() {
			if _, err := theirs.Pods(ns).Get(name); err != nil {
				b.Fatal(err)
			}
		}
	})
}
