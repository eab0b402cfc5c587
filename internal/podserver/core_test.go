package podserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// TestCore: an informer of ConfigMaps over a Core that serves ConfigMaps
// and Services syncs by list and follows the watch, in JSON and in
// protobuf, over HTTP/2; a resource the server does not serve is a 404.
func TestCore(t *testing.T) {
	for _, proto := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "protobuf"}[proto], func(t *testing.T) {
			cms := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.ConfigMap]{Objects: []*corev1.ConfigMap{
				{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "one"}, Data: map[string]string{"k": "v"}},
				{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "two"}},
			}})
			svcs := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Service]{})
			srv := podserver.NewCore(t, podserver.Serve("configmaps", "ConfigMap", cms), podserver.Serve("services", "Service", svcs))
			mapper := meta.NewDefaultRESTMapper(nil)
			mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
			mapper.Add(corev1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)

			src, err := source.FromConfig[*corev1.ConfigMap](srv.Config(), source.RESTOptions{Namespace: "a", Mapper: mapper, Protobuf: proto})
			if err != nil {
				t.Fatal(err)
			}
			inf, err := typed.NewInformer(src, typed.Options[*corev1.ConfigMap]{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- inf.Run(ctx) }()
			defer func() { cancel(); <-done }()
			if err := inf.WaitForSync(ctx); err != nil {
				t.Fatal(err)
			}
			got, ok := inf.Store().GetByKey(cache.Key{Namespace: "a", Name: "one"})
			if !ok || got.Data["k"] != "v" {
				t.Fatalf("a/one after the list: %v, %v; want it with its data", got, ok)
			}
			if n := inf.Store().Len(); n != 1 {
				t.Fatalf("%d ConfigMaps cached, want 1 (namespace a only)", n)
			}
			if _, err := cms.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "three"}}); err != nil {
				t.Fatal(err)
			}
			for inf.Store().Len() != 2 {
				select {
				case <-ctx.Done():
					t.Fatalf("a/three never arrived by the watch: %v", inf.Status().LastError)
				case <-time.After(5 * time.Millisecond):
				}
			}

			if !strings.HasPrefix(srv.Config().Host, "https://") {
				t.Fatalf("the server's URL is %s, want https", srv.Config().Host)
			}
			secrets, err := source.FromConfig[*corev1.Secret](srv.Config(), source.RESTOptions{Mapper: mapper, Protobuf: proto})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := secrets.List(ctx, metav1.ListOptions{}); err == nil {
				t.Fatal("listing Secrets, which the server does not serve, did not fail")
			}
		})
	}
}
