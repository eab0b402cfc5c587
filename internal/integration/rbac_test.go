//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/typedinformer/informer/cache"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/typed"
)

// TestForbiddenThenGranted: an informer running as "alice", who has no
// RBAC binding, gets Forbidden. WaitForSync returns an error that
// apierrors.IsForbidden recognises at once, Status().LastError carries it,
// and the informer backs off instead of retrying in a tight loop (I6, I8).
// Once a ClusterRole to get, list and watch pods is bound to alice, the
// same informer syncs without a restart and converges (I1). When the
// binding is deleted again, the error reaches Status().LastError at the
// next re-watch, still without a tight loop, and without a relist.
func TestForbiddenThenGranted(t *testing.T) {
	const (
		window   = 10 * time.Second
		maxCalls = 20 // requests alice may make in the window
	)
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	admin := protobufClientset(t, c.AdminConfig())
	ns := uniqueName("rbac")
	createNamespaces(ctx, t, admin, ns)
	seed(ctx, t, admin, seedPods([]string{ns}, 20), 8)

	// Count every request alice makes, and those on the pods collection.
	counter := newCounter(regexp.MustCompile(`^/api/v1/pods$`))
	alice := clientset(t, counter.wrap(c.UserConfig()))
	var errs it.ErrSink
	inf := newInformer(t, podSource(t, alice, metav1.NamespaceAll),
		// Short watches, so that a revocation is noticed at the next
		// re-watch (a running watch is authorized only when it starts).
		typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle, MinWatchTimeout: 3 * time.Second})
	rec := it.NewRecorder()
	reg, err := inf.AddHandler(rec)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	it.Run(t, inf)
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = inf.WaitForSync(waitCtx)
	forbiddenAfter := time.Since(start)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("WaitForSync = %v, want an error for which apierrors.IsForbidden is true", err)
	}
	var nse *typed.NotSyncedError
	if !errors.As(err, &nse) || nse.Wait != nil {
		t.Errorf("WaitForSync error = %#v, want a *NotSyncedError without a wait error (it returned at once)", err)
	}
	if waitCtx.Err() != nil {
		t.Errorf("WaitForSync returned only when its context ended")
	}
	if st := inf.Status(); inf.HasSynced() || !apierrors.IsForbidden(st.LastError) || st.LastErrorTime.IsZero() || st.StaleSince.IsZero() {
		t.Errorf("HasSynced %v, Status %+v; want not synced with a Forbidden LastError", inf.HasSynced(), st)
	}
	t.Logf("WaitForSync: %v", err)

	// No tight loop: count alice's requests over the window since Run.
	time.Sleep(time.Until(start.Add(window)))
	inWindow := counter.snapshot()
	errsInWindow := len(errs.All())
	if inWindow.All > maxCalls {
		t.Errorf("I8: alice made %d requests in %v while forbidden (%s); want at most %d", inWindow.All, window, inWindow, maxCalls)
	}
	if inWindow.All < 2 || inWindow.ByCode[403] == 0 {
		t.Errorf("alice made %d requests (%s), want at least one list attempt answered 403", inWindow.All, inWindow)
	}
	if rec.Counts().Total() != 0 || reg.HasSynced() {
		t.Errorf("handler called %d times / synced %v while forbidden", rec.Counts().Total(), reg.HasSynced())
	}

	// Grant get, list and watch on pods.
	role := uniqueName("integration-pod-reader")
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = admin.RbacV1().ClusterRoleBindings().Delete(ctx, role, metav1.DeleteOptions{})
		_ = admin.RbacV1().ClusterRoles().Delete(ctx, role, metav1.DeleteOptions{})
	})
	granted := time.Now()
	beforeGrant := counter.snapshot()

	// The same informer syncs; poll WaitForSync, which keeps answering
	// Forbidden at once until the informer's next attempt succeeds. The
	// bound covers the capped backoff (30s, with jitter up to 60s).
	deadline := time.Now().Add(2 * time.Minute)
	polls := 0
	for {
		polls++
		err := inf.WaitForSync(waitCtxFor(t, 2*time.Second))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not synced 2 minutes after the grant: %v (%s)", err, counter.snapshot())
		}
		if !apierrors.IsForbidden(err) && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitForSync after the grant = %v, want Forbidden until it syncs", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	syncedAfterGrant := time.Since(granted)
	want := serverState(ctx, t, admin, metav1.NamespaceAll)
	it.ConvergeTo(t, want, inf.Store(), rec)
	if st := inf.Status(); !inf.HasSynced() || st.LastError != nil || !st.StaleSince.IsZero() {
		t.Errorf("after the grant: HasSynced %v, Status %+v; want synced with no error", inf.HasSynced(), st)
	}
	// And it follows changes.
	p := newPod(ns, "after-grant", nil)
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	it.Eventually(t, "the informer sees a pod created after the grant", func() bool {
		_, err := inf.Lister().Namespace(ns).Get("after-grant")
		return err == nil
	})

	total := counter.snapshot()

	t.Logf("figures: Forbidden: WaitForSync returned Forbidden after %v; alice's requests in the first %v: %s "+
		"(%d errors reported); synced %v after the grant (%d WaitForSync polls, %s between grant and sync); "+
		"total %s; stats %s",
		forbiddenAfter.Round(time.Millisecond), window, inWindow, errsInWindow,
		syncedAfterGrant.Round(time.Millisecond), polls, total.sub(beforeGrant), total, statsString(inf.Status().Stats))

	// Revoke: the next re-watch is forbidden. The error must reach
	// Status().LastError (I6) without a tight loop (I8); the cache keeps
	// its last content (it is not cleared), and the informer stays synced:
	// the initial list was in (LastError and StaleSince say it may not be
	// current).
	statsAtRevoke := inf.Status().Stats
	reqsAtRevoke := counter.snapshot()
	watchesAtRevoke := len(counter.plainWatches())
	if err := admin.RbacV1().ClusterRoleBindings().Delete(ctx, role, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	it.Eventually(t, "Status().LastError reports Forbidden after the revocation", func() bool {
		return apierrors.IsForbidden(inf.Status().LastError)
	})
	noticedAfter := time.Since(revoked)
	atNotice := counter.snapshot()
	time.Sleep(window)
	revokedWindow := counter.snapshot().sub(atNotice)
	if revokedWindow.All > maxCalls {
		t.Errorf("I8: alice made %d requests in %v after the revocation (%s); want at most %d", revokedWindow.All, window, revokedWindow, maxCalls)
	}
	if n := len(inf.Store().List()); n != len(want)+1 {
		t.Errorf("cache has %d pods after the revocation, want the last known %d", n, len(want)+1)
	}
	st := inf.Status()
	if !inf.HasSynced() || !apierrors.IsForbidden(st.LastError) || st.StaleSince.IsZero() {
		t.Errorf("after the revocation: HasSynced %v, Status %+v; want still synced, with a Forbidden LastError and StaleSince set",
			inf.HasSynced(), st)
	}
	// Changed on purpose: a 403 at watch start no longer leads to a
	// relist (it did before the reflector's redesign). The watch is retried
	// from the same resourceVersion after a backoff
	// (TestRewatchAfterRevokeAndGrant follows it to the grant). The sync in
	// between does not reset the backoff (as in client-go, it goes back to
	// 800ms only every two minutes), so it goes on from where the forbidden
	// initial lists left it and the retry may come after the window above:
	// wait for it.
	refused := 0
	it.Eventually(t, "the refused re-watch is retried", func() bool {
		refused = 0
		for _, w := range counter.plainWatches()[watchesAtRevoke:] {
			if w.Code == 403 {
				refused++
			}
		}
		return refused >= 2
	})
	st = inf.Status()
	sinceRevoke := counter.snapshot().sub(reqsAtRevoke)
	if st.Stats.Relists != statsAtRevoke.Relists || sinceRevoke.Lists+sinceRevoke.WatchLists != 0 || !apierrors.IsForbidden(st.LastError) {
		t.Errorf("I8: after the revocation and %d refused watches: %s, pods %s, LastError %v; want no relist and Forbidden (stats before %s)",
			refused, statsString(st.Stats), sinceRevoke, st.LastError, statsString(statsAtRevoke))
	}
	// WaitForSync waits for the initial sync, which happened: it returns
	// nil even while LastError is Forbidden.
	t.Logf("figures: revoked: Forbidden in Status().LastError %v after the revocation; alice's requests in the next %v: %s; "+
		"%v after the revocation, %d refused watches and requests %s; then: HasSynced=%v LastError=%v StaleSince set=%v; "+
		"stats %s; WaitForSync returns %v",
		noticedAfter.Round(time.Millisecond), window, revokedWindow, time.Since(revoked).Round(time.Millisecond), refused, sinceRevoke,
		inf.HasSynced(), st.LastError, !st.StaleSince.IsZero(), statsString(st.Stats), inf.WaitForSync(ctx))
}

