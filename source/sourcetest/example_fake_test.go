package source_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// A Fake lists and watches like an apiserver: list, then watch from the
// list's resourceVersion; once history is compacted, that version is gone.
func ExampleNewFake() {
	ctx := context.Background()
	f := source.NewFake(source.FakeOptions[*corev1.Pod]{
		Objects: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"}}},
	})

	l, _ := f.List(ctx, metav1.ListOptions{})
	fmt.Println("listed", len(l.Items), "at", l.ResourceVersion)

	w, _ := f.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	defer w.Stop()
	_, _ = f.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-2"}})
	_, _ = f.Delete(cache.Key{Namespace: "default", Name: "web-1"})
	for range 2 {
		ev, _ := w.Next(ctx)
		fmt.Println(ev.Type, ev.Object.Name, ev.Object.ResourceVersion)
	}

	f.Compact()
	stale, _ := f.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	ev, _ := stale.Next(ctx)
	fmt.Println(ev.Type, apierrors.IsResourceExpired(ev.Err))
	// Output:
	// listed 1 at 101
	// ADDED web-2 102
	// DELETED web-1 103
	// ERROR true
}

// Fault knobs simulate what goes wrong between a client and an apiserver.
func ExampleFake_CutWatches() {
	ctx := context.Background()
	f := source.NewFake(source.FakeOptions[*corev1.Pod]{})
	w, _ := f.Watch(ctx, metav1.ListOptions{ResourceVersion: f.ResourceVersion()})

	f.DropEvents(1)
	_, _ = f.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "missed"}})
	_, _ = f.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "seen"}})
	ev, _ := w.Next(ctx)
	fmt.Println(ev.Type, ev.Object.Name)

	f.CutWatches()
	_, err := w.Next(ctx)
	fmt.Println(err, f.OpenWatches())
	// Output:
	// ADDED seen
	// source: watch closed 0
}
