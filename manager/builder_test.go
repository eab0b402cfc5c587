package manager_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/manager"
	"github.com/typedinformer/informer/reconcile"
)

func service(ns, name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}}
}

func ownedConfigMap(ns, name string, owner *corev1.Service) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"v": "1"}}
	if owner != nil {
		cm.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, corev1.SchemeGroupVersion.WithKind("Service"))}
	}
	return cm
}

// TestBuilderOwns: For, Owns and Complete on a factory over client-go's
// fake clientset: the Service is reconciled at start, again when the
// ConfigMap it owns changes, and not when one it does not own does; the
// controller is on the manager's readiness check under its name.
func TestBuilderOwns(t *testing.T) {
	leakcheck.Check(t)
	web := service("shop", "web")
	cs := fake.NewClientset(web, service("shop", "db"),
		ownedConfigMap("shop", "web-ports", web), ownedConfigMap("shop", "loose", nil))
	f, err := factory.NewForClientsets([]any{cs}, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := manager.New(manager.Options{Factory: f})
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		key cache.Key
		v   string // of web-ports, when the key was reconciled
	}
	reconciled := make(chan seen, 16)
	ctrl := manager.For[*corev1.Service](m, "service-ports", factory.Scope{Namespace: "shop"})
	configMaps := manager.Owns[*corev1.ConfigMap](ctrl, reconcile.WatchOptions[*corev1.ConfigMap]{})
	if ctrl.Informer() == nil || configMaps == nil {
		t.Fatalf("Informer() = %v, Owns = %v; want both", ctrl.Informer(), configMaps)
	}
	if err := ctrl.Complete(reconcile.Func(func(_ context.Context, key cache.Key) error {
		if _, err := ctrl.Informer().Lister().Namespace(key.Namespace).Get(key.Name); err != nil {
			t.Errorf("reconcile %v: %v", key, err)
		}
		s := seen{key: key}
		if cm, err := configMaps.Lister().Namespace("shop").Get("web-ports"); err == nil {
			s.v = cm.Data["v"]
		}
		reconciled <- s
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	next := func(what string) seen {
		t.Helper()
		select {
		case s := <-reconciled:
			return s
		case <-time.After(30 * time.Second):
			t.Fatalf("no reconcile: %s", what)
			return seen{}
		}
	}
	got := map[cache.Key]bool{}
	for len(got) < 2 {
		got[next("initial").key] = true // shop/web may come twice: its Service and its ConfigMap
	}
	if !got[cache.Key{Namespace: "shop", Name: "web"}] || !got[cache.Key{Namespace: "shop", Name: "db"}] {
		t.Fatalf("initial reconciles = %v, want shop/web and shop/db", got)
	}
	for m.Readiness().Check(nil) != nil {
		if ctx.Err() != nil {
			t.Fatal("never ready")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// One ConfigMap nobody owns changes, then the owned one: shop/web is
	// reconciled with the change in the cache.
	for _, name := range []string{"loose", "web-ports"} {
		cm, err := cs.CoreV1().ConfigMaps("shop").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["v"] = "2"
		if _, err := cs.CoreV1().ConfigMaps("shop").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for {
		s := next("the owned ConfigMap changed")
		if s.key == (cache.Key{Namespace: "shop", Name: "web"}) && s.v == "2" {
			break
		} // else a late initial reconcile
	}
}

// TestBuilderRefuses: each failed step is returned by Complete, and by Run
// if Complete's error went unchecked or Complete was never called.
func TestBuilderRefuses(t *testing.T) {
	leakcheck.Check(t)
	noop := reconcile.Func(func(context.Context, cache.Key) error { return nil })
	newManager := func() *manager.Manager {
		f, err := factory.NewForClientsets([]any{fake.NewClientset()}, factory.Options{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := manager.New(manager.Options{Factory: f})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	run := func(m *manager.Manager) error {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		return m.Run(ctx)
	}

	plain, _ := manager.New(manager.Options{})
	b := manager.For[*corev1.Service](plain, "a", factory.Scope{})
	if cm := manager.Owns[*corev1.ConfigMap](b, reconcile.WatchOptions[*corev1.ConfigMap]{}); cm != nil {
		t.Errorf("Owns without a factory = %v, want nil", cm)
	}
	if err := b.Complete(noop); !errors.Is(err, manager.ErrNoFactory) || !strings.Contains(err.Error(), `controller "a"`) {
		t.Errorf("Complete without a factory = %v, want ErrNoFactory naming the controller", err)
	}
	if err := run(plain); !errors.Is(err, manager.ErrNoFactory) {
		t.Errorf("Run after a failed Complete = %v, want its error", err)
	}

	m := newManager()
	_ = manager.For[*corev1.Service](m, "forgotten", factory.Scope{})
	if err := run(m); err == nil || !strings.Contains(err.Error(), `controller "forgotten": For without Complete`) {
		t.Errorf("Run with a builder never completed = %v", err)
	}

	m = newManager()
	if err := manager.For[*corev1.Service](m, "a", factory.Scope{}).Complete(noop); err != nil {
		t.Fatal(err)
	}
	if err := manager.For[*corev1.Pod](m, "a", factory.Scope{}).Complete(noop); !errors.Is(err, manager.ErrDuplicate) {
		t.Errorf("a second controller named a = %v, want ErrDuplicate", err)
	}
	if err := manager.For[*corev1.Pod](m, "", factory.Scope{}).Complete(noop); !errors.Is(err, manager.ErrNil) {
		t.Errorf("an empty name = %v, want ErrNil", err)
	}
	if err := manager.For[*corev1.Pod](m, "nil", factory.Scope{}).Complete(nil); !errors.Is(err, manager.ErrNil) {
		t.Errorf("a nil reconciler = %v, want ErrNil", err)
	}
	if err := manager.For[*corev1.Pod](m, "bad scope", factory.Scope{Tweak: func(*metav1.ListOptions) {}}).Complete(noop); !errors.Is(err, factory.ErrBadScope) {
		t.Errorf("a bad scope = %v, want ErrBadScope", err)
	}
	if err := manager.For[*corev1.Pod](nil, "x", factory.Scope{}).Complete(noop); !errors.Is(err, manager.ErrNil) {
		t.Errorf("For(nil) = %v, want ErrNil", err)
	}

	f, _ := factory.NewForClientsets([]any{fake.NewClientset()}, factory.Options{})
	if _, err := manager.New(manager.Options{Config: &rest.Config{Host: "https://127.0.0.1:1"}, Factory: f}); err == nil {
		t.Error("New with both Config and Factory: no error")
	}
	cm, err := manager.New(manager.Options{Config: &rest.Config{Host: "https://127.0.0.1:1"}})
	if err != nil || cm.Clientset() == nil {
		t.Errorf("New with Config = %v, Clientset() = %v; want a clientset", err, cm.Clientset())
	}
	if m.Clientset() != nil {
		t.Errorf("Clientset of a manager made with a Factory = %v, want nil", m.Clientset())
	}
	if m.Factory() == nil || cm.Factory() == nil {
		t.Error("Factory() = nil for a manager with a factory")
	}
	kube := fake.NewClientset()
	if m, err := manager.New(manager.Options{Factory: f, Clientset: kube}); err != nil || m.Clientset() != kube {
		t.Errorf("New with Options.Clientset = %v, Clientset() = %v; want it", err, m.Clientset())
	}
}
