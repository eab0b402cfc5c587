package source_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// In a unit test, a projection comes from client-go's fake dynamic client
// through Convert: the fake holds whole Pods, and the informer caches the
// summaries.
func ExampleProjection_fake() {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		fmt.Println(err)
		return
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"},
		Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	dyn := dynamicfake.NewSimpleDynamicClient(scheme, p)

	pods, err := source.FromDynamic(dyn, corev1.SchemeGroupVersion.WithResource("pods"), source.DynamicOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	src, err := source.Convert[*PodSummary](pods)
	if err != nil {
		fmt.Println(err)
		return
	}
	inf, err := typed.NewInformer(src, typed.Options[*PodSummary]{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() { _ = inf.Run(ctx) }()
	if err := inf.WaitForSync(ctx); err != nil {
		fmt.Println(err)
		return
	}
	s, _ := inf.Lister().Namespace("shop").Get("web-1")
	fmt.Println(s.Name, s.Spec.NodeName, s.Status.Phase)
	// Output:
	// web-1 node-a Running
}