// TestRewatchAfterRevokeAndGrant: alice may get, list and watch the pods
// of one namespace (a RoleBinding); the binding is deleted while the
// informer's watch is open. The open watch goes on (a watch is authorized
// when it starts) until it times out; the re-watch is refused with 403,
// and retried from the same resourceVersion after a backoff, with
// Forbidden in Status().LastError and the cache kept. Pods are deleted,
// updated and created meanwhile. Once the binding is back, the informer
// re-watches from that same resourceVersion, which the watch cache still
// holds, and gets the changes of the gap as ordinary events: no relist
// (Stats.Relists, LIST and streaming-list requests unchanged; the gap's
// deletions are not final-state-unknown), LastError cleared as soon as the
// watch is established, and the cache and the handler converge (I1-I4).
// It is the real-server case of an in-stream error that needs no relist:
// a 500 or a connection reset cannot be injected into a real server's
// stream, a revocation can.
func TestRewatchAfterRevokeAndGrant(t *testing.T) {
	const (
		seeded  = 20
		deleted = 5 // of the seeded pods, deleted in the gap
		updated = 5 // of the seeded pods, updated in the gap
		created = 5 // pods created in the gap
	)
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	admin := protobufClientset(t, c.AdminConfig())
	ns := uniqueName("rewatch")
	createNamespaces(ctx, t, admin, ns)
	pods := seedPods([]string{ns}, seeded)
	seed(ctx, t, admin, pods, 8)

	// alice may read the pods of ns while the RoleBinding exists.
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-reads-pods"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
	}
	aliceDirect := clientset(t, c.UserConfig()) // not counted: to see what alice may do
	grant := func() {
		t.Helper()
		if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		it.Eventually(t, "alice may list the pods of "+ns, func() bool {
			_, err := aliceDirect.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
			return err == nil
		})
	}
	t.Cleanup(func() {
		_ = admin.RbacV1().RoleBindings(ns).Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	grant()

	counter := newCounter(regexp.MustCompile(`^/api/v1/namespaces/` + regexp.QuoteMeta(ns) + `/pods$`))
	alice := clientset(t, counter.wrap(c.UserConfig()))
	var errs it.ErrSink
	// Watches of 5-10s: the open watch ends soon after the revocation.
	inf := newInformer(t, podSource(t, alice, ns), typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle, MinWatchTimeout: 5 * time.Second})
	rec := it.NewRecorder()
	reg, err := inf.AddHandler(rec)
	if err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)
	monitorRV(t, inf)
	if err := typed.WaitForCacheSync(waitCtxFor(t, 2*time.Minute), inf, reg); err != nil {
		t.Fatal(err)
	}
	it.ConvergeTo(t, serverState(ctx, t, admin, ns), inf.Store(), rec)
	// A streaming list's watch goes on after its end bookmark; after a
	// LIST, wait for the watch that follows it.
	it.Eventually(t, "a watch is open", func() bool {
		ws := counter.plainWatches()
		return inf.Status().Stats.Lists == 0 || len(ws) > 0 && ws[len(ws)-1].Code == 200
	})
	statsBefore := inf.Status().Stats
	reqsBefore := counter.snapshot()
	watchesBefore := len(counter.plainWatches())

	// Revoke while the watch is open.
	if err := admin.RbacV1().RoleBindings(ns).Delete(ctx, binding.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	it.Eventually(t, "Status().LastError reports the refused re-watch", func() bool {
		return apierrors.IsForbidden(inf.Status().LastError)
	})
	refusedAfter := time.Since(revoked)
	rvRefused := inf.LastSyncResourceVersion()
	if st := inf.Status(); !inf.HasSynced() || st.StaleSince.IsZero() || inf.Store().Len() != seeded {
		t.Errorf("after the refused re-watch: HasSynced %v, StaleSince %v, %d cached pods; want synced, stale, the %d last known",
			inf.HasSynced(), st.StaleSince, inf.Store().Len(), seeded)
	}

	// The gap: changes the informer cannot watch.
	var goneKeys, updatedKeys, createdKeys []cache.Key
	for _, p := range pods[:deleted] {
		if err := admin.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		goneKeys = append(goneKeys, cache.KeyOf(p))
	}
	for _, p := range pods[deleted : deleted+updated] {
		if _, err := admin.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"gap":"updated"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		updatedKeys = append(updatedKeys, cache.KeyOf(p))
	}
	for i := range created {
		p := newPod(ns, fmt.Sprintf("gap-%d", i), nil)
		if _, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		createdKeys = append(createdKeys, cache.KeyOf(p))
	}
	if rv := inf.LastSyncResourceVersion(); rv != rvRefused || inf.Store().Len() != seeded {
		t.Errorf("while forbidden: LastSyncResourceVersion %s (was %s), %d cached pods; want no progress", rv, rvRefused, inf.Store().Len())
	}

	// Grant again: the next retry re-watches from rvRefused.
	grant()
	granted := time.Now()
	it.Eventually(t, "LastError cleared by an established watch", func() bool { return inf.Status().LastError == nil })
	rewatchedAfter := time.Since(granted)
	want := serverState(ctx, t, admin, ns)
	it.ConvergeTo(t, want, inf.Store(), rec)

	st := inf.Status()
	reqs := counter.snapshot().sub(reqsBefore)
	gapWatches := counter.plainWatches()[watchesBefore:]
	var refused, established []watchReq
	for _, w := range gapWatches {
		switch w.Code {
		case 403:
			refused = append(refused, w)
		case 200:
			established = append(established, w)
		}
	}
	t.Logf("figures: revoke and grant: re-watch refused %v after the revocation at RV %s; watched again %v after the grant; "+
		"watches since the revocation %+v; pods %s; stats before %s, after %s; handler %v; %s",
		refusedAfter.Round(time.Millisecond), rvRefused, rewatchedAfter.Round(time.Millisecond), gapWatches, reqs,
		statsString(statsBefore), statsString(st.Stats), it.Kinds(rec), errSummary(&errs))

	if !st.StaleSince.IsZero() || !inf.HasSynced() {
		t.Errorf("after the re-watch: HasSynced %v, Status %+v; want synced and healthy", inf.HasSynced(), st)
	}
	// No relist: the resourceVersion did not expire, so the re-watch
	// resumes from it.
	if st.Stats.Relists != statsBefore.Relists || reqs.Lists != 0 || reqs.WatchLists != 0 {
		t.Errorf("I8: relists %d -> %d, %d LIST and %d streaming-list requests since the revocation; want none",
			statsBefore.Relists, st.Stats.Relists, reqs.Lists, reqs.WatchLists)
	}
	if len(refused) == 0 || len(established) == 0 {
		t.Fatalf("watches since the revocation %+v: want at least one refused (403) and then one established (200)", gapWatches)
	}
	for _, w := range append(refused, established[0]) {
		if w.RV != rvRefused {
			t.Errorf("watch %+v since the revocation: want every refused watch and the first established one from RV %s", w, rvRefused)
		}
	}
	// The gap's changes arrive as watch events.
	// A deleted pod without a node gets an Update (deletionTimestamp set)
	// just before its Delete; a relist would give one final-state-unknown
	// Delete and no Update.
	for _, k := range goneKeys {
		evs := rec.Events(k)
		deletes := 0
		for _, e := range evs {
			if e.Kind == "delete" {
				deletes++
			}
		}
		if last := evs[len(evs)-1]; deletes != 1 || last.Kind != "delete" || last.FSU {
			t.Errorf("%v deleted in the gap: events %+v; want them to end with one watched Delete (not final-state-unknown)", k, evs)
		}
	}
	for _, k := range updatedKeys {
		evs := rec.Events(k)
		if last := evs[len(evs)-1]; last.Kind != "update" || last.RV+"/"+string(last.UID) != want[k] {
			t.Errorf("%v updated in the gap: events %+v; want an Update to %s last", k, evs, want[k])
		}
	}
	for _, k := range createdKeys {
		if evs := rec.Events(k); len(evs) != 1 || evs[0].Kind != "add" || evs[0].Initial {
			t.Errorf("%v created in the gap: events %+v; want one live Add", k, evs)
		}
	}
}
