package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/manager"
	"github.com/typedinformer/informer/reconcile"
	"github.com/typedinformer/informer/source"
)

// run runs the controller over the namespaces of tenants until ctx ends,
// with its debug page on addr ("" for none).
func run(ctx context.Context, cfg *rest.Config, tenants *source.Namespaces, addr string) error {
	m, err := manager.New(manager.Options{Config: cfg, Addr: addr})
	if err != nil {
		return err
	}
	ctrl := manager.For[*corev1.Service](m, "service-ports", factory.Scope{Namespaces: tenants})
	services, kube := ctrl.Informer(), m.Clientset()
	configMaps := manager.Owns[*corev1.ConfigMap](ctrl, reconcile.WatchOptions[*corev1.ConfigMap]{})
	if err := ctrl.Complete(reconcile.Func(func(ctx context.Context, key cache.Key) error {
		svc, err := services.Lister().Namespace(key.Namespace).Get(key.Name)
		if apierrors.IsNotFound(err) {
			return nil // its ConfigMap goes with it: the garbage collector follows the owner reference
		} else if err != nil {
			return err
		}
		want := portsConfigMap(svc)
		cm, err := configMaps.Lister().Namespace(key.Namespace).Get(want.Name)
		switch {
		case apierrors.IsNotFound(err):
			_, err = kube.CoreV1().ConfigMaps(key.Namespace).Create(ctx, want, metav1.CreateOptions{})
		case err == nil && !metav1.IsControlledBy(cm, svc):
			return reconcile.Terminal(fmt.Errorf("configmap %s/%s exists and is not managed by service %s", cm.Namespace, cm.Name, svc.Name))
		case err == nil && !maps.Equal(cm.Data, want.Data):
			cm = cm.DeepCopy()
			cm.Data = want.Data
			_, err = kube.CoreV1().ConfigMaps(key.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
		}
		if err != nil {
			return err
		}
		return reconcile.RequeueAfter(10 * time.Minute) // and look again now and then
	})); err != nil {
		return err
	}
	return m.Run(ctx)
}

// portsConfigMap is the ConfigMap the controller keeps for svc: its ports,
// owned by it.
func portsConfigMap(svc *corev1.Service) *corev1.ConfigMap {
	var ports []string
	for _, p := range svc.Spec.Ports {
		ports = append(ports, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
	}
	slices.Sort(ports)
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: svc.Namespace, Name: svc.Name + "-ports",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))},
		},
		Data: map[string]string{"ports": strings.Join(ports, ",")},
	}
}
