//go:build integration

package fleet_test

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/fleet"
	"github.com/typedinformer/informer/internal/testcluster"
)

// TestFixedCostPerInformer measures what an idle, synced, empty informer
// costs over a real kube-apiserver, and what one handler adds: the
// goroutines and the bytes (heap in use plus goroutine stacks, after a
// collection) of 50 informers of ConfigMaps, each in an empty namespace
// of its own, divided by 50. The cluster's connection and discovery are
// warmed by a first informer, so they are not counted.
//
//	go test -tags integration -run TestFixedCostPerInformer -v ./fleet/
//
// With COST_PROFILE set to a directory, it writes heap profiles before and
// after the 50 informers synced, and their goroutines, there.
func TestFixedCostPerInformer(t *testing.T) {
	const n = 50
	if os.Getenv("COST_PROFILE") != "" {
		runtime.MemProfileRate = 1
	}
	c := testcluster.Start(t, testcluster.Options{})
	ctx := t.Context()
	fl, err := fleet.New(fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := fl.Engage("real", c.AdminConfig()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fl.Run(ctx) }()
	defer func() {
		if err := fl.Disengage("real"); err != nil {
			t.Error(err)
		}
	}()
	warm, err := fleet.InformerFor[*corev1.ConfigMap](fl, factory.Scope{Namespace: "warm"})
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	before := measure()
	if dir := os.Getenv("COST_PROFILE"); dir != "" {
		f, _ := os.Create(dir + "/before.pprof")
		pprof.WriteHeapProfile(f)
		f.Close()
	}
	infs := make([]*fleet.Informer[*corev1.ConfigMap], n)
	for i := range infs {
		if infs[i], err = fleet.InformerFor[*corev1.ConfigMap](fl, factory.Scope{Namespace: fmt.Sprintf("cost-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, inf := range infs {
		if err := inf.WaitForSync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	synced := measure()
	if dir := os.Getenv("COST_PROFILE"); dir != "" {
		f, _ := os.Create(dir + "/synced.pprof")
		pprof.WriteHeapProfile(f)
		f.Close()
		f, _ = os.Create(dir + "/synced.goroutines")
		pprof.Lookup("goroutine").WriteTo(f, 1)
		f.Close()
	}
	for _, inf := range infs {
		if err := inf.AddHandler(fleet.HandlerFuncs[*corev1.ConfigMap]{}); err != nil {
			t.Fatal(err)
		}
	}
	handled := measure()
	idle := synced.sub(before).per(n)
	handler := handled.sub(synced).per(n)
	t.Logf("an idle, synced, empty informer: %.2f goroutines, %.1f KiB (%.1f KiB heap, %.1f KiB stacks); a handler adds %.2f goroutines, %.1f KiB",
		idle.goroutines, idle.bytes()/1024, idle.heap/1024, idle.stack/1024, handler.goroutines, handler.bytes()/1024)
	t.Logf("100 clusters x 20 such informers with a handler each: %.0f goroutines, %.0f MiB",
		2000*(idle.goroutines+handler.goroutines), 2000*(idle.bytes()+handler.bytes())/(1<<20))
	if idle.goroutines > 4 {
		t.Errorf("an idle informer has %.2f goroutines, want at most 4", idle.goroutines)
	}
	if idle.bytes() > 64<<10 {
		t.Errorf("an idle informer holds %.1f KiB, want at most 64", idle.bytes()/1024)
	}
}

type cost struct{ goroutines, heap, stack float64 }

func (c cost) bytes() float64 { return c.heap + c.stack }

func (c cost) sub(o cost) cost {
	return cost{c.goroutines - o.goroutines, c.heap - o.heap, c.stack - o.stack}
}

func (c cost) per(n int) cost {
	f := float64(n)
	return cost{c.goroutines / f, c.heap / f, c.stack / f}
}

// measure settles (the informers are idle: nothing changes on the
// server) and reads the goroutines and the bytes in use after a
// collection.
func measure() cost {
	time.Sleep(500 * time.Millisecond)
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return cost{float64(runtime.NumGoroutine()), float64(ms.HeapAlloc), float64(ms.StackInuse)}
}
