package httpinfo_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/httpinfo"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// Distinctive values of the test Secrets: no byte of them may reach a page,
// a JSON answer or a health body.
const (
	secretData       = "s3cr3t-DATA-7f3a9c"
	secretStringData = "s3cr3t-STRING-b41e0d"
	secretAnnotation = "s3cr3t-ANNOTATION-91c2e5"
	secretLabel      = "s3cr3t-LABEL-0d7b22"
)

var secretsGR = schema.GroupResource{Resource: "secrets"}

// forbidden is the error a server returns once RBAC no longer allows the
// informer to list or watch secrets.
func forbidden() error {
	return apierrors.NewForbidden(secretsGR, "", errors.New(`User "system:serviceaccount:shop:ctrl" cannot watch resource "secrets"`))
}

func secret(ns, name string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name,
			Annotations: map[string]string{"note": secretAnnotation},
			Labels:      map[string]string{"tier": secretLabel},
		},
		Data:       map[string][]byte{"password": []byte(secretData)},
		StringData: map[string]string{"token": secretStringData},
	}
}

func secretFake(n int) *sourcetest.Fake[*corev1.Secret] {
	objs := make([]*corev1.Secret, n)
	for i := range objs {
		objs[i] = secret("shop", fmt.Sprintf("db-%d", i))
	}
	return sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Secret]{
		Resource: secretsGR, Scope: cache.ScopeNamespaced, Objects: objs,
	})
}

// run starts inf and stops it, waiting for Run to return, when the test ends.
func run[T cache.Object](t *testing.T, inf *typed.Informer[T]) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func newInformer[T cache.Object](t *testing.T, src *sourcetest.Fake[T], opts typed.Options[T]) *typed.Informer[T] {
	t.Helper()
	if opts.ErrorHandler == nil {
		opts.ErrorHandler = func(error) {}
	}
	inf, err := typed.NewInformer(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	return inf
}

func newRegistry(t *testing.T) *httpinfo.Registry {
	t.Helper()
	r, err := httpinfo.NewRegistry(httpinfo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func add[T cache.Object](t *testing.T, r *httpinfo.Registry, inf *typed.Informer[T]) *httpinfo.Entry {
	t.Helper()
	e, err := httpinfo.Add(r, inf)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func contextWithCancel() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

type sourcetestFake = sourcetest.Fake[*corev1.Secret]

func keyOf(ns, name string) cache.Key { return cache.Key{Namespace: ns, Name: name} }

func handlerFuncs() handler.Funcs[*corev1.Secret] { return handler.Funcs[*corev1.Secret]{} }
