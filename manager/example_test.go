package manager_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/manager"
	"github.com/typedinformer/informer/reconcile"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// An informer and a controller run by a manager, which stops both when
// the context ends (here, once the one pod was reconciled).
func ExampleNew() {
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0"}},
	}})
	pods, _ := typed.NewInformer(fake, typed.Options[*corev1.Pod]{})
	ctx, cancel := context.WithCancel(context.Background())
	ctrl, _ := reconcile.New(pods, reconcile.Func(func(_ context.Context, key cache.Key) error {
		fmt.Println("reconciled", key)
		cancel()
		return nil
	}), reconcile.Options[*corev1.Pod]{})

	m, err := manager.New(manager.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = manager.AddInformer(m, pods)
	_ = m.AddController(ctrl)
	fmt.Println("run:", m.Run(ctx))
	// Output:
	// reconciled shop/web-0
	// run: <nil>
}

// For, Owns and Complete make a controller of Services that owns
// ConfigMaps, on a factory over client-go's fake clientset here
// (manager.Options{Config: cfg} for a cluster): the Service is reconciled
// at start and again when its ConfigMap changes.
func ExampleFor() {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u1"}}
	owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-ports",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))}}}
	cs := fake.NewClientset(svc, owned)
	f, _ := factory.NewForClientsets([]any{cs}, factory.Options{})
	m, _ := manager.New(manager.Options{Factory: f})

	ctx, cancel := context.WithCancel(context.Background())
	updated := false
	ctrl := manager.For[*corev1.Service](m, "service-ports", factory.Scope{Namespace: "shop"})
	configMaps := manager.Owns[*corev1.ConfigMap](ctrl, reconcile.WatchOptions[*corev1.ConfigMap]{})
	err := ctrl.Complete(reconcile.Func(func(ctx context.Context, key cache.Key) error {
		children, err := reconcile.OwnedBy(configMaps, schema.GroupKind{Kind: "Service"}, key)
		if err != nil || len(children) != 1 {
			return fmt.Errorf("children of %v: %d, %v", key, len(children), err)
		}
		if ports := children[0].Data["ports"]; ports != "" {
			fmt.Println("reconciled", key, "after its configmap changed: ports", ports)
			cancel()
			return nil
		}
		if !updated { // someone edits the child
			updated = true
			cm := owned.DeepCopy()
			cm.Data = map[string]string{"ports": "80/TCP"}
			_, err = cs.CoreV1().ConfigMaps("shop").Update(ctx, cm, metav1.UpdateOptions{})
		}
		return err
	}))
	fmt.Println("complete:", err)
	fmt.Println("run:", m.Run(ctx))
	// Output:
	// complete: <nil>
	// reconciled shop/web after its configmap changed: ports 80/TCP
	// run: <nil>
}
