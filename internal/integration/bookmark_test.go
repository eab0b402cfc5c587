//go:build integration

package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/informertest"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/typed"
)

// TestBookmarksAndWatchList: an informer on namespace A syncs with a
// streaming initial list (the server offers it) and no LIST. While A stays
// quiet and pods churn in namespace B, watch bookmarks advance its
// resourceVersion past the last write in B. The API server sends a
// bookmark 2s before a watch's timeout (and about every minute), so the
// informer runs with short watch timeouts (5-10s); when the watch times out
// it re-watches from the bookmark's resourceVersion without a relist
// (docs/reliability.md fault 6). Then an informer with Options.NoWatchList
// syncs through LIST.
func TestBookmarksAndWatchList(t *testing.T) {
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	admin := protobufClientset(t, c.AdminConfig())
	nsA, nsB := uniqueName("bookmark-a"), uniqueName("bookmark-b")
	createNamespaces(ctx, t, admin, nsA, nsB)
	seed(ctx, t, admin, seedPods([]string{nsA}, 5), 5)
	serverA := serverPods(ctx, t, admin, nsA, metav1.ListOptions{})
	var lastRVinA int64
	for _, p := range serverA {
		lastRVinA = max(lastRVinA, rvNum(p.ResourceVersion))
	}

	t.Run("streaming list and bookmarks", func(t *testing.T) {
		counter := newCounter(podsCollection)
		cs := clientset(t, counter.wrap(c.AdminConfig()))
		var errs it.ErrSink
		inf := newInformer(t, podSource(t, cs, nsA), typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle, MinWatchTimeout: 5 * time.Second})
		rec := it.NewRecorder()
		if _, err := inf.AddHandler(rec); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		it.Run(t, inf)
		waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := inf.WaitForSync(waitCtx); err != nil {
			t.Fatalf("WaitForSync: %v", err)
		}
		syncTook := time.Since(start)
		synced := inf.Status().Stats
		syncRV := inf.LastSyncResourceVersion()
		// Synced through a streaming list means its end bookmark arrived:
		// the reflector publishes the initial state only there.
		if synced.WatchLists < 1 || synced.Lists != 0 {
			t.Errorf("stats after sync %s: want a streaming initial list and no LIST (the server offers it)", statsString(synced))
		}
		if rvNum(syncRV) < lastRVinA {
			t.Errorf("I3: LastSyncResourceVersion %s after sync is older than the last write in A (%d)", syncRV, lastRVinA)
		}
		want := informertest.StateOf(serverA)
		it.ConvergeTo(t, want, inf.Store(), rec)

		// Churn in B only.
		var lastRVinB int64
		for i := range 20 {
			p, err := admin.CoreV1().Pods(nsB).Create(ctx, newPod(nsB, fmt.Sprintf("b-%02d", i), nil), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			lastRVinB = rvNum(p.ResourceVersion)
		}
		churned := time.Now()
		it.Eventually(t, fmt.Sprintf("a bookmark advances LastSyncResourceVersion to the last write in B (%d)", lastRVinB), func() bool {
			return rvNum(inf.LastSyncResourceVersion()) >= lastRVinB
		})
		advanced := time.Since(churned)
		// One more watch timeout: the re-watch goes on from the bookmark.
		it.Eventually(t, "a re-watch after the watch timeout", func() bool {
			return counter.snapshot().Watches >= 1
		})
		st := inf.Status().Stats
		reqs := counter.snapshot()
		if st.Bookmarks < 1 {
			t.Errorf("Status().Stats.Bookmarks = %d after the resourceVersion moved by bookmark, want >= 1", st.Bookmarks)
		}
		if st.Events != 0 || rec.Counts().Total() != len(want) {
			t.Errorf("quiet namespace A: %d events, %d handler calls; want 0 events and %d initial adds", st.Events, rec.Counts().Total(), len(want))
		}
		if st.Relists != 0 || reqs.Lists != 0 || reqs.WatchLists != 1 {
			t.Errorf("I8: %s, %s: want one streaming list, no LIST and no relist", statsString(st), reqs)
		}
		it.ConvergeTo(t, want, inf.Store(), rec)
		t.Logf("figures: bookmarks: synced in %v via streaming list (RV %s, last write in A %d); after 20 writes in B (last RV %d) "+
			"LastSyncResourceVersion reached %s in %v; stats %s; pods %s; %s",
			syncTook.Round(time.Millisecond), syncRV, lastRVinA, lastRVinB, inf.LastSyncResourceVersion(),
			advanced.Round(time.Millisecond), statsString(st), reqs, errSummary(&errs))
	})

	t.Run("LIST fallback", func(t *testing.T) {
		counter := newCounter(podsCollection)
		cs := clientset(t, counter.wrap(c.AdminConfig()))
		var errs it.ErrSink
		inf := newInformer(t, podSource(t, cs, metav1.NamespaceAll),
			typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle, NoWatchList: true, PageSize: 7})
		rec := it.NewRecorder()
		if _, err := inf.AddHandler(rec); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		it.Run(t, inf)
		waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := inf.WaitForSync(waitCtx); err != nil {
			t.Fatalf("WaitForSync: %v", err)
		}
		syncTook := time.Since(start)
		it.ConvergeTo(t, serverState(ctx, t, admin, metav1.NamespaceAll), inf.Store(), rec)
		// Still following changes after a paginated LIST.
		if _, err := admin.CoreV1().Pods(nsA).Create(ctx, newPod(nsA, "after-list", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		want := serverState(ctx, t, admin, metav1.NamespaceAll)
		it.ConvergeTo(t, want, inf.Store(), rec)
		st := inf.Status().Stats
		reqs := counter.snapshot()
		pages := (len(want) + 6) / 7
		t.Logf("figures: LIST fallback: %d pods synced in %v with page size 7; stats %s; pods %s; %s",
			len(want)-1, syncTook.Round(time.Millisecond), statsString(st), reqs, errSummary(&errs))
		if st.Lists != 1 || st.WatchLists != 0 || st.Relists != 0 {
			t.Errorf("stats %s: want one LIST (pages count once), no streaming list, no relist", statsString(st))
		}
		// The first LIST asks for resourceVersion "0", which the watch cache
		// serves whole, ignoring the limit; a quorum LIST would come in pages.
		if reqs.WatchLists != 0 || reqs.Lists < 1 || reqs.Lists > pages+1 || reqs.Watches < 1 {
			t.Errorf("pods %s: want a LIST (1 to %d pages), then a watch, and no streaming list", reqs, pages+1)
		}
	})
}
