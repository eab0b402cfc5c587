//go:build integration

package fleet_test

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/fleet"
	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/internal/testcluster"
	"github.com/typedinformer/informer/source/sourcetest"
)

// TestFleetHundredClusters: 100 clusters in one process, 10 informers
// each, of 10 resources: 3 real kube-apiservers with etcd, and 97
// in-process servers that speak the API's wire format over HTTP/2 with
// TLS, as kube-apiserver does, each holding one object of every resource
// in the namespace the informers watch. Every cluster syncs; the
// goroutines and bytes per informer over the whole fleet are printed; a
// real cluster engaged last and then disengaged takes its goroutines with
// it, exactly, and the heap goes back to within 5% of what it was before.
//
//	make cluster-bin && go test -tags integration -run TestFleetHundredClusters -v ./fleet/
func TestFleetHundredClusters(t *testing.T) {
	const clusters, reals, ns = 100, 3, "fleet"
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
		m := metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("web-%d", i), Labels: map[string]string{"app": "web"}}
		srv := podserver.NewCore(t,
			one("pods", "Pod", &corev1.Pod{ObjectMeta: m}),
			one("configmaps", "ConfigMap", &corev1.ConfigMap{ObjectMeta: m}),
			one("services", "Service", &corev1.Service{ObjectMeta: m}),
			one("serviceaccounts", "ServiceAccount", &corev1.ServiceAccount{ObjectMeta: m}),
			one("events", "Event", &corev1.Event{ObjectMeta: m}),
			one("persistentvolumeclaims", "PersistentVolumeClaim", &corev1.PersistentVolumeClaim{ObjectMeta: m}),
			one("replicationcontrollers", "ReplicationController", &corev1.ReplicationController{ObjectMeta: m}),
			one("podtemplates", "PodTemplate", &corev1.PodTemplate{ObjectMeta: m}),
			one("limitranges", "LimitRange", &corev1.LimitRange{ObjectMeta: m}),
			one("resourcequotas", "ResourceQuota", &corev1.ResourceQuota{ObjectMeta: m}),
		)
		cfgs, names = append(cfgs, srv.Config()), append(names, fmt.Sprintf("local-%03d", i))
	}
	fl, err := fleet.New(fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := factory.Scope{Namespace: ns}
	infs := []fleetInformer{
		informerOf[*corev1.Pod](t, fl, s), informerOf[*corev1.ConfigMap](t, fl, s),
		informerOf[*corev1.Service](t, fl, s), informerOf[*corev1.ServiceAccount](t, fl, s),
		informerOf[*corev1.Event](t, fl, s), informerOf[*corev1.PersistentVolumeClaim](t, fl, s),
		informerOf[*corev1.ReplicationController](t, fl, s), informerOf[*corev1.PodTemplate](t, fl, s),
		informerOf[*corev1.LimitRange](t, fl, s), informerOf[*corev1.ResourceQuota](t, fl, s),
	}
	informers := len(infs)
	done := make(chan error, 1)
	go func() { done <- fl.Run(ctx) }()
	defer func() {
		for _, name := range fl.Clusters() {
			_ = fl.Disengage(name)
		}
	}()
	base := measure()
	_, http1Base := goroutineKinds() // the test clusters' own health checks

	// Every cluster but the last real one (the first in names).
	last, lastCfg := names[0], cfgs[0]
	syncStart := time.Now()
	for i := 1; i < clusters; i++ {
		if err := fl.Engage(names[i], cfgs[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, inf := range infs {
		if err := inf.waitForSync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	synced99 := time.Since(syncStart)
	for _, inf := range infs {
		n, err := inf.count()
		if err != nil {
			t.Fatal(err)
		}
		if n != clusters-reals {
			t.Fatalf("%d %s over the fleet, want %d (one per in-process cluster)", n, inf.resource, clusters-reals)
		}
	}
	before := measure()
	if err := fl.Engage(last, lastCfg); err != nil {
		t.Fatal(err)
	}
	for _, inf := range infs {
		if err := inf.waitForCluster(ctx, last); err != nil {
			t.Fatal(err)
		}
	}
	all := measure()
	servers, http1 := goroutineKinds()
	http1 -= http1Base
	per := all.sub(base).per(clusters * informers)
	clientPer := (all.goroutines - base.goroutines - float64(servers)) / float64(clusters*informers)
	one := all.sub(before).per(informers)
	t.Logf("%d clusters (%d kube-apiservers, started in %v; %d in-process) x %d informers of %d resources, all synced %v after their engagement: %d goroutines, %d of them the in-process servers'; %.0f MiB (heap in use + stacks, the in-process servers' too) over %.0f MiB before",
		clusters, reals, started.Round(time.Millisecond), clusters-reals, informers, informers, synced99.Round(time.Millisecond), int(all.goroutines), servers, all.bytes()/(1<<20), base.bytes()/(1<<20))
	t.Logf("per informer over the fleet: %.2f goroutines of the clients, %.2f of them HTTP/1.1 connection loops; %.1f KiB with the servers'",
		clientPer, float64(http1)/float64(clusters*informers), per.bytes()/1024)
	if http1 > 0 {
		t.Errorf("%d client goroutines of HTTP/1.1 connections: every cluster should be reached over HTTP/2, one connection each", http1)
	}
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
// a connection, its HTTP/2 frames and streams, accepting) and those of
// client-side HTTP/1.1 connections (a read and a write loop each), by
// what created them.
func goroutineKinds() (servers, http1 int) {
	buf := make([]byte, 64<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		switch {
		case strings.Contains(g, "created by net/http.(*Server).Serve"), strings.Contains(g, "created by net/http.(*connReader).startBackgroundRead"),
			strings.Contains(g, "created by net/http/httptest.(*Server).goServe"), strings.Contains(g, "created by net/http.(*http2serverConn)"):
			servers++
		case strings.Contains(g, "created by net/http.(*Transport).dialConn"):
			http1++
		}
	}
	return servers, http1
}

// one serves the resource name, of kind, from a fake holding obj.
func one[T cache.Object](name, kind string, obj T) podserver.Resource {
	return podserver.Serve(name, kind, sourcetest.NewFake(sourcetest.FakeOptions[T]{Objects: []T{obj}}))
}

// fleetInformer is a fleet informer of any type, as the test uses it.
type fleetInformer struct {
	resource       string
	waitForSync    func(context.Context) error
	waitForCluster func(context.Context, string) error
	count          func() (int, error)
}

// informerOf is the fleet's informer of T in s.
func informerOf[T cache.Object](t *testing.T, fl *fleet.Fleet, s factory.Scope) fleetInformer {
	t.Helper()
	inf, err := fleet.InformerFor[T](fl, s)
	if err != nil {
		t.Fatal(err)
	}
	var zero T
	return fleetInformer{
		resource:    fmt.Sprintf("%T", zero),
		waitForSync: inf.WaitForSync,
		waitForCluster: func(ctx context.Context, name string) error {
			_, err := inf.WaitForCluster(ctx, name)
			return err
		},
		count: func() (int, error) {
			l, err := inf.List(nil)
			return len(l), err
		},
	}
}
