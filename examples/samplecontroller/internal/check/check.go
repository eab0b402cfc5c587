// Package check is the scenario both versions of the sample controller
// are tested with against a real kube-apiserver: this library's
// (examples/samplecontroller) and controller-runtime's
// (examples/samplecontroller/controllerruntime), so their line counts in
// docs/reconcile.md compare controllers that do the same things.
package check

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// FooGVR is the resource of sample-controller's Foo.
var FooGVR = schema.GroupVersionResource{Group: "samplecontroller.k8s.io", Version: "v1alpha1", Resource: "foos"}

// Run runs the controller that run starts against the server of cfg, which
// has the Foo CRD installed, in a namespace "shop" it creates (there is no
// kube-controller-manager: no pods, no garbage collector, so the scenario
// plays their parts): a Foo gets its Deployment, scaling the Foo scales it,
// a Deployment scaled or deleted by hand is put back, its available replicas
// reach the Foo's status, a Deployment the Foo does not own is left alone,
// and a deleted Foo's Deployment is not made again. run must return nil
// when its context is cancelled.
func Run(t *testing.T, cfg *rest.Config, run func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	kube := kubernetes.NewForConfigOrDie(cfg)
	foos := dynamic.NewForConfigOrDie(cfg).Resource(FooGVR).Namespace("shop")
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("run = %v, want nil", err)
		}
	}()

	deps := kube.AppsV1().Deployments("shop")
	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("after a minute: %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	replicas := func(name string) int32 {
		d, err := deps.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return -1
		}
		return *d.Spec.Replicas
	}
	newFoo := func(name, deployment string, n int64) {
		t.Helper()
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": FooGVR.GroupVersion().String(), "kind": "Foo",
			"metadata": map[string]any{"name": name, "namespace": "shop"},
			"spec":     map[string]any{"deploymentName": deployment, "replicas": n},
		}}
		if _, err := foos.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	newFoo("example", "web", 1)
	eventually("the Foo's Deployment is created with 1 replica", func() bool { return replicas("web") == 1 })
	d, _ := deps.Get(ctx, "web", metav1.GetOptions{})
	if ref := metav1.GetControllerOf(d); ref == nil || ref.Kind != "Foo" || ref.Name != "example" {
		t.Errorf("the Deployment's controller is %+v, want Foo example", ref)
	}

	u, _ := foos.Get(ctx, "example", metav1.GetOptions{})
	_ = unstructured.SetNestedField(u.Object, int64(3), "spec", "replicas")
	if _, err := foos.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("scaling the Foo to 3 scales the Deployment", func() bool { return replicas("web") == 3 })

	d, _ = deps.Get(ctx, "web", metav1.GetOptions{})
	five := int32(5)
	d.Spec.Replicas = &five
	if _, err := deps.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the Deployment scaled by hand to 5 is put back to 3", func() bool { return replicas("web") == 3 })

	d, _ = deps.Get(ctx, "web", metav1.GetOptions{})
	d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = 3, 3, 3 // as kube-controller-manager would
	if _, err := deps.UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the Foo's status has 3 available replicas", func() bool {
		u, err := foos.Get(ctx, "example", metav1.GetOptions{})
		n, _, _ := unstructured.NestedInt64(u.Object, "status", "availableReplicas")
		return err == nil && n == 3
	})

	if err := deps.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the Deployment deleted by hand is made again", func() bool { return replicas("web") == 3 })

	unowned := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "shop"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "theirs"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "theirs"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:latest"}}}}}}
	one := int32(1)
	unowned.Spec.Replicas = &one
	if _, err := deps.Create(ctx, unowned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	newFoo("grabby", "theirs", 4)

	if err := foos.Delete(ctx, "example", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the controller's cache has the Foo deleted", func() bool {
		_, err := foos.Get(ctx, "example", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if err := deps.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil { // the garbage collector's part
		t.Fatal(err)
	}
	// A Foo created after both deletions is handled after them: by then
	// the Deployment of the deleted Foo would have been made again.
	newFoo("later", "later-web", 2)
	eventually("a later Foo gets its Deployment", func() bool { return replicas("later-web") == 2 })
	if n := replicas("web"); n != -1 {
		t.Errorf("the deleted Foo's Deployment was made again (%d replicas)", n)
	}
	if n := replicas("theirs"); n != 1 {
		t.Errorf("a Deployment the Foo does not own was changed to %d replicas, want it left at 1", n)
	}
	if d, _ := deps.Get(ctx, "theirs", metav1.GetOptions{}); metav1.GetControllerOf(d) != nil {
		t.Errorf("a Deployment the Foo does not own was adopted: %+v", metav1.GetControllerOf(d))
	}
}
