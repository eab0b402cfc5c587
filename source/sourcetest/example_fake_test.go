package sourcetest_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

// A Fake lists and watches like an apiserver: list, then watch from the
// list's resourceVersion; once history is compacted, that version is gone
// and the watch fails with 410 Gone.
func ExampleNewFake() {
	ctx := context.Background()
	f := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{
		Resource: schema.GroupResource{Resource: "pods"},
		Scope:    cache.ScopeNamespaced,
		Objects:  []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"}}},
	})
	fmt.Println("serves", source.ResourceOf[*corev1.Pod](f).Resource)

	l, _ := f.List(ctx, metav1.ListOptions{})
	fmt.Println("listed", len(l.Items), "at", l.ResourceVersion)

	w, _ := f.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	defer w.Stop()
	_, _ = f.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-2"}})
	_, _ = f.Delete(cache.Key{Namespace: "default", Name: "web-1"})
	for range 2 {
		ev, _ := w.Next(ctx)
		fmt.Println(ev.Type, ev.Object.Name, ev.Object.ResourceVersion)
	}

	f.Compact()
	stale, _ := f.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	defer stale.Stop()
	_, err := stale.Next(ctx)
	fmt.Println("expired:", apierrors.IsResourceExpired(err))
	// Output:
	// serves pods
	// listed 1 at 101
	// ADDED web-2 102
	// DELETED web-1 103
	// expired: true
}

// Fault knobs simulate what goes wrong between a client and an apiserver.
func ExampleFake_CutWatches() {
	ctx := context.Background()
	f := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
	w, _ := f.Watch(ctx, metav1.ListOptions{ResourceVersion: f.ResourceVersion()})
	defer w.Stop()

	f.DropEvents(1)
	_, _ = f.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "missed"}})
	_, _ = f.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "seen"}})
	ev, _ := w.Next(ctx)
	fmt.Println(ev.Type, ev.Object.Name)

	f.CutWatches()
	_, err := w.Next(ctx)
	fmt.Println(err, f.OpenWatches())
	// Output:
	// ADDED seen
	// source: watch closed 0
}

// An injected error is what the next Next returns, after the events
// already on their way; then the stream ends.
func ExampleFake_InjectWatchError() {
	ctx := context.Background()
	f := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
	w, _ := f.Watch(ctx, metav1.ListOptions{ResourceVersion: f.ResourceVersion()})
	defer w.Stop()

	_, _ = f.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a"}})
	f.InjectWatchError(apierrors.NewTooManyRequests("slow down", 1))
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			fmt.Println(err, apierrors.IsTooManyRequests(err))
			break
		}
		fmt.Println(ev.Type, ev.Object.Name)
	}
	_, err := w.Next(ctx)
	fmt.Println(err)
	// Output:
	// ADDED a
	// watch: slow down true
	// source: watch closed
}

// ListerWatcher serves the fake to client-go: lists are *metav1.List
// values holding the objects, and errors are the API errors themselves.
func ExampleFake_ListerWatcher() {
	ctx := context.Background()
	f := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{
		Resource: schema.GroupResource{Resource: "pods"},
		Objects:  []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"}}},
	})
	lw := f.ListerWatcher()

	obj, _ := lw.ListWithContext(ctx, metav1.ListOptions{})
	items, _ := meta.ExtractList(obj)
	fmt.Printf("%T with %d item(s)\n", obj, len(items))

	_, err := lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: "999"})
	fmt.Println(err)
	// Output:
	// *v1.List with 1 item(s)
	// Timeout: Too large resource version: 999, current: 101
}
