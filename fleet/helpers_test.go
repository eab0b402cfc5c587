package fleet_test

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/fleet"
)

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o600) }

// engagement is what the goroutines were across one engagement of a
// cluster (goroutinesAcross).
type engagement struct {
	before, engaged, after int
	beforeStacks           []byte // every goroutine's stack before the cluster was engaged
}

// check fails t unless the goroutines went back to their count before
// the cluster was engaged, printing the stacks before and after.
func (e engagement) check(t *testing.T, name string) {
	t.Helper()
	t.Logf("goroutines: %d before %s, %d with it engaged and synced, %d after it was disengaged", e.before, name, e.engaged, e.after)
	if e.after != e.before {
		buf := make([]byte, 1<<20)
		t.Errorf("after disengaging %s: %d goroutines, want %d as before it was engaged; before:\n%s\nafter:\n%s",
			name, e.after, e.before, e.beforeStacks, buf[:runtime.Stack(buf, true)])
	}
}

// goroutinesAcross engages the cluster of cfg under name, waits for pods
// to sync in it, disengages it, and counts the goroutines before, while
// engaged and after (waiting up to 10 s for them to go back).
func goroutinesAcross(t *testing.T, ctx context.Context, fl *fleet.Fleet, pods *fleet.Informer[*corev1.Pod], name string, cfg *rest.Config) engagement {
	t.Helper()
	settle := func() int {
		time.Sleep(200 * time.Millisecond)
		return runtime.NumGoroutine()
	}
	var e engagement
	e.before = settle()
	e.beforeStacks = make([]byte, 1<<20)
	e.beforeStacks = e.beforeStacks[:runtime.Stack(e.beforeStacks, true)]
	if err := fl.Engage(name, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.WaitForCluster(ctx, name); err != nil {
		t.Fatal(err)
	}
	e.engaged = settle()
	if err := fl.Disengage(name); err != nil {
		t.Fatal(err)
	}
	e.after = settle()
	for deadline := time.Now().Add(10 * time.Second); e.after != e.before && time.Now().Before(deadline); {
		e.after = settle()
	}
	return e
}
