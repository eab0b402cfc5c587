//go:build integration

package integration

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/informertest"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/source"
)

// TestNamespaceSetRealServer: "alice" may read pods in three namespaces of
// four, not cluster-wide (the multi-tenant operator's RBAC). One factory
// informer over a set of two of them syncs their pods alone, with one LIST
// per namespace; follows writes; takes in the third when it is added and
// lets go of the first when it is removed. A namespace added that alice may
// not read is reported as Forbidden, and the set recovers once it is
// removed again. The cache equals the server throughout (I1, I2-I4).
func TestNamespaceSetRealServer(t *testing.T) {
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	admin := protobufClientset(t, c.AdminConfig())
	p := uniqueName("nsset")
	a, b, cc, d := p+"-a", p+"-b", p+"-c", p+"-d"
	createNamespaces(ctx, t, admin, a, b, cc, d)
	seed(ctx, t, admin, seedPods([]string{a, b, cc, d}, 80), 8)

	role := uniqueName("nsset-pod-reader")
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.RbacV1().ClusterRoles().Delete(context.Background(), role, metav1.DeleteOptions{}) })
	for _, ns := range []string{a, b, cc} {
		if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	counter := newCounter(regexp.MustCompile(`^/api/v1/namespaces/[^/]+/pods$`))
	var errs it.ErrSink
	f, err := factory.New(counter.wrap(c.UserConfig()), factory.Options{ErrorHandler: errs.Handle})
	if err != nil {
		t.Fatal(err)
	}
	set, err := source.NewNamespaces(a, b)
	if err != nil {
		t.Fatal(err)
	}
	inf, _, err := factory.InformerFor[*corev1.Pod](f, factory.Scope{Namespaces: set})
	if err != nil {
		t.Fatal(err)
	}
	rec := it.NewRecorder()
	if _, err := inf.AddHandler(rec); err != nil {
		t.Fatal(err)
	}
	startFactory(t, f)
	if err := f.WaitForSync(waitCtxFor(t, time.Minute)); err != nil {
		t.Fatalf("%v\n%s", err, errSummary(&errs))
	}
	want := func() informertest.State {
		s := informertest.State{}
		for _, ns := range set.Names() {
			maps.Copy(s, serverState(ctx, t, admin, ns))
		}
		return s
	}
	it.ConvergeTo(t, want(), inf.Store(), rec)
	if got := inf.Store().Len(); got != 40 {
		t.Errorf("synced %d pods, want a's and b's 40", got)
	}
	if n := len(counter.listRequests()); n != 2 {
		t.Errorf("%d LIST requests for the first sync of 2 namespaces, want 2: %v", n, counter.listRequests())
	}

	// Writes in and out of the set.
	for i := range 10 {
		for _, ns := range []string{b, d} {
			if _, err := admin.CoreV1().Pods(ns).Create(ctx, newPod(ns, fmt.Sprint("w-", i), nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := admin.CoreV1().Pods(a).Delete(ctx, "seed-0000", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	it.ConvergeTo(t, want(), inf.Store(), rec)

	if err := set.Add(cc); err != nil {
		t.Fatal(err)
	}
	it.ConvergeTo(t, want(), inf.Store(), rec)
	if err := set.Remove(a); err != nil {
		t.Fatal(err)
	}
	it.ConvergeTo(t, want(), inf.Store(), rec)

	// A namespace alice may not read: Forbidden, reported; the cache
	// keeps what it had until the set is one alice may read again.
	before := len(errs.All())
	if err := set.Add(d); err != nil {
		t.Fatal(err)
	}
	it.Eventually(t, "Forbidden in the namespace added", func() bool {
		for _, err := range errs.All()[before:] {
			if apierrors.IsForbidden(err) {
				return true
			}
		}
		return false
	})
	if err := set.Remove(d); err != nil {
		t.Fatal(err)
	}
	it.ConvergeTo(t, want(), inf.Store(), rec)
	if got := inf.Store().Len(); got != 50 {
		t.Errorf("after the changes: %d pods, want b's 30 and c's 20", got)
	}
	t.Logf("LIST requests: %d; stats %s", len(counter.listRequests()), statsString(inf.Status().Stats))
}
