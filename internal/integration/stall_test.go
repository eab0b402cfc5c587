//go:build integration

package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/typed"
)

// TestStalledAndCutConnections puts a TCP proxy between an informer and
// kube-apiserver and breaks the informer's connections while pods change:
//
//   - stalled: the proxy stops forwarding bytes either way and keeps every
//     socket open (a half-open connection). Nothing tells the client; the
//     informer's watch idle timeout finds it, stops the watch and watches
//     again from its resourceVersion, over a new connection.
//   - cut: the proxy closes every connection; the informer watches again
//     after its backoff.
//
// Each time: no relist (no LIST, no streaming list: the resourceVersion
// is still valid), the informer converges to the server (I1, I2), and the
// detection time (from the break to the next watch request) is logged.
//
// The server sends a watch a bookmark only about every minute and 2s
// before the watch's timeout, and the period is not configurable, so the
// informer runs with short watch timeouts (5-10s: its first bookmark, which
// arms the idle timeout, comes within seconds) and a 3s idle timeout, and
// a writer changes a pod every 200ms so that a healthy watch is never
// idle that long. The client speaks HTTP/1.1, one connection per watch:
// over HTTP/2 every request shares the stalled connection, and the new
// watch waits for the transport to give it up (client-go's HTTP/2 health
// check: HTTP2_READ_IDLE_TIMEOUT_SECONDS, 30s, then
// HTTP2_PING_TIMEOUT_SECONDS, 15s).
func TestStalledAndCutConnections(t *testing.T) {
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	admin := protobufClientset(t, c.AdminConfig())
	ns := uniqueName("stall")
	createNamespaces(ctx, t, admin, ns)
	seed(ctx, t, admin, seedPods([]string{ns}, 50), 10)

	proxy := newTCPProxy(t, strings.TrimPrefix(c.Host(), "https://"))
	counter := newCounter(podsCollection)
	var watches watchTimes
	cs := clientset(t, watches.wrap(counter.wrap(proxy.config(t, c.AdminConfig(), true))))
	const idle = 3 * time.Second
	var errs it.ErrSink
	inf := newInformer(t, podSource(t, cs, ns), typed.Options[*corev1.Pod]{
		ErrorHandler: errs.Handle, WatchIdleTimeout: idle, MinWatchTimeout: 5 * time.Second,
	})
	rec := it.NewRecorder()
	if _, err := inf.AddHandler(rec); err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := inf.WaitForSync(waitCtx); err != nil {
		t.Fatal(err)
	}

	// A writer keeps events flowing, straight to the server.
	writeCtx, stopWriting := context.WithCancel(ctx)
	written := make(chan int)
	go func() {
		n := 0
		defer func() { written <- n }()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-writeCtx.Done():
				return
			case <-tick.C:
			}
			p, err := admin.CoreV1().Pods(ns).Get(writeCtx, fmt.Sprintf("seed-%04d", n%50), metav1.GetOptions{})
			if err == nil {
				p.Labels["n"] = fmt.Sprint(n)
				_, err = admin.CoreV1().Pods(ns).Update(writeCtx, p, metav1.UpdateOptions{})
			}
			if err != nil && writeCtx.Err() == nil {
				t.Errorf("writer: %v", err)
				return
			}
			n++
		}
	}()
	it.Eventually(t, "a periodic bookmark (arms the idle timeout)", func() bool { return inf.Status().Stats.Bookmarks > 0 })

	var figures []string
	for _, tc := range []struct {
		name    string
		breakIt func() int
	}{
		{"stall", proxy.stall},
		{"cut", proxy.cut},
	} {
		before, reqs := inf.Status().Stats, counter.snapshot()
		time.Sleep(time.Second) // a healthy watch in place
		broke := time.Now()
		conns := tc.breakIt()
		var next time.Time
		it.Eventually(t, tc.name+": a new watch", func() bool {
			var ok bool
			next, ok = watches.firstAfter(broke)
			return ok
		})
		detect := next.Sub(broke)
		time.Sleep(2 * time.Second) // the new watch delivers
		after, reqsAfter := inf.Status().Stats, counter.snapshot()
		d := reqsAfter.sub(reqs)
		if d.Lists != 0 || d.WatchLists != 0 || after.Relists != before.Relists {
			t.Errorf("%s: I8: a relist after the break: %s; stats %s -> %s", tc.name, d, statsString(before), statsString(after))
		}
		if tc.name == "stall" && after.IdleWatches <= before.IdleWatches {
			t.Errorf("stall: IdleWatches %d -> %d, want the idle timeout to stop the stalled watch", before.IdleWatches, after.IdleWatches)
		}
		figures = append(figures, fmt.Sprintf("%s: %d connections broken, new watch after %v (idle timeout %v), requests %s, IdleWatches %d -> %d",
			tc.name, conns, detect.Round(time.Millisecond), idle, d, before.IdleWatches, after.IdleWatches))
	}
	stopWriting()
	n := <-written
	it.ConvergeTo(t, serverState(ctx, t, admin, ns), inf.Store(), rec)
	st := inf.Status().Stats
	t.Logf("figures: stalled and cut connections: %s; %d writes; stats %s IdleWatches=%d; pods %s; %s",
		strings.Join(figures, "; "), n, statsString(st), st.IdleWatches, counter.snapshot(), errSummary(&errs))
}

