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
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Foo is sample-controller's custom resource.
type Foo struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              FooSpec   `json:"spec"`
	Status            FooStatus `json:"status"`
}

// FooSpec is what a Foo asks for.
type FooSpec struct {
	DeploymentName string `json:"deploymentName"`
	Replicas       *int32 `json:"replicas"`
}

// FooStatus is what a Foo has.
type FooStatus struct {
	AvailableReplicas int32 `json:"availableReplicas"`
}

// FooList is a list of Foos, which controller-runtime's cache lists.
type FooList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []Foo `json:"items"`
}

// DeepCopyObject copies the Foo (controller-gen would generate this).
func (f *Foo) DeepCopyObject() runtime.Object {
	out := *f
	f.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if f.Spec.Replicas != nil {
		n := *f.Spec.Replicas
		out.Spec.Replicas = &n
	}
	return &out
}

// DeepCopyObject copies the list (controller-gen would generate this).
func (l *FooList) DeepCopyObject() runtime.Object {
	out := *l
	out.Items = make([]Foo, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*Foo)
	}
	return &out
}

var fooGV = schema.GroupVersion{Group: "samplecontroller.k8s.io", Version: "v1alpha1"}

// FooReconciler keeps each Foo's Deployment as the Foo wants it.
type FooReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

// Reconcile makes the Deployment of the Foo req names, puts back its
// replicas, and copies its available replicas to the Foo's status.
func (r *FooReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var foo Foo
	if err := r.Get(ctx, req.NamespacedName, &foo); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err) // its Deployment goes with it: the garbage collector follows the owner reference
	}
	if foo.Spec.DeploymentName == "" {
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("foo %v: spec.deploymentName is empty", req.NamespacedName))
	}
	want := newDeployment(&foo)
	if err := ctrl.SetControllerReference(&foo, want, r.Scheme); err != nil {
		return ctrl.Result{}, err
	}
	var d appsv1.Deployment
	err := r.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: foo.Spec.DeploymentName}, &d)
	switch {
	case apierrors.IsNotFound(err):
		d = *want
		err = r.Create(ctx, &d)
	case err == nil && !metav1.IsControlledBy(&d, &foo):
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("deployment %s/%s exists and is not managed by Foo %s", d.Namespace, d.Name, foo.Name))
	case err == nil && *d.Spec.Replicas != *want.Spec.Replicas:
		d.Spec.Replicas = want.Spec.Replicas
		err = r.Update(ctx, &d)
	}
	if err != nil || foo.Status.AvailableReplicas == d.Status.AvailableReplicas {
		return ctrl.Result{}, err
	}
	foo.Status.AvailableReplicas = d.Status.AvailableReplicas
	return ctrl.Result{}, r.Status().Update(ctx, &foo)
}

// run runs the controller until ctx ends, with its readiness probe on addr
// ("" for none).
func run(ctx context.Context, cfg *rest.Config, addr string) error {
	sch := runtime.NewScheme()
	sch.AddKnownTypes(fooGV, &Foo{}, &FooList{})
	metav1.AddToGroupVersion(sch, fooGV)
	if err := clientgoscheme.AddToScheme(sch); err != nil {
		return err
	}
	if addr == "" {
		addr = "0"
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: sch, HealthProbeBindAddress: addr,
		Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	err = ctrl.NewControllerManagedBy(mgr).For(&Foo{}).Owns(&appsv1.Deployment{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Complete(&FooReconciler{Client: mgr.GetClient(), Scheme: sch})
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// newDeployment is the Deployment foo wants: nginx, spec.replicas of
// them (1 if unset).
func newDeployment(foo *Foo) *appsv1.Deployment {
	replicas, labels := int32(1), map[string]string{"app": "nginx", "controller": foo.Name}
	if foo.Spec.Replicas != nil {
		replicas = *foo.Spec.Replicas
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: foo.Spec.DeploymentName, Namespace: foo.Namespace},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:latest"}}}}},
	}
}
