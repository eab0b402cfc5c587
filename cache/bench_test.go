package cache_test

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	clientcache "k8s.io/client-go/tools/cache"
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

func benchWriter(b *testing.B, pods []*corev1.Pod, labelIndex bool) *podWriter {
	b.Helper()
	opts := podOptions{Resource: podsResource}
	if labelIndex {
		opts.LabelIndexes = []string{"app"}
	}
	w := mustWriter(b, opts)
	if _, err := w.Replace(entries(pods...)); err != nil {
		b.Fatal(err)
	}
	return w
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
// our Lister (scanning, with a label index, and through ListSeq) and with
// client-go's generated pod lister over client-go's indexer.
func BenchmarkListerList(b *testing.B) {
	pods := benchPodSet(1)
	ours := benchWriter(b, pods, false).Store().Lister()
	oursIndexed := benchWriter(b, pods, true).Store().Lister()
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
				for range ours.ListSeq(s.sel) {
					n++
				}
				check(b, n)
			}
		})
		b.Run(s.name+"/ours-labelindex-seq", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				for range oursIndexed.ListSeq(s.sel) {
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

// BenchmarkWriterApply measures update churn: every operation replaces one
// of 10k stored pods with a new version, with our Writer (an Apply of one
// entry prepared beforehand, as an informer prepares it off the write
// path; "-literal" lets Apply index it) and with client-go's indexer, both
// maintaining a namespace index.
func BenchmarkWriterApply(b *testing.B) {
	versions := [2][]*corev1.Pod{benchPodSet(1), benchPodSet(2)}
	prepared := func(b *testing.B, w *podWriter) [2][]podEntry {
		var out [2][]podEntry
		for v, pods := range versions {
			out[v] = make([]podEntry, len(pods))
			for i, p := range pods {
				e, err := w.Prepare(p)
				if err != nil {
					b.Fatal(err)
				}
				out[v][i] = e
			}
		}
		return out
	}
	run := func(b *testing.B, w *podWriter, next func(i int) podEntry) {
		changes := make([]podChange, 1)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			changes[0] = podChange{Entry: next(i)}
			if _, err := w.Apply(changes); err != nil {
				b.Fatal(err)
			}
			i++
		}
	}
	// version(i) alternates versions every benchPods writes, so that every
	// write replaces the other version.
	version := func(i int) int { return (i/benchPods + 1) % 2 }
	for _, labelIndex := range []bool{false, true} {
		name := "ours"
		if labelIndex {
			name = "ours-labelindex"
		}
		b.Run(name, func(b *testing.B) {
			w := benchWriter(b, versions[0], labelIndex)
			es := prepared(b, w)
			run(b, w, func(i int) podEntry { return es[version(i)][i%benchPods] })
		})
	}
	b.Run("ours-literal", func(b *testing.B) {
		w := benchWriter(b, versions[0], false)
		run(b, w, func(i int) podEntry { return podEntry{Object: versions[version(i)][i%benchPods]} })
	})
	b.Run("client-go", func(b *testing.B) {
		x := benchClientGo(b, versions[0])
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := x.Update(versions[version(i)][i%benchPods]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
