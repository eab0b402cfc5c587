//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/informertest"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/internal/testcluster"
	"github.com/typedinformer/informer/typed"
)

// TestInitialSync: 5,000 pods across 10 namespaces; the informer syncs and
// its cache, its lister's selectors and Get agree exactly with a LIST from
// the server (I1), with one initial list and no relist (I8).
func TestInitialSync(t *testing.T) {
	const (
		namespaces = 10
		perNS      = 500
		workers    = 16
	)
	leakcheck.Check(t)
	c := testcluster.Start(t, testcluster.Options{})
	ctx := t.Context()
	admin := protobufClientset(t, c.AdminConfig())

	var nss []string
	for i := range namespaces {
		nss = append(nss, fmt.Sprintf("sync-%02d", i))
	}
	createNamespaces(ctx, t, admin, nss...)
	var pods []*corev1.Pod
	for n, ns := range nss {
		for i := range perNS {
			pods = append(pods, newPod(ns, fmt.Sprintf("pod-%04d", i), map[string]string{
				"app":  fmt.Sprintf("app-%d", i%5),
				"tier": []string{"front", "back"}[i%2],
				"ring": fmt.Sprint((i + n) % 3),
			}))
		}
	}
	seedTook := seed(ctx, t, admin, pods, workers)
	t.Logf("figures: seeded %d pods in %d namespaces with %d workers in %v (%.0f creates/s)",
		len(pods), namespaces, workers, seedTook.Round(time.Millisecond), float64(len(pods))/seedTook.Seconds())

	counter := newCounter(podsCollection)
	cs := clientset(t, counter.wrap(c.AdminConfig()))
	var errs it.ErrSink
	inf := newInformer(t, podSource(t, cs, metav1.NamespaceAll), typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle})
	rec := it.NewRecorder()
	reg, err := inf.AddHandler(rec)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	stop := it.Run(t, inf)
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := inf.WaitForSync(waitCtx); err != nil {
		t.Fatalf("WaitForSync: %v", err)
	}
	syncTook := time.Since(start)
	if err := inf.Run(ctx); !errors.Is(err, typed.ErrRunning) {
		t.Errorf("a second Run while running = %v, want ErrRunning", err)
	}
	if err := typed.WaitForCacheSync(waitCtx, reg); err != nil {
		t.Fatalf("handler did not sync: %v", err)
	}
	handlerTook := time.Since(start)

	// Nothing writes pods any more: the cache must equal the server now,
	// not eventually.
	server := serverPods(ctx, t, admin, metav1.NamespaceAll, metav1.ListOptions{})
	want := informertest.StateOf(server)
	if len(want) != len(pods) {
		t.Fatalf("server has %d pods, want %d", len(want), len(pods))
	}
	if diff := cmp.Diff(want, informertest.StateOf(inf.Store().List())); diff != "" {
		t.Fatalf("I1: cache after sync differs from the server (-server +cache):\n%s", truncate(diff, 4000))
	}
	rec.Check(t, want)
	for k, evs := range rec.All() {
		if len(evs) != 1 || evs[0].Kind != "add" || !evs[0].Initial {
			t.Errorf("%v: events %+v, want exactly one initial Add", k, evs)
			break
		}
	}
	if st := inf.Status(); !inf.HasSynced() || st.LastError != nil || !st.StaleSince.IsZero() || inf.LastSyncResourceVersion() == "" {
		t.Errorf("after sync: HasSynced %v, LastSyncResourceVersion %q, Status %+v; want synced, a version and no error",
			inf.HasSynced(), inf.LastSyncResourceVersion(), st)
	}

	// Lister: cluster-wide and per-namespace selectors agree with the
	// server's label selection.
	selectors := []string{"", "app=app-1", "tier=front", "app in (app-2,app-3),tier=back", "ring!=0", "app=none"}
	for _, s := range selectors {
		sel, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := inf.Lister().List(sel)
		if err != nil {
			t.Fatalf("List(%q): %v", s, err)
		}
		wantSel := informertest.StateOf(serverPods(ctx, t, admin, metav1.NamespaceAll, metav1.ListOptions{LabelSelector: s}))
		if diff := cmp.Diff(wantSel, informertest.StateOf(got)); diff != "" {
			t.Errorf("Lister().List(%q) differs from the server (-server +lister):\n%s", s, truncate(diff, 2000))
		}
		if len(got) != len(wantSel) {
			t.Errorf("Lister().List(%q) returned %d objects for %d keys (duplicates?)", s, len(got), len(wantSel))
		}
		for _, ns := range []string{nss[0], nss[7]} {
			got, err := inf.Lister().Namespace(ns).List(sel)
			if err != nil {
				t.Fatalf("Namespace(%s).List(%q): %v", ns, s, err)
			}
			wantNS := informertest.StateOf(serverPods(ctx, t, admin, ns, metav1.ListOptions{LabelSelector: s}))
			if diff := cmp.Diff(wantNS, informertest.StateOf(got)); diff != "" {
				t.Errorf("Namespace(%s).List(%q) differs from the server (-server +lister):\n%s", ns, s, truncate(diff, 2000))
			}
		}
	}
	// Get: a sample of names, compared with a GET from the server.
	for _, k := range []cache.Key{{Namespace: nss[0], Name: "pod-0000"}, {Namespace: nss[3], Name: "pod-0250"}, {Namespace: nss[9], Name: "pod-0499"}} {
		got, err := inf.Lister().Namespace(k.Namespace).Get(k.Name)
		if err != nil {
			t.Errorf("Namespace(%s).Get(%s): %v", k.Namespace, k.Name, err)
			continue
		}
		srv, err := admin.CoreV1().Pods(k.Namespace).Get(ctx, k.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != srv.ResourceVersion || got.UID != srv.UID || !cmp.Equal(got.Labels, srv.Labels) {
			t.Errorf("Get(%v) = RV %s UID %s labels %v, server RV %s UID %s labels %v",
				k, got.ResourceVersion, got.UID, got.Labels, srv.ResourceVersion, srv.UID, srv.Labels)
		}
		if got.ManagedFields != nil {
			t.Errorf("Get(%v): managedFields kept, want them dropped by default", k)
		}
	}
	if _, err := inf.Lister().Namespace(nss[0]).Get("no-such-pod"); !apierrors.IsNotFound(err) {
		t.Errorf("Get(no-such-pod) = %v, want NotFound", err)
	}
	if _, err := inf.Lister().Namespace("no-such-namespace").Get("pod-0000"); !apierrors.IsNotFound(err) {
		t.Errorf("Get in another namespace = %v, want NotFound", err)
	}

	st := inf.Status().Stats
	reqs := counter.snapshot()
	t.Logf("figures: initial sync of %d pods: WaitForSync after %v, handler synced after %v; stats %s; pods %s; %s",
		len(want), syncTook.Round(time.Millisecond), handlerTook.Round(time.Millisecond), statsString(st), reqs, errSummary(&errs))
	// I8: one initial list (streaming or LIST), no relist; a streaming list
	// the server refuses falls back to exactly one LIST.
	if st.Relists != 0 || st.Lists+st.WatchLists > 2 || (st.WatchLists == 1 && st.Lists > 0 && len(errs.All()) == 0) {
		t.Errorf("I8: %s, want one initial list and no relist", statsString(st))
	}
	if reqs.Lists+reqs.WatchLists > 2 {
		t.Errorf("I8: %d LIST and %d streaming-list requests for one initial sync", reqs.Lists, reqs.WatchLists)
	}
	stop()
	if _, err := inf.AddHandler(rec); !errors.Is(err, typed.ErrStopped) {
		t.Errorf("AddHandler after Run returned: %v, want ErrStopped", err)
	}
}
