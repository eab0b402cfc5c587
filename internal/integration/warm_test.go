//go:build integration

package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/informertest"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/typed"
)

// TestWarmStart restarts an informer from its saved cache against the
// real server's watch cache: no LIST, the changes made while it was down
// arrive by the watch, the cache equals the server's, and the consistency
// check agrees. It logs the time to synced, cold and warm.
func TestWarmStart(t *testing.T) {
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	admin := protobufClientset(t, c.AdminConfig())
	ns := uniqueName("warm")
	createNamespaces(ctx, t, admin, ns)
	seed(ctx, t, admin, seedPods([]string{ns}, 300), 10)
	path := filepath.Join(t.TempDir(), "pods.cache")

	run := func(name string) (*typed.Informer[*corev1.Pod], *it.ErrSink, counts, time.Duration, func()) {
		counter := newCounter(podsCollection)
		cs := clientset(t, counter.wrap(c.AdminConfig()))
		errs := &it.ErrSink{}
		inf := newInformer(t, podSource(t, cs, ns), typed.Options[*corev1.Pod]{
			ErrorHandler: errs.Handle, ConsistencyCheck: 2 * time.Second,
			WarmStart: &typed.WarmStart{Path: path, Interval: -1, Cluster: "integration"},
		})
		start := time.Now()
		stop := it.Run(t, inf)
		waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := inf.WaitForSync(waitCtx); err != nil {
			t.Fatalf("%s: WaitForSync: %v", name, err)
		}
		took := time.Since(start)
		got := counter.snapshot()
		return inf, errs, got, took, stop
	}

	cold, coldErrs, coldReqs, coldTook, stop := run("cold")
	stop() // saves the cache
	if s := cold.WarmStatus(); s.Objects != 300 {
		t.Fatalf("WarmStatus after the cold run's stop = %+v, want 300 objects saved", s)
	}
	if e := coldErrs.All(); len(e) > 0 {
		t.Fatalf("cold run: errors %v", e)
	}
	// Changes while the controller is down.
	for i := range 3 {
		if _, err := admin.CoreV1().Pods(ns).Create(ctx, newPod(ns, fmt.Sprintf("down-%d", i), nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	server := serverPods(ctx, t, admin, ns, metav1.ListOptions{})
	if err := admin.CoreV1().Pods(ns).Delete(ctx, server[0].Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}

	warm, warmErrs, warmReqs, warmTook, stop := run("warm")
	t.Logf("time to synced: cold %v (%s), warm %v (%s)", coldTook.Round(time.Millisecond), coldReqs, warmTook.Round(time.Millisecond), warmReqs)
	if warmReqs.Lists != 0 || warmReqs.WatchLists != 0 {
		t.Errorf("the warm start sent %s, want no LIST and no streaming list", warmReqs)
	}
	if s := warm.Status().Stats; s.WarmStarts != 1 {
		t.Errorf("Stats = %s, want a warm start", statsString(s))
	}
	want := informertest.StateOf(serverPods(ctx, t, admin, ns, metav1.ListOptions{}))
	it.ConvergeTo(t, want, warm.Store())
	it.Eventually(t, "a consistency check", func() bool { return warm.Status().Checks.ConsistencyChecks > 0 })
	if ch := warm.Status().Checks; ch.Divergences != 0 {
		t.Errorf("the consistency check after the warm start found %v", ch.LastDivergence)
	}
	if e := warmErrs.All(); len(e) > 0 {
		t.Errorf("warm run: errors %v", e)
	}
	stop()

	// Nothing changed since: the server's answer to the watch from the
	// saved version is the watch cache's bookmark before the watch's
	// deadline.
	idle, idleErrs, idleReqs, idleTook, _ := run("idle")
	t.Logf("time to synced with nothing changed: %v (%s)", idleTook.Round(time.Millisecond), idleReqs)
	if idleReqs.Lists != 0 || idleReqs.WatchLists != 0 || idle.Status().Stats.WarmStarts != 1 {
		t.Errorf("the warm start with nothing changed sent %s, stats %s; want a warm start, no LIST and no streaming list", idleReqs, statsString(idle.Status().Stats))
	}
	it.ConvergeTo(t, want, idle.Store())
	if e := idleErrs.All(); len(e) > 0 {
		t.Errorf("idle run: errors %v", e)
	}
}
