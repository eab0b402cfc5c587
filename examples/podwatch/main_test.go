package main

import (
	"testing"
	"time"
)

// TestDemoRuns runs the demo briefly on its simulated cluster, as `make
// demo` does, and checks that the controller synced and reconciled.
func TestDemoRuns(t *testing.T) {
	c := config{
		duration: 3 * time.Second,
		seedFile: "../../testdata/demo/pods.yaml",
		pods:     2000,
		churn:    2 * time.Millisecond,
		workers:  2,
	}
	ctrl, sim, err := setup(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := runWith(c, ctrl, sim); err != nil {
		t.Fatalf("demo: %v", err)
	}
	if got := ctrl.initial.Load(); got < 2000 {
		t.Errorf("initial adds = %d, want at least the 2,006 seeded pods minus churn", got)
	}
	if ctrl.reconcil.Load() == 0 {
		t.Error("no key was reconciled")
	}
	if ctrl.adds.Load()+ctrl.updates.Load()+ctrl.deletes.Load() == 0 {
		t.Error("no live event reached the handler")
	}
}
