package reconcile_test

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/reconcile"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// A controller over an informer of pods: Reconcile gets each pod's key and
// reads the pod from the informer's lister.
func ExampleNew() {
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0"}, Spec: corev1.PodSpec{NodeName: "node-1"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}, Spec: corev1.PodSpec{NodeName: "node-2"}},
	}})
	inf, err := typed.NewInformer(fake, typed.Options[*corev1.Pod]{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	seen := 0
	ctrl, err := reconcile.New(inf, reconcile.Func(func(ctx context.Context, key cache.Key) error {
		pod, err := inf.Lister().Namespace(key.Namespace).Get(key.Name)
		if apierrors.IsNotFound(err) {
			return nil // deleted: nothing to do
		} else if err != nil {
			return err // retried with backoff
		}
		fmt.Printf("reconcile %v: on %s\n", key, pod.Spec.NodeName)
		if seen++; seen == 2 { // one worker: calls never overlap
			cancel()
		}
		return nil
	}), reconcile.Options[*corev1.Pod]{})
	if err != nil {
		fmt.Println(err)
		return
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return inf.Run(ctx) })
	g.Go(func() error { return ctrl.Run(ctx) })
	fmt.Println("stopped:", g.Wait())
	// Keys come in the order the cache hands them out, which is not fixed.

	// Unordered output:
	// reconcile shop/web-0: on node-1
	// reconcile shop/web-1: on node-2
	// stopped: <nil>
}

// podAt returns a pod at a resourceVersion and generation, with labels.
func podAt(rv string, generation int64, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0",
		ResourceVersion: rv, Generation: generation, Labels: labels}}
}

func updated(old, cur *corev1.Pod) reconcile.Event[*corev1.Pod] {
	return reconcile.Event[*corev1.Pod]{Type: reconcile.Updated, Key: cache.KeyOf(cur), Old: old, Object: cur}
}

// GenerationChanged passes spec changes and filters out status-only
// updates.
func ExampleGenerationChanged() {
	p := reconcile.GenerationChanged[*corev1.Pod]()
	fmt.Println("spec change:", p(updated(podAt("10", 1, nil), podAt("11", 2, nil))))
	fmt.Println("status change:", p(updated(podAt("11", 2, nil), podAt("12", 2, nil))))
	// Output:
	// spec change: true
	// status change: false
}

// LabelsChanged passes updates that change the labels.
func ExampleLabelsChanged() {
	p := reconcile.LabelsChanged[*corev1.Pod]()
	web, db := map[string]string{"app": "web"}, map[string]string{"app": "db"}
	fmt.Println("relabelled:", p(updated(podAt("10", 1, web), podAt("11", 1, db))))
	fmt.Println("same labels:", p(updated(podAt("11", 1, db), podAt("12", 2, db))))
	// Output:
	// relabelled: true
	// same labels: false
}

// IgnoreResync filters out the updates of a resync or of a relist that
// found an object unchanged.
func ExampleIgnoreResync() {
	p := reconcile.IgnoreResync[*corev1.Pod]()
	cur := podAt("10", 1, nil)
	fmt.Println("resync:", p(updated(cur, cur)))
	fmt.Println("change:", p(updated(cur, podAt("11", 1, nil))))
	// Output:
	// resync: false
	// change: true
}

// Any passes updates that change either the spec or the labels.
func ExampleAny() {
	p := reconcile.Any(reconcile.GenerationChanged[*corev1.Pod](), reconcile.LabelsChanged[*corev1.Pod]())
	web := map[string]string{"app": "web"}
	fmt.Println("labels only:", p(updated(podAt("10", 1, nil), podAt("11", 1, web))))
	fmt.Println("status only:", p(updated(podAt("11", 1, web), podAt("12", 1, web))))
	// Output:
	// labels only: true
	// status only: false
}

// A Deployment controller that owns ReplicaSets: a ReplicaSet's change
// reconciles the Deployment that controls it, and the reconciler reads
// the Deployment's ReplicaSets from the owner index, with no scan.
func ExampleOwned() {
	deps := sourcetest.NewFake(sourcetest.FakeOptions[*appsv1.Deployment]{Objects: []*appsv1.Deployment{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}},
	}})
	yes := true
	rss := sourcetest.NewFake(sourcetest.FakeOptions[*appsv1.ReplicaSet]{Objects: []*appsv1.ReplicaSet{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-7d9f", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "1", Controller: &yes},
		}}},
	}})
	depInf, _ := typed.NewInformer(deps, typed.Options[*appsv1.Deployment]{})
	rsInf, _ := typed.NewInformer(rss, typed.Options[*appsv1.ReplicaSet]{})
	deployment := schema.GroupKind{Group: "apps", Kind: "Deployment"}

	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	ctrl, err := reconcile.New(depInf, reconcile.Func(func(_ context.Context, key cache.Key) error {
		owned, err := reconcile.OwnedBy(rsInf, deployment, key)
		if err != nil {
			return err
		}
		once.Do(func() { // the initial lists may bring the key twice
			fmt.Println(key, "owns", len(owned), "ReplicaSet(s)")
			cancel()
		})
		return nil
	}), reconcile.Options[*appsv1.Deployment]{
		Watches: []reconcile.Watch{reconcile.Owned(rsInf, deployment, reconcile.WatchOptions[*appsv1.ReplicaSet]{})},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return depInf.Run(ctx) })
	g.Go(func() error { return rsInf.Run(ctx) })
	g.Go(func() error { return ctrl.Run(ctx) })
	fmt.Println("stopped:", g.Wait())
	// Output:
	// shop/web owns 1 ReplicaSet(s)
	// stopped: <nil>
}
