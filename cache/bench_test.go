package cache_test

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
)

const (
	benchPods       = 10000
	benchNamespaces = 100
)

// benchPodSet returns benchPods pods in benchNamespaces namespaces; one in
// ten has app=web. version tells versions of the same pods apart.
func benchPodSet(version int) []*corev1.Pod {
	out := make([]*corev1.Pod, benchPods)
	for i := range out {
		app := "app-" + strconv.Itoa(i%10)
		if i%10 == 0 {
			app = "web"
		}
		out[i] = newPod("ns-"+strconv.Itoa(i%benchNamespaces), "pod-"+strconv.Itoa(i), strconv.Itoa(version),
			"app", app, "tier", "tier-"+strconv.Itoa(i%3))
	}
	return out
}

func benchOurs(b *testing.B, pods []*corev1.Pod, labelIndex bool) *cache.Lister[*corev1.Pod] {
	b.Helper()
	opts := cache.IndexerOptions[*corev1.Pod]{}
	if labelIndex {
		opts.Indexers = cache.Indexers[*corev1.Pod]{cache.LabelIndexName("app"): cache.IndexByLabel[*corev1.Pod]("app")}
	}
	x := mustIndexer(b, opts)
	if err := x.Replace(pods, "1"); err != nil {
		b.Fatal(err)
	}
	return cache.NewLister(x, podsResource)
}

func benchClientGo(b *testing.B, pods []*corev1.Pod) clientcache.Indexer {
	b.Helper()
	x := clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc})
	objs := make([]any, len(pods))
	for i, p := range pods {
		objs[i] = p
	}
	if err := x.Replace(objs, "1"); err != nil {
		b.Fatal(err)
	}
	return x
}

// BenchmarkListerList lists across all namespaces with a selector, with
// our Lister (scanning, with a label index, and through Seq) and with
// client-go's generated pod lister over client-go's indexer.
func BenchmarkListerList(b *testing.B) {
	pods := benchPodSet(1)
	ours := benchOurs(b, pods, false)
	oursIndexed := benchOurs(b, pods, true)
	clientGo := corelisters.NewPodLister(benchClientGo(b, pods))
	for _, s := range []struct {
		name string
		sel  labels.Selector
		want int
	}{
		{"app=web", labels.SelectorFromSet(labels.Set{"app": "web"}), benchPods / 10},
		{"everything", labels.Everything(), benchPods},
	} {
		check := func(b *testing.B, n int) {
			if n != s.want {
				b.Fatalf("listed %d pods, want %d", n, s.want)
			}
		}
		b.Run(s.name+"/ours", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				got, _ := ours.List(s.sel)
				check(b, len(got))
			}
		})
		b.Run(s.name+"/ours-labelindex", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				got, _ := oursIndexed.List(s.sel)
				check(b, len(got))
			}
		})
		b.Run(s.name+"/ours-seq", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				for range ours.Seq(s.sel) {
					n++
				}
				check(b, n)
			}
		})
		b.Run(s.name+"/ours-labelindex-seq", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				for range oursIndexed.Seq(s.sel) {
					n++
				}
				check(b, n)
			}
		})
		b.Run(s.name+"/client-go", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				got, _ := clientGo.List(s.sel)
				check(b, len(got))
			}
		})
	}
}

// BenchmarkIndexerAdd measures update churn: every operation replaces one
// of 10k stored pods with a new version, with our Indexer and client-go's,
// both maintaining a namespace index.
func BenchmarkIndexerAdd(b *testing.B) {
	versions := [2][]*corev1.Pod{benchPodSet(1), benchPodSet(2)}
	b.Run("ours", func(b *testing.B) {
		x := mustIndexer(b, cache.IndexerOptions[*corev1.Pod]{})
		if err := x.Replace(versions[0], "1"); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := x.Update(versions[(i/benchPods+1)%2][i%benchPods]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("ours-labelindex", func(b *testing.B) {
		x := mustIndexer(b, cache.IndexerOptions[*corev1.Pod]{
			Indexers: cache.Indexers[*corev1.Pod]{cache.LabelIndexName("app"): cache.IndexByLabel[*corev1.Pod]("app")},
		})
		if err := x.Replace(versions[0], "1"); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := x.Update(versions[(i/benchPods+1)%2][i%benchPods]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("client-go", func(b *testing.B) {
		x := benchClientGo(b, versions[0])
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := x.Update(versions[(i/benchPods+1)%2][i%benchPods]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
