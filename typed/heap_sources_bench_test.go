package typed_test

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

var heapObjects = flag.Int("heap.objects", 10000, "BenchmarkHeapPerObject: objects in the informer")

// benchSecret is a TLS Secret of ~1 KB of data, with labels and the
// managedFields of benchPod's helper, as the API server returns it.
func benchSecret(i int) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       fmt.Sprintf("ns-%d", i%50),
			Name:            fmt.Sprintf("secret-%d", i),
			UID:             "0000-1111-3333",
			ResourceVersion: fmt.Sprint(1000 + i),
			Labels:          map[string]string{"app": fmt.Sprintf("app-%d", i%20), "tier": "web"},
		},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{
			corev1.TLSCertKey:       []byte(strings.Repeat("c", 700)),
			corev1.TLSPrivateKeyKey: []byte(strings.Repeat("k", 324)),
		},
	}
	s.ManagedFields = withManagedFields(&corev1.Pod{}).ManagedFields
	return s
}

// objectsLW is a client-go ListerWatcher that lists one prepared list
// and then serves a watch on which nothing happens; it refuses streaming
// lists, so the informer takes the LIST path.
type objectsLW struct {
	list runtime.Object
	w    *watch.FakeWatcher
}

func (l *objectsLW) List(metav1.ListOptions) (runtime.Object, error) { return l.list, nil }

func (l *objectsLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		return nil, apierrors.NewBadRequest("streaming lists are off in this benchmark")
	}
	return l.w, nil
}

// heapPerObject returns the heap an informer holds per cached object once
// it has synced the n objects of the list makeList builds: the list is
// built fresh after the baseline and only the informer keeps its objects
// (the source copies list items out of the list), so the figure is the
// cached object plus the informer's overhead.
func heapPerObject[T cache.Object](b *testing.B, n int, makeList func() runtime.Object, opts typed.Options[T]) float64 {
	b.Helper()
	before := heapInUse()
	lw := &objectsLW{list: makeList(), w: watch.NewFakeWithChanSize(1, false)}
	src, err := source.FromListerWatcher[T](lw)
	if err != nil {
		b.Fatal(err)
	}
	opts.NoWatchList = true
	inf, err := typed.NewInformer(src, opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = inf.Run(ctx) })
	defer func() {
		cancel()
		wg.Wait()
	}()
	if err := inf.WaitForSync(ctx); err != nil {
		b.Fatal(err)
	}
	lw.list = nil // only the informer holds the objects now
	after := heapInUse()
	if c := inf.Store().Len(); c != n {
		b.Fatalf("cached %d objects, want %d", c, n)
	}
	return float64(int64(after)-int64(before)) / float64(n)
}

// metadataList is the list the metadata client returns for objs: their
// metadata only (the informer drops managedFields, as for the others).
func metadataList[T metav1.Object](apiVersion, kind string, objs []T) *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: make([]metav1.PartialObjectMetadata, len(objs))}
	for i, o := range objs {
		l.Items[i] = metav1.PartialObjectMetadata{
			TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
			ObjectMeta: metav1.ObjectMeta{
				Namespace: o.GetNamespace(), Name: o.GetName(), UID: o.GetUID(), ResourceVersion: o.GetResourceVersion(),
				Labels: o.GetLabels(), Annotations: o.GetAnnotations(), OwnerReferences: o.GetOwnerReferences(),
				ManagedFields: o.GetManagedFields(),
			},
		}
	}
	return l
}

// BenchmarkHeapPerObject reports the heap an informer holds per cached
// object (-heap.objects of them, 10k by default) for pods (~4 KB, with a
// 2.5 KB annotation) and TLS Secrets (~1 KB of data), each with the
// managedFields an API server sends, cached three ways: the full typed
// object; metadata only (*metav1.PartialObjectMetadata, what FromMetadata
// serves); and the typed object trimmed by a Transform to what a
// controller needs (a pod's node and phase, a Secret without its data).
// managedFields are dropped in all three, the informer's default.
func BenchmarkHeapPerObject(b *testing.B) {
	n := *heapObjects
	pods := func() []*corev1.Pod {
		out := make([]*corev1.Pod, n)
		for i := range out {
			out[i] = withManagedFields(benchPod(i))
			out[i].Status.Phase = corev1.PodRunning
		}
		return out
	}
	podList := func() runtime.Object {
		l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: make([]corev1.Pod, n)}
		for i, p := range pods() {
			l.Items[i] = *p
		}
		return l
	}
	secrets := func() []*corev1.Secret {
		out := make([]*corev1.Secret, n)
		for i := range out {
			out[i] = benchSecret(i)
		}
		return out
	}
	secretList := func() runtime.Object {
		l := &corev1.SecretList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: make([]corev1.Secret, n)}
		for i, s := range secrets() {
			l.Items[i] = *s
		}
		return l
	}
	trimPod := func(p *corev1.Pod) (*corev1.Pod, error) {
		p.Spec = corev1.PodSpec{NodeName: p.Spec.NodeName}
		p.Status = corev1.PodStatus{Phase: p.Status.Phase}
		return p, nil
	}
	trimSecret := func(s *corev1.Secret) (*corev1.Secret, error) {
		s.Data, s.StringData = nil, nil
		return s, nil
	}
	cases := []struct {
		name string
		run  func(b *testing.B) float64
	}{
		{"pods/full", func(b *testing.B) float64 {
			return heapPerObject(b, n, podList, typed.Options[*corev1.Pod]{})
		}},
		{"pods/metadata", func(b *testing.B) float64 {
			return heapPerObject(b, n, func() runtime.Object { return metadataList("v1", "Pod", pods()) }, typed.Options[*metav1.PartialObjectMetadata]{})
		}},
		{"pods/trimmed", func(b *testing.B) float64 {
			return heapPerObject(b, n, podList, typed.Options[*corev1.Pod]{Transform: trimPod})
		}},
		{"secrets/full", func(b *testing.B) float64 {
			return heapPerObject(b, n, secretList, typed.Options[*corev1.Secret]{})
		}},
		{"secrets/metadata", func(b *testing.B) float64 {
			return heapPerObject(b, n, func() runtime.Object { return metadataList("v1", "Secret", secrets()) }, typed.Options[*metav1.PartialObjectMetadata]{})
		}},
		{"secrets/trimmed", func(b *testing.B) float64 {
			return heapPerObject(b, n, secretList, typed.Options[*corev1.Secret]{Transform: trimSecret})
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var per float64
			for range b.N {
				per = c.run(b)
			}
			b.ReportMetric(per, "B/object")
		})
	}
}
