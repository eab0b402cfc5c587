package factory_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/typed"
)

// TestNewServedRefuses: a nil factory, one without a config, a negative
// interval. (TestServedFollowsCRDs in internal/integration runs it on
// kube-apiserver.)
func TestNewServedRefuses(t *testing.T) {
	if _, err := factory.NewServed(nil, factory.ServedOptions{}); err == nil {
		t.Error("NewServed(nil): no error")
	}
	plain, _ := factory.New(nil, factory.Options{})
	if _, err := factory.NewServed(plain, factory.ServedOptions{}); !errors.Is(err, factory.ErrNoConfig) {
		t.Errorf("NewServed of a factory without a config = %v, want ErrNoConfig", err)
	}
	f, err := factory.New(&rest.Config{Host: "https://127.0.0.1:1"}, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := factory.NewServed(f, factory.ServedOptions{Interval: -time.Second}); err == nil {
		t.Error("a negative Interval: no error")
	}
	if _, err := factory.NewServed(f, factory.ServedOptions{}); err != nil {
		t.Errorf("NewServed = %v", err)
	}
}

// NewServed follows every resource a cluster serves with a metadata
// informer each, started as a resource appears and stopped as it goes;
// here only the CRDs of one group. It needs a factory over a config.
func ExampleNewServed() {
	f, _ := factory.New(&rest.Config{Host: "https://cluster.example:6443"}, factory.Options{})
	served, err := factory.NewServed(f, factory.ServedOptions{
		Include: func(gvr schema.GroupVersionResource) bool { return gvr.Group == "example.com" },
		Added: func(gvr schema.GroupVersionResource, inf *typed.Informer[*metav1.PartialObjectMetadata]) {
			fmt.Println("following", gvr.Resource)
		},
		Removed: func(gvr schema.GroupVersionResource) { fmt.Println("no longer served:", gvr.Resource) },
	})
	fmt.Println(served != nil, err)
	// go served.Run(ctx)

	plain, _ := factory.New(nil, factory.Options{})
	_, err = factory.NewServed(plain, factory.ServedOptions{})
	fmt.Println(err)
	// Output:
	// true <nil>
	// factory: NewServed needs a factory over a rest.Config: factory: no rest.Config and no registered source
}
