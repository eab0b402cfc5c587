//go:build integration

package integration

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// TestForbiddenThenGranted: an informer running as "alice", who has no
// RBAC binding, gets Forbidden. WaitForSync returns an error that
// apierrors.IsForbidden recognises at once, the sync status carries it,
// and the informer backs off instead of retrying in a tight loop (I6, I8).
// Once a ClusterRole to get, list and watch pods is bound to alice, the
// same informer syncs without a restart and converges (I1). When the
// binding is deleted again, the error reaches SyncStatus at the next
// re-watch, still without a tight loop.
func TestForbiddenThenGranted(t *testing.T) {
	const (
		window   = 10 * time.Second
		maxCalls = 20 // requests alice may make in the window
	)
	c := sharedCluster(t)
	ctx := t.Context()
	admin := protobufClientset(t, c.AdminConfig())
	ns := uniqueName("rbac")
	createNamespaces(ctx, t, admin, ns)
	seed(ctx, t, admin, seedPods([]string{ns}, 20), 8)

	// Count every request alice makes, and those on the pods collection.
	counter := newCounter(regexp.MustCompile(`^/api/v1/pods$`))
	alice := clientset(t, counter.wrap(c.UserConfig()))
	var errs errorLog
	inf := typed.NewInformer(source.FromClient[*corev1.Pod](alice.CoreV1().Pods(metav1.NamespaceAll)),
		// Short watches, so that a revocation is noticed at the next
		// re-watch (a running watch is authorized only when it starts).
		typed.Options[*corev1.Pod]{ErrorHandler: errs.handle, MinWatchTimeout: 3 * time.Second})
	rec := newRecorder[*corev1.Pod]()
	reg, err := inf.AddHandler(rec.handler())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	run(t, inf)
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
	if st := inf.SyncStatus(); st.Synced || !apierrors.IsForbidden(st.LastError) || st.LastErrorTime.IsZero() {
		t.Errorf("SyncStatus = %+v, want not synced with a Forbidden LastError", st)
	}
	t.Logf("WaitForSync: %v", err)

	// No tight loop: count alice's requests over the window since Run.
	time.Sleep(time.Until(start.Add(window)))
	inWindow := counter.snapshot()
	errsInWindow := errs.len()
	if inWindow.All > maxCalls {
		t.Errorf("I8: alice made %d requests in %v while forbidden (%s); want at most %d", inWindow.All, window, inWindow, maxCalls)
	}
	if inWindow.All < 2 || inWindow.ByCode[403] == 0 {
		t.Errorf("alice made %d requests (%s), want at least one list attempt answered 403", inWindow.All, inWindow)
	}
	if rec.callCount() != 0 || reg.HasSynced() {
		t.Errorf("handler called %d times / synced %v while forbidden", rec.callCount(), reg.HasSynced())
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
	want := stateOf(serverPods(ctx, t, admin, metav1.NamespaceAll, metav1.ListOptions{}))
	converge(t, inf, want, time.Minute)
	rec.waitFor(t, "alice", want, time.Minute)
	rec.check(t, "alice", want)
	if st := inf.SyncStatus(); !st.Synced || st.LastError != nil {
		t.Errorf("SyncStatus after the grant = %+v, want synced with no error", st)
	}
	// And it follows changes.
	p := newPod(ns, "after-grant", nil)
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the informer sees a pod created after the grant", func() bool {
		_, err := inf.Lister().Namespace(ns).Get("after-grant")
		return err == nil
	})

	total := counter.snapshot()

	t.Logf("figures: Forbidden: WaitForSync returned Forbidden after %v; alice's requests in the first %v: %s "+
		"(%d errors reported); synced %v after the grant (%d WaitForSync polls, %s between grant and sync); "+
		"total %s; stats %s",
		forbiddenAfter.Round(time.Millisecond), window, inWindow, errsInWindow,
		syncedAfterGrant.Round(time.Millisecond), polls, total.sub(beforeGrant), total, statsString(inf.Stats()))

	// Revoke: the next re-watch is forbidden. The error must reach the
	// sync status (I6) without a tight loop (I8); the cache keeps its last
	// content (it is not cleared), and the informer stays "synced": the
	// initial list was in (SyncStatus.LastError says it is not current).
	if err := admin.RbacV1().ClusterRoleBindings().Delete(ctx, role, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	eventually(t, 2*time.Minute, "SyncStatus reports Forbidden after the revocation", func() bool {
		return apierrors.IsForbidden(inf.SyncStatus().LastError)
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
	st := inf.SyncStatus()
	t.Logf("figures: revoked: Forbidden in SyncStatus %v after the revocation; alice's requests in the next %v: %s; "+
		"SyncStatus then: Synced=%v LastError=%v; WaitForSync returns %v",
		noticedAfter.Round(time.Millisecond), window, revokedWindow, st.Synced, st.LastError, inf.WaitForSync(ctx))
}

// waitCtxFor returns a context that ends after d or with the test.
func waitCtxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
