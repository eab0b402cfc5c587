//go:build integration

package main

import (
	"context"
	"testing"

	"github.com/typedinformer/informer/examples/samplecontroller/internal/check"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/internal/testcluster"
)

// TestSampleControllerRealServer runs the controller through the scenario
// of package check against a real kube-apiserver: create, scale, a hand
// edit and a hand delete put back, status, an unowned Deployment left
// alone, a deleted Foo's Deployment not made again.
func TestSampleControllerRealServer(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{})
	leakcheck.Check(t)
	cfg := c.AdminConfig()
	if err := installCRD(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	check.Run(t, cfg, func(ctx context.Context) error { return run(ctx, cfg, "") })
}
