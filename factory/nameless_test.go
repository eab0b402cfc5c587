package factory_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/internal/leakcheck"
)

// TestNamelessObjectListed: a fake clientset holding an object without a
// name (the API server never serves one; a test's fixture may) makes the
// informer report it once and sync the rest, rather than relist forever.
func TestNamelessObjectListed(t *testing.T) {
	leakcheck.Check(t)
	cs := fake.NewClientset()
	for _, n := range []*corev1.Node{{}, {ObjectMeta: metav1.ObjectMeta{Name: "n1"}}} {
		if err := cs.Tracker().Add(n); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var reported []error
	f, err := factory.NewForClientsets([]any{cs}, factory.Options{ErrorHandler: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, err)
	}})
	if err != nil {
		t.Fatal(err)
	}
	inf, release, err := factory.InformerFor[*corev1.Node](f, factory.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx) }()
	defer func() { cancel(); <-done }()
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if err := inf.WaitForSync(wctx); err != nil {
		t.Fatalf("not synced: %v", err)
	}
	if _, err := inf.Lister().Get("n1"); err != nil {
		t.Errorf("Get(n1): %v", err)
	}
	if n := inf.Store().Len(); n != 1 {
		t.Errorf("cache holds %d nodes, want 1", n)
	}
	if got := inf.Status().Checks.Refused; got != 1 {
		t.Errorf("Checks.Refused = %d, want 1", got)
	}
	if inf.Status().LastError != nil {
		t.Errorf("LastError = %v, want none: the rest synced", inf.Status().LastError)
	}
	for {
		mu.Lock()
		n := len(reported)
		var first error
		if n > 0 {
			first = reported[0]
		}
		mu.Unlock()
		if n > 0 {
			if !errors.Is(first, cache.ErrNoName) {
				t.Errorf("reported %v, want cache.ErrNoName", first)
			}
			break
		}
		if wctx.Err() != nil {
			t.Fatal("the nameless object was never reported")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
