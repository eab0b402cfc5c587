package main

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/manager"
	"github.com/typedinformer/informer/reconcile"
	"github.com/typedinformer/informer/source"
)

// Foo is sample-controller's custom resource, as a plain Go struct.
type Foo struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		DeploymentName string `json:"deploymentName"`
		Replicas       *int32 `json:"replicas"`
	} `json:"spec"`
	Status struct {
		AvailableReplicas int32 `json:"availableReplicas"`
	} `json:"status"`
}

// DeepCopyObject copies the Foo.
func (f *Foo) DeepCopyObject() runtime.Object { return source.DeepCopy(f) }

var fooGVK = schema.GroupVersionKind{Group: "samplecontroller.k8s.io", Version: "v1alpha1", Kind: "Foo"}

// run runs the controller until ctx ends, with its debug page on addr.
func run(ctx context.Context, cfg *rest.Config, addr string) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	foos, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	sch := runtime.NewScheme()
	sch.AddKnownTypeWithName(fooGVK, &Foo{})
	_ = scheme.AddToScheme(sch)
	f, err := factory.New(cfg, factory.Options{Scheme: sch})
	if err != nil {
		return err
	}
	m, err := manager.New(manager.Options{Factory: f, Addr: addr})
	if err != nil {
		return err
	}
	fooInf, err := manager.InformerFor[*Foo](m, factory.Scope{})
	if err != nil {
		return err
	}
	deps, err := manager.InformerFor[*appsv1.Deployment](m, factory.Scope{})
	if err != nil {
		return err
	}
	ctrl, err := reconcile.New(fooInf, reconcile.Func(func(ctx context.Context, key cache.Key) error {
		foo, err := fooInf.Lister().Namespace(key.Namespace).Get(key.Name)
		if apierrors.IsNotFound(err) {
			return nil // its Deployment goes with it: the garbage collector follows the owner reference
		} else if err != nil {
			return err
		} else if foo.Spec.DeploymentName == "" {
			return reconcile.Terminal(fmt.Errorf("foo %v: spec.deploymentName is empty", key))
		}
		want := newDeployment(foo)
		d, err := deps.Lister().Namespace(key.Namespace).Get(foo.Spec.DeploymentName)
		switch {
		case apierrors.IsNotFound(err):
			d, err = kube.AppsV1().Deployments(key.Namespace).Create(ctx, want, metav1.CreateOptions{})
		case err == nil && !metav1.IsControlledBy(d, foo):
			return reconcile.Terminal(fmt.Errorf("deployment %s/%s exists and is not managed by Foo %s", d.Namespace, d.Name, foo.Name))
		case err == nil && *d.Spec.Replicas != *want.Spec.Replicas:
			d = d.DeepCopy()
			d.Spec.Replicas = want.Spec.Replicas
			d, err = kube.AppsV1().Deployments(key.Namespace).Update(ctx, d, metav1.UpdateOptions{})
		}
		if err != nil || foo.Status.AvailableReplicas == d.Status.AvailableReplicas {
			return err
		}
		status := fmt.Sprintf(`{"status":{"availableReplicas":%d}}`, d.Status.AvailableReplicas)
		_, err = foos.Resource(fooGVK.GroupVersion().WithResource("foos")).Namespace(key.Namespace).
			Patch(ctx, key.Name, types.MergePatchType, []byte(status), metav1.PatchOptions{}, "status")
		return err
	}), reconcile.Options[*Foo]{Name: "foo", Workers: 2, Watches: []reconcile.Watch{
		reconcile.Owned(deps, fooGVK.GroupKind(), reconcile.WatchOptions[*appsv1.Deployment]{}),
	}})
	if err != nil {
		return err
	}
	if err := m.AddController(ctrl); err != nil {
		return err
	}
	return m.Run(ctx)
}

// newDeployment is the Deployment foo wants: nginx, spec.replicas of
// them (1 if unset), controlled by foo.
func newDeployment(foo *Foo) *appsv1.Deployment {
	replicas, labels := int32(1), map[string]string{"app": "nginx", "controller": foo.Name}
	if foo.Spec.Replicas != nil {
		replicas = *foo.Spec.Replicas
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: foo.Spec.DeploymentName, Namespace: foo.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(foo, fooGVK)}},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:latest"}}}}},
	}
}
