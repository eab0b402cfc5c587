package factory_test

import (
	"testing"

	"github.com/typedinformer/informer/factory"
)

// TestListLimitOptions: a shared bound must be positive, and excludes a
// bound of the factory's own.
func TestListLimitOptions(t *testing.T) {
	for _, n := range []int{0, -1} {
		if _, err := factory.NewListLimit(n); err == nil {
			t.Errorf("NewListLimit(%d) = nil error", n)
		}
	}
	limit, err := factory.NewListLimit(2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := factory.New(nil, factory.Options{ListLimit: limit, MaxConcurrentLists: 5}); err == nil {
		t.Error("ListLimit and MaxConcurrentLists both set: nil error")
	}
	if _, err := factory.New(nil, factory.Options{ListLimit: limit}); err != nil {
		t.Errorf("ListLimit alone: %v", err)
	}
}