// TestStalledConnectionHTTP2 is the stall of TestStalledAndCutConnections
// over HTTP/2, client-go's default, where every request to the server
// shares one connection. The idle timeout still stops the stalled watch and
// sends the new one at once, but on the same stalled connection: it gets
// through only once client-go's HTTP/2 health check gives the connection
// up (HTTP2_READ_IDLE_TIMEOUT_SECONDS, 30s, then
// HTTP2_PING_TIMEOUT_SECONDS, 15s). The test logs both times; it checks
// that the informer resumes without a relist and converges.
func TestStalledConnectionHTTP2(t *testing.T) {
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	admin := protobufClientset(t, c.AdminConfig())
	ns := uniqueName("stall-h2")
	createNamespaces(ctx, t, admin, ns)
	seed(ctx, t, admin, seedPods([]string{ns}, 5), 5)
	proxy := newTCPProxy(t, strings.TrimPrefix(c.Host(), "https://"))
	counter := newCounter(podsCollection)
	var watches watchTimes
	cs := clientset(t, watches.wrap(counter.wrap(proxy.config(t, c.AdminConfig(), false))))
	const idle = 3 * time.Second
	inf := newInformer(t, podSource(t, cs, ns), typed.Options[*corev1.Pod]{
		ErrorHandler: func(error) {}, WatchIdleTimeout: idle, MinWatchTimeout: 5 * time.Second,
	})
	rec := it.NewRecorder()
	if _, err := inf.AddHandler(rec); err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	writeCtx, stopWriting := context.WithCancel(ctx)
	written := make(chan struct{})
	go func() {
		defer close(written)
		for n := 0; writeCtx.Err() == nil; n++ {
			time.Sleep(200 * time.Millisecond)
			p, err := admin.CoreV1().Pods(ns).Get(writeCtx, fmt.Sprintf("seed-%04d", n%5), metav1.GetOptions{})
			if err == nil {
				p.Labels["n"] = fmt.Sprint(n)
				_, err = admin.CoreV1().Pods(ns).Update(writeCtx, p, metav1.UpdateOptions{})
			}
			if err != nil && writeCtx.Err() == nil {
				t.Errorf("writer: %v", err)
				return
			}
		}
	}()
	it.Eventually(t, "a periodic bookmark (arms the idle timeout)", func() bool { return inf.Status().Stats.Bookmarks > 0 })
	time.Sleep(time.Second)
	before, reqs := inf.Status().Stats, counter.snapshot()
	broke := time.Now()
	conns := proxy.stall()
	var sent time.Time
	it.Eventually(t, "a new watch sent", func() bool {
		var ok bool
		sent, ok = watches.firstAfter(broke)
		return ok
	})
	events := inf.Status().Stats.Events
	it.Eventually(t, "events again", func() bool { return inf.Status().Stats.Events > events })
	flowing := time.Since(broke)
	stopWriting()
	<-written
	it.ConvergeTo(t, serverState(ctx, t, admin, ns), inf.Store(), rec)
	after, d := inf.Status().Stats, counter.snapshot().sub(reqs)
	if d.Lists != 0 || d.WatchLists != 0 || after.Relists != before.Relists {
		t.Errorf("I8: a relist after the stall: %s; stats %s -> %s", d, statsString(before), statsString(after))
	}
	if after.IdleWatches <= before.IdleWatches {
		t.Errorf("IdleWatches %d -> %d, want the idle timeout to stop the stalled watch", before.IdleWatches, after.IdleWatches)
	}
	t.Logf("figures: stalled HTTP/2 connection: %d connections stalled; new watch sent after %v (idle timeout %v), events again after %v; requests %s; stats %s IdleWatches=%d",
		conns, sent.Sub(broke).Round(time.Millisecond), idle, flowing.Round(time.Millisecond), d, statsString(after), after.IdleWatches)
}
