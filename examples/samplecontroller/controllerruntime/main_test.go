//go:build integration

package main

import (
	"context"
	"testing"

	"github.com/typedinformer/informer/examples/samplecontroller/internal/check"
	"github.com/typedinformer/informer/testcluster"
)

// TestControllerRuntimeRealServer runs the controller-runtime version
// through the same scenario as this library's version.
func TestControllerRuntimeRealServer(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{})
	testcluster.InstallCRDFiles(t, c, "crd.yaml")
	cfg := c.AdminConfig()
	check.Run(t, cfg, func(ctx context.Context) error { return run(ctx, cfg, "") })
}
