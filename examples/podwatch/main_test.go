package main

import (
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/typedinformer/informer/typed"
)

// testConfig is a short run of the demo on a small simulated cluster.
func testConfig(d time.Duration) config {
	return config{
		duration: d,
		seedFile: "../../testdata/demo/pods.yaml",
		pods:     2000,
		churn:    2 * time.Millisecond,
		workers:  2,
	}
}

// TestDemoRuns runs the demo briefly on its simulated cluster, as `make
// demo` does, and checks that the controller synced and reconciled.
func TestDemoRuns(t *testing.T) {
	c := testConfig(3 * time.Second)
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
	if ctrl.reconciles.Load() == 0 {
		t.Error("no key was reconciled")
	}
	if ctrl.adds.Load()+ctrl.updates.Load()+ctrl.deletes.Load() == 0 {
		t.Error("no live event reached the handler")
	}
}

// TestDemoEndsOnRunError checks that an error of the informer's Run ends
// the demo at once with that error: here the server refuses the first list
// as a bad request, which no retry can fix.
func TestDemoEndsOnRunError(t *testing.T) {
	c := testConfig(time.Minute)
	ctrl, sim, err := setup(c)
	if err != nil {
		t.Fatal(err)
	}
	bad := apierrors.NewBadRequest("injected: malformed list")
	sim.fake.FailWatches(100, bad) // the streaming list, then plain LIST
	sim.fake.FailLists(100, bad)
	start := time.Now()
	err = runWith(c, ctrl, sim)
	if !apierrors.IsBadRequest(err) {
		t.Fatalf("demo error = %v, want the informer's BadRequest", err)
	}
	var notSynced *typed.NotSyncedError
	if errors.As(err, &notSynced) {
		t.Errorf("demo error = %v, want Run's error, not the sync wait's", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("demo took %v to end after Run failed", d)
	}
}

// TestDemoSyncError checks that a sync the informer cannot finish without
// help (Forbidden) ends the demo at once, saying why.
func TestDemoSyncError(t *testing.T) {
	c := testConfig(time.Minute)
	ctrl, sim, err := setup(c)
	if err != nil {
		t.Fatal(err)
	}
	forbidden := apierrors.NewForbidden(podsResource, "", errors.New("injected: RBAC"))
	sim.fake.FailWatches(1000, forbidden)
	sim.fake.FailLists(1000, forbidden)
	start := time.Now()
	err = runWith(c, ctrl, sim)
	var notSynced *typed.NotSyncedError
	if !errors.As(err, &notSynced) || !apierrors.IsForbidden(err) {
		t.Fatalf("demo error = %v, want a NotSyncedError caused by Forbidden", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("demo took %v to end after a Forbidden sync", d)
	}
}
