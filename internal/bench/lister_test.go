package bench_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/bench"
)

// listerPods are the pods of a lister benchmark, in bench.Namespaces
// namespaces.
const listerPods = 10000

// listerApp is the app the lister benchmarks select: one pod in 10 of the
// friendly layout, one in bench.Apps of the others.
const listerApp = "app-3"

// BenchmarkLister measures the queries controllers make of a cache of 10k
// pods in 10 namespaces, for each label layout of bench.Labels (the
// friendly one, with 10 label sets, and the realistic ones, with a set per
// ReplicaSet or per pod; each sub-benchmark reports the number as
// label-sets):
//
//   - query=list-all: List(app=app-3) over every namespace, by a scan;
//     client-go's generated pod lister over its indexer.
//   - query=list-all-label-index: the same List from a label index on app.
//     client-go's side is what its users write for an indexed label: an
//     Indexer with an index on the app label, queried with ByIndex and the
//     items converted to *corev1.Pod (its generated listers do not use
//     custom indexes).
//   - query=list-namespace: List(app=app-3) in one namespace; client-go's
//     lister uses its namespace index.
//   - query=get: Get by namespace and name.
//
// impl=floor is a scan with nothing but the scan: a loop over a slice of
// the pods that reads one label of each and appends the matches to a
// presized result, with no lock, no table and no selector. It is what any
// cache that reads every object's labels pays at least.
func BenchmarkLister(b *testing.B) {
	for _, l := range []bench.Labels{bench.LabelsFriendly, bench.LabelsDeployment, bench.LabelsStatefulSet} {
		b.Run("labels="+l.String(), func(b *testing.B) { benchLister(b, l) })
	}
}

// listerFixture is what the sub-benchmarks of one layout share.
type listerFixture struct {
	pods      []*corev1.Pod
	sets      int
	sel       labels.Selector
	want, ns  int // pods selected in all namespaces and in one
	namespace string
	name      string
}

func benchLister(b *testing.B, l bench.Labels) {
	pods := bench.Pods(listerPods, bench.PodOptions{Labels: l})
	fx := listerFixture{
		pods: pods, sets: bench.LabelSets(pods),
		sel:       labels.SelectorFromSet(labels.Set{"app": listerApp}),
		namespace: pods[3].Namespace, name: pods[3].Name,
	}
	for _, p := range pods {
		if p.Labels["app"] == listerApp {
			fx.want++
			if p.Namespace == fx.namespace {
				fx.ns++
			}
		}
	}
	if fx.want == 0 || fx.ns == 0 {
		b.Fatalf("no pod of app %s in namespace %s", listerApp, fx.namespace)
	}
	rows := map[string]map[string]func(b *testing.B){} // query -> impl -> benchmark
	add := func(query, impl string, f func(b *testing.B)) {
		if rows[query] == nil {
			rows[query] = map[string]func(b *testing.B){}
		}
		rows[query][impl] = f
	}
	if runs("ours") {
		listerOurs(b, fx, add)
	}
	if runs("client-go") {
		listerClientGo(b, fx, add)
	}
	if runs("floor") {
		add("list-all", "floor", func(b *testing.B) {
			for b.Loop() {
				out := make([]*corev1.Pod, 0, fx.want)
				for _, p := range fx.pods {
					if p.Labels["app"] == listerApp {
						out = append(out, p)
					}
				}
				checkListed(b, len(out), fx.want)
			}
		})
	}
	for _, query := range []string{"list-all", "list-all-label-index", "list-namespace", "get"} {
		b.Run("query="+query, func(b *testing.B) {
			for _, impl := range []string{"ours", "client-go", "floor"} {
				if f := rows[query][impl]; f != nil {
					runSide(b, impl, func(b *testing.B) {
						b.ReportAllocs()
						f(b)
						b.ReportMetric(float64(fx.sets), "label-sets")
					})
				}
			}
		})
	}
}

func checkListed(b *testing.B, got, want int) {
	if got != want {
		b.Fatalf("listed %d pods, want %d", got, want)
	}
}

// listerOurs runs our side: a cache without label indexes for the scans
// and Get, one with a label index on app for list-all-label-index.
func listerOurs(b *testing.B, fx listerFixture, add func(query, impl string, f func(b *testing.B))) {
	build := func(labelIndex bool) *cache.Lister[*corev1.Pod] {
		opts := cache.Options[*corev1.Pod]{Scope: cache.ScopeNamespaced, Resource: corev1.Resource("pods")}
		if labelIndex {
			opts.LabelIndexes = []string{"app"}
		}
		w, err := cache.NewWriter(opts)
		if err != nil {
			b.Fatal(err)
		}
		es := make([]cache.Entry[*corev1.Pod], len(fx.pods))
		for i, p := range fx.pods {
			es[i] = cache.Entry[*corev1.Pod]{Object: p}
		}
		if _, err := w.Replace(es); err != nil {
			b.Fatal(err)
		}
		return w.Store().Lister()
	}
	scan, indexed := build(false), build(true)
	add("list-all", "ours", func(b *testing.B) {
		for b.Loop() {
			got, _ := scan.List(fx.sel)
			checkListed(b, len(got), fx.want)
		}
	})
	add("list-all-label-index", "ours", func(b *testing.B) {
		for b.Loop() {
			got, _ := indexed.List(fx.sel)
			checkListed(b, len(got), fx.want)
		}
	})
	add("list-namespace", "ours", func(b *testing.B) {
		for b.Loop() {
			got, _ := scan.Namespace(fx.namespace).List(fx.sel)
			checkListed(b, len(got), fx.ns)
		}
	})
	add("get", "ours", func(b *testing.B) {
		for b.Loop() {
			if _, err := scan.Namespace(fx.namespace).Get(fx.name); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// appIndex is client-go's index function for the app label.
func appIndex(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("not a pod: %T", obj)
	}
	if v, ok := p.Labels["app"]; ok {
		return []string{v}, nil
	}
	return nil, nil
}

// listerClientGo runs client-go's side: its generated pod lister over an
// indexer with the namespace index and, for list-all-label-index, an
// index on the app label.
func listerClientGo(b *testing.B, fx listerFixture, add func(query, impl string, f func(b *testing.B))) {
	x := clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, clientcache.Indexers{
		clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc,
		"app":                      appIndex,
	})
	for _, p := range fx.pods {
		if err := x.Add(p); err != nil {
			b.Fatal(err)
		}
	}
	lister := corelisters.NewPodLister(x)
	add("list-all", "client-go", func(b *testing.B) {
		for b.Loop() {
			got, _ := lister.List(fx.sel)
			checkListed(b, len(got), fx.want)
		}
	})
	add("list-all-label-index", "client-go", func(b *testing.B) {
		for b.Loop() {
			items, err := x.ByIndex("app", listerApp)
			if err != nil {
				b.Fatal(err)
			}
			got := make([]*corev1.Pod, 0, len(items))
			for _, it := range items {
				got = append(got, it.(*corev1.Pod))
			}
			checkListed(b, len(got), fx.want)
		}
	})
	add("list-namespace", "client-go", func(b *testing.B) {
		for b.Loop() {
			got, _ := lister.Pods(fx.namespace).List(fx.sel)
			checkListed(b, len(got), fx.ns)
		}
	})
	add("get", "client-go", func(b *testing.B) {
		for b.Loop() {
			if _, err := lister.Pods(fx.namespace).Get(fx.name); err != nil {
				b.Fatal(err)
			}
		}
	})
}
