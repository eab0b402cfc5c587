//go:build integration

package main

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/testcluster"
)

// TestTenantControllerRealServer runs the controller against a real
// kube-apiserver over two tenant namespaces of three: a Service gets its
// ports ConfigMap, a changed Service changes it, a ConfigMap edited or
// deleted by hand is put back, a ConfigMap the Service does not own is
// left alone, a Service outside the set is not touched until its
// namespace joins the set.
func TestTenantControllerRealServer(t *testing.T) {
	leakcheck.Check(t) // after the cluster's stop
	c := testcluster.Start(t, testcluster.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cfg := c.AdminConfig()
	kube := kubernetes.NewForConfigOrDie(cfg)
	for _, ns := range []string{"t1", "t2", "t3"} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tenants, err := source.NewNamespaces("t1", "t2")
	if err != nil {
		t.Fatal(err)
	}
	// A ConfigMap in the way of Service db, not owned by it.
	if _, err := kube.CoreV1().ConfigMaps("t2").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "db-ports"}, Data: map[string]string{"mine": "yes"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(runCtx, cfg, tenants, "") }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("run = %v, want nil", err)
		}
	}()

	service := func(ns, name string, ports ...int32) {
		t.Helper()
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		for _, p := range ports {
			svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "p" + string(rune('a'+len(svc.Spec.Ports))), Port: p, Protocol: corev1.ProtocolTCP})
		}
		if _, err := kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ports := func(ns, name string) string {
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, name+"-ports", metav1.GetOptions{})
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return cm.Data["ports"]
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("after a minute: %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	service("t1", "web", 80, 443)
	service("t2", "db", 5432)
	service("t3", "other", 8080)
	eventually("web's ConfigMap", func() bool { return ports("t1", "web") == "443/TCP,80/TCP" })

	svc, err := kube.CoreV1().Services("t1").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Spec.Ports = svc.Spec.Ports[:1]
	if _, err := kube.CoreV1().Services("t1").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("web's ConfigMap follows its ports", func() bool { return ports("t1", "web") == "80/TCP" })

	cm, err := kube.CoreV1().ConfigMaps("t1").Get(ctx, "web-ports", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["ports"] = "edited"
	if _, err := kube.CoreV1().ConfigMaps("t1").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("an edit by hand put back", func() bool { return ports("t1", "web") == "80/TCP" })
	if err := kube.CoreV1().ConfigMaps("t1").Delete(ctx, "web-ports", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("a deletion by hand put back", func() bool { return ports("t1", "web") == "80/TCP" })

	if err := tenants.Add("t3"); err != nil {
		t.Fatal(err)
	}
	eventually("t3's Service gets its ConfigMap once t3 joins", func() bool { return ports("t3", "other") == "8080/TCP" })
	if cm, err := kube.CoreV1().ConfigMaps("t2").Get(ctx, "db-ports", metav1.GetOptions{}); err != nil || cm.Data["mine"] != "yes" || len(cm.OwnerReferences) != 0 {
		t.Errorf("the ConfigMap db does not own was changed: %v %v", cm, err)
	}
}
