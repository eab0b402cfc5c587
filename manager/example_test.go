package manager_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
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
