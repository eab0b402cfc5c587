//go:build integration

package fleet_test

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/fleet"
	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/internal/testcluster"
	"github.com/typedinformer/informer/source/sourcetest"
)

// TestFleetHundredClusters: 100 clusters in one process, 10 informers
// each: 3 real kube-apiservers with etcd, and 97 in-process servers that
// speak the API's wire format (they serve pods only, so the 10 informers
// of every cluster are the pods of 10 namespaces, one pod in each). Every
// cluster syncs; the goroutines and bytes per informer over the whole
// fleet are printed; a real cluster engaged last and then disengaged
// takes its goroutines with it, exactly, and the heap goes back to within
// 5% of what it was before.
//
//	make cluster-bin && go test -tags integration -run TestFleetHundredClusters -v ./fleet/
func TestFleetHundredClusters(t *testing.T) {
	const clusters, reals, informers = 100, 3, 10
	began := time.Now()
	ctx := t.Context()
	cfgs := make([]*rest.Config, 0, clusters)
	names := make([]string, 0, clusters)
	for i := range reals {
		c := testcluster.Start(t, testcluster.Options{})
		cfgs, names = append(cfgs, c.AdminConfig()), append(names, fmt.Sprintf("real-%d", i))
	}
	started := time.Since(began)
	for i := range clusters - reals {
		var pods []*corev1.Pod
		for n := range informers {
			pods = append(pods, pod(fmt.Sprintf("ns-%d", n), fmt.Sprintf("web-%d", i), "web"))
		}
		srv := podserver.New(t, sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: pods}))
		cfgs, names = append(cfgs, srv.Config()), append(names, fmt.Sprintf("local-%03d", i))
	}
	fl, err := fleet.New(fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	infs := make([]*fleet.Informer[*corev1.Pod], informers)
	for n := range infs {
		if infs[n], err = fleet.InformerFor[*corev1.Pod](fl, factory.Scope{Namespace: fmt.Sprintf("ns-%d", n)}); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- fl.Run(ctx) }()
	defer func() {
		for _, name := range fl.Clusters() {
			_ = fl.Disengage(name)
		}
	}()
	base := measure()

	// Every cluster but the last real one (the first in names).
	last, lastCfg := names[0], cfgs[0]
	syncStart := time.Now()
	for i := 1; i < clusters; i++ {
		if err := fl.Engage(names[i], cfgs[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, inf := range infs {
		if err := inf.WaitForSync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	synced99 := time.Since(syncStart)
	for _, inf := range infs {
		list, err := inf.List(nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != clusters-reals {
			t.Fatalf("%d pods over the fleet in one namespace, want %d (one per in-process cluster)", len(list), clusters-reals)
		}
	}
	before := measure()
	if err := fl.Engage(last, lastCfg); err != nil {
		t.Fatal(err)
	}
	for _, inf := range infs {
		if _, err := inf.WaitForCluster(ctx, last); err != nil {
			t.Fatal(err)
		}
	}
	all := measure()
	servers, http1 := goroutineKinds()
	per := all.sub(base).per(clusters * informers)
	clientPer := (all.goroutines - base.goroutines - float64(servers)) / (clusters * informers)
	one := all.sub(before).per(informers)
	t.Logf("%d clusters (%d kube-apiservers, started in %v; %d in-process) x %d informers, all synced %v after their engagement: %d goroutines, %d of them the in-process servers'; %.0f MiB (heap in use + stacks, the in-process servers' too) over %.0f MiB before",
		clusters, reals, started.Round(time.Millisecond), clusters-reals, informers, synced99.Round(time.Millisecond), int(all.goroutines), servers, all.bytes()/(1<<20), base.bytes()/(1<<20))
	t.Logf("per informer over the fleet: %.2f goroutines of the clients, %.2f of them HTTP/1.1 connection loops (the in-process servers speak HTTP/1.1, one connection per watch; kube-apiserver's HTTP/2 carries every watch of a cluster on one connection); %.1f KiB with the servers'",
		clientPer, float64(http1)/(clusters*informers), per.bytes()/1024)
	t.Logf("the last real cluster: %.2f goroutines and %.1f KiB per informer, its connection and factory included", one.goroutines, one.bytes()/1024)

	if err := fl.Disengage(last); err != nil {
		t.Fatal(err)
	}
	after := measure()
	for deadline := time.Now().Add(10 * time.Second); after.goroutines != before.goroutines && time.Now().Before(deadline); {
		after = measure()
	}
	drift := (after.heap - before.heap) / before.heap
	t.Logf("disengaged %s: %d goroutines (before it was engaged: %d), heap %.1f MiB (before: %.1f MiB, %+.1f%%)",
		last, int(after.goroutines), int(before.goroutines), after.heap/(1<<20), before.heap/(1<<20), 100*drift)
	if after.goroutines != before.goroutines {
		buf := make([]byte, 1<<20)
		t.Errorf("after disengaging %s: %d goroutines, want %d as before it was engaged:\n%s", last, int(after.goroutines), int(before.goroutines), buf[:runtime.Stack(buf, true)])
	}
	if math.Abs(drift) > 0.05 {
		t.Errorf("after disengaging %s the heap is %+.1f%% of what it was before it was engaged, want within 5%%", last, 100*drift)
	}
	for _, name := range fl.Clusters() {
		_ = fl.Disengage(name)
	}
	t.Logf("the whole test: %v", time.Since(began).Round(time.Millisecond))
}

// goroutineKinds counts the goroutines of the in-process servers (serving
// a connection, reading its body, accepting) and those of client-side
// HTTP/1.1 connections (a read and a write loop each), by what created
// them.
func goroutineKinds() (servers, http1 int) {
	buf := make([]byte, 64<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		switch {
		case strings.Contains(g, "created by net/http.(*Server).Serve"), strings.Contains(g, "created by net/http.(*connReader).startBackgroundRead"),
			strings.Contains(g, "created by net/http/httptest.(*Server).goServe"):
			servers++
		case strings.Contains(g, "created by net/http.(*Transport).dialConn"):
			http1++
		}
	}
	return servers, http1
}
