package source_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// PodSummary holds what a controller that places pods reads of a Pod, and
// nothing else: decoded from the server's bytes, the rest is skipped.
type PodSummary struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		NodeName string `json:"nodeName"`
	} `json:"spec"`
	Status struct {
		Phase      corev1.PodPhase       `json:"phase"`
		Conditions []corev1.PodCondition `json:"conditions"`
	} `json:"status"`
}

// ProjectionOf says what PodSummary projects: Pods.
func (*PodSummary) ProjectionOf() runtime.Object { return &corev1.Pod{} }

// DeepCopyObject makes PodSummary a runtime.Object.
func (p *PodSummary) DeepCopyObject() runtime.Object { return source.DeepCopy(p) }

// A projection is listed and watched as the type it projects (the server
// is asked for Pods) and decoded into the struct alone, over JSON or
// protobuf; its informer, lister and handlers are typed by it.
func ExampleProjection() {
	p := pod("shop", "web-1", map[string]string{"app": "web"})
	p.Spec.NodeName, p.Status.Phase = "node-a", corev1.PodRunning
	p.Spec.Containers = []corev1.Container{{Name: "web", Image: "nginx"}} // not in the summary
	server := podserver.Start(sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: []*corev1.Pod{p}}))
	defer server.Close()

	src, err := source.FromConfig[*PodSummary](&rest.Config{Host: server.URL}, source.RESTOptions{Protobuf: true})
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

// DeepCopy is a projection's DeepCopyObject, or any struct's deep copy.
func ExampleDeepCopy() {
	a := &PodSummary{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{"app": "web"}}}
	b := source.DeepCopy(a)
	b.Labels["app"] = "db"
	fmt.Println(a.Labels["app"], b.Labels["app"])
	// Output:
	// web db
}
