package reconcile_test

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	// Output:
	// reconcile shop/web-0: on node-1
	// reconcile shop/web-1: on node-2
	// stopped: <nil>
}
