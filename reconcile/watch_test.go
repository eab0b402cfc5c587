package reconcile_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/typedinformer/informer/cache"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/reconcile"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

var deploymentKind = schema.GroupKind{Group: "apps", Kind: "Deployment"}

func deployment(name string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

// replicaSet is a ReplicaSet in ns owned by the Deployment owner (none if
// empty), with controller set as given.
func replicaSet(name, owner string, controller bool) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	if owner != "" {
		rs.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "Deployment", Name: owner, UID: types.UID("u-" + owner), Controller: &controller,
		}}
	}
	return rs
}

// ownedEnv is a Deployment controller with an Owned watch of ReplicaSets.
type ownedEnv struct {
	deps  *sourcetest.Fake[*appsv1.Deployment]
	rss   *sourcetest.Fake[*appsv1.ReplicaSet]
	rsInf *typed.Informer[*appsv1.ReplicaSet]
	ctrl  *reconcile.Controller[*appsv1.Deployment]
	rec   *recorder
}

func newOwnedEnv(t *testing.T, rss []*appsv1.ReplicaSet, opts reconcile.WatchOptions[*appsv1.ReplicaSet]) *ownedEnv {
	t.Helper()
	e := &ownedEnv{
		deps: sourcetest.NewFake(sourcetest.FakeOptions[*appsv1.Deployment]{
			Resource: schema.GroupResource{Group: "apps", Resource: "deployments"}, Scope: cache.ScopeNamespaced,
			Objects: []*appsv1.Deployment{deployment("web"), deployment("db")},
		}),
		rss: sourcetest.NewFake(sourcetest.FakeOptions[*appsv1.ReplicaSet]{Objects: rss}),
		rec: newRecorder(nil),
	}
	depInf, err := typed.NewInformer(e.deps, typed.Options[*appsv1.Deployment]{})
	if err != nil {
		t.Fatal(err)
	}
	if e.rsInf, err = typed.NewInformer(e.rss, typed.Options[*appsv1.ReplicaSet]{}); err != nil {
		t.Fatal(err)
	}
	errs := &it.ErrSink{}
	e.ctrl, err = reconcile.New(depInf, e.rec, reconcile.Options[*appsv1.Deployment]{
		Watches:      []reconcile.Watch{reconcile.Owned(e.rsInf, deploymentKind, opts)},
		ErrorHandler: errs.Handle,
	})
	if err != nil {
		t.Fatal(err)
	}
	stopDeps, stopRS := it.Run(t, depInf), it.Run(t, e.rsInf)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.ctrl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
		stopDeps()
		stopRS()
		if errs := errs.All(); len(errs) != 0 {
			t.Errorf("reported %v, want nothing", errs)
		}
	})
	return e
}

// calls returns the keys reconciled since the last call, and forgets them.
func (r *recorder) take() []cache.Key {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

func depKey(name string) cache.Key { return cache.Key{Namespace: "ns", Name: name} }

// TestOwned: a child's change reconciles its controller owner: create,
// update, delete, and both owners when the owner changes; a child with no
// controller owner of the kind is ignored and counted; OwnedBy reads the
// owner index.
func TestOwned(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		e := newOwnedEnv(t, []*appsv1.ReplicaSet{replicaSet("web-1", "web", true)}, reconcile.WatchOptions[*appsv1.ReplicaSet]{})
		synctest.Wait()
		// The initial list: each Deployment, and web again for its child
		// (one reconcile if its key was still queued).
		if got := e.rec.count(depKey("web")); got < 1 || got > 2 {
			t.Errorf("web reconciled %d times at start, want 1 or 2", got)
		}
		e.rec.take()

		step := func(what string, do func() error, want ...cache.Key) {
			t.Helper()
			if err := do(); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			if diff := cmp.Diff(want, e.rec.take()); diff != "" {
				t.Errorf("%s: reconciled (-want +got):\n%s", what, diff)
			}
		}
		step("a new child", func() error { _, err := e.rss.Create(replicaSet("db-1", "db", true)); return err }, depKey("db"))
		step("a child update", func() error {
			rs, _ := e.rss.Get(depKey("web-1"))
			rs.Labels = map[string]string{"x": "1"}
			_, err := e.rss.Update(rs)
			return err
		}, depKey("web"))
		step("a child moved to another owner", func() error { _, err := e.rss.Update(replicaSet("web-1", "db", true)); return err },
			depKey("web"), depKey("db"))
		step("a child deleted", func() error { _, err := e.rss.Delete(depKey("db-1")); return err }, depKey("db"))
		step("an orphan", func() error { _, err := e.rss.Create(replicaSet("orphan", "", false)); return err })
		step("an owner that is not the controller", func() error { _, err := e.rss.Create(replicaSet("adopted", "web", false)); return err })

		s := e.ctrl.Status()
		if len(s.Watches) != 1 || s.Watches[0].Ignored != 2 || s.Watches[0].Mapped != 5 {
			t.Errorf("Status().Watches = %+v, want one watch with 5 mapped (1 at start) and 2 ignored changes", s.Watches)
		}
		children, err := reconcile.OwnedBy(e.rsInf, deploymentKind, depKey("db"))
		if err != nil || len(children) != 1 || children[0].Name != "web-1" {
			t.Errorf("OwnedBy(db) = %v, %v; want [web-1]", children, err)
		}
		if _, err := reconcile.OwnedBy(e.rsInf, schema.GroupKind{Kind: "Other"}, depKey("db")); !errors.Is(err, cache.ErrNoIndex) {
			t.Errorf("OwnedBy of an unindexed kind: %v, want cache.ErrNoIndex", err)
		}
	})
}

// TestOwnedPredicates: the watch's predicates decide which child changes
// count.
func TestOwnedPredicates(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		e := newOwnedEnv(t, nil, reconcile.WatchOptions[*appsv1.ReplicaSet]{
			Predicates: []reconcile.Predicate[*appsv1.ReplicaSet]{reconcile.GenerationChanged[*appsv1.ReplicaSet]()},
		})
		synctest.Wait()
		rs := replicaSet("web-1", "web", true)
		rs.Generation = 1 // the server sets it; objects without one always pass
		if _, err := e.rss.Create(rs); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		e.rec.take()
		rs, _ = e.rss.Get(depKey("web-1"))
		rs.Labels = map[string]string{"only": "metadata"} // same generation
		if _, err := e.rss.Update(rs); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := e.rec.take(); len(got) != 0 {
			t.Errorf("a child update with the same generation reconciled %v, want nothing", got)
		}
		rs, _ = e.rss.Get(depKey("web-1"))
		rs.Generation++
		if _, err := e.rss.Update(rs); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if diff := cmp.Diff([]cache.Key{depKey("web")}, e.rec.take()); diff != "" {
			t.Errorf("a new generation reconciled (-want +got):\n%s", diff)
		}
	})
}

// TestLabeledAndMapped: Labeled maps the label's value to a key in the
// object's namespace, Mapped whatever the function returns; both count
// what they ignore. A cluster-scoped controller type gets keys with no
// namespace.
func TestLabeledAndMapped(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		nodes := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Node]{Scope: cache.ScopeCluster, Objects: []*corev1.Node{
			{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
		}})
		podFake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
		nodeInf, err := typed.NewInformer(nodes, typed.Options[*corev1.Node]{})
		if err != nil {
			t.Fatal(err)
		}
		podInf, err := typed.NewInformer(podFake, typed.Options[*corev1.Pod]{})
		if err != nil {
			t.Fatal(err)
		}
		rec := newRecorder(nil)
		ctrl, err := reconcile.New(nodeInf, rec, reconcile.Options[*corev1.Node]{Watches: []reconcile.Watch{
			reconcile.Labeled(podInf, "node", reconcile.WatchOptions[*corev1.Pod]{}),
			reconcile.Mapped(podInf, func(p *corev1.Pod) []cache.Key {
				if p.Spec.NodeName == "" {
					return nil
				}
				return []cache.Key{{Name: p.Spec.NodeName}}
			}, reconcile.WatchOptions[*corev1.Pod]{}),
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer it.Run(t, nodeInf)()
		defer it.Run(t, podInf)()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- ctrl.Run(ctx) }()
		synctest.Wait()
		rec.take()

		labeled := it.Pod("ns", "a", map[string]string{"node": "n1"})
		bound := it.Pod("ns", "b", nil)
		bound.Spec.NodeName = "n2"
		for _, p := range []*corev1.Pod{labeled, bound, it.Pod("ns", "neither", nil)} {
			if _, err := podFake.Create(p); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
		}
		if diff := cmp.Diff([]cache.Key{{Name: "n1"}, {Name: "n2"}}, rec.take()); diff != "" {
			t.Errorf("reconciled (-want +got):\n%s", diff)
		}
		s := ctrl.Status()
		want := []reconcile.WatchStatus{{Name: "pods label node", Mapped: 1, Ignored: 2}, {Name: "pods mapped", Mapped: 1, Ignored: 2}}
		if diff := cmp.Diff(want, s.Watches); diff != "" {
			t.Errorf("Status().Watches (-want +got):\n%s", diff)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	})
}

// TestWatchedInformer: Run waits for every watched informer to sync
// before it reconciles, and returns an error naming a watched informer
// that stopped on its own.
func TestWatchedInformer(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		parents := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.ConfigMap]{})
		children := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Secret]{})
		pInf, _ := typed.NewInformer(parents, typed.Options[*corev1.ConfigMap]{})
		cInf, _ := typed.NewInformer(children, typed.Options[*corev1.Secret]{Name: "secrets"})
		rec := newRecorder(nil)
		ctrl, err := reconcile.New(pInf, rec, reconcile.Options[*corev1.ConfigMap]{Watches: []reconcile.Watch{
			reconcile.Labeled(cInf, "cm", reconcile.WatchOptions[*corev1.Secret]{}),
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer it.Run(t, pInf)()
		done := make(chan error, 1)
		go func() { done <- ctrl.Run(context.Background()) }()
		synctest.Wait()
		if ctrl.Status().Started {
			t.Fatal("the controller started before its watched informer synced")
		}
		ctx, stopChildren := context.WithCancel(context.Background())
		childDone := make(chan error, 1)
		go func() { childDone <- cInf.Run(ctx) }()
		synctest.Wait()
		if !ctrl.Status().Started {
			t.Fatal("the controller did not start after its watched informer synced")
		}
		stopChildren()
		<-childDone
		if err := <-done; !errors.Is(err, typed.ErrStopped) || !strings.Contains(err.Error(), "secrets") {
			t.Errorf("Run after a watched informer stopped = %v, want typed.ErrStopped naming it", err)
		}
	})
}

// TestNewRefusesBadWatches: a nil Watch, a watch of a nil informer, an
// owner without a kind, an empty label, a nil mapping, a nil predicate.
func TestNewRefusesBadWatches(t *testing.T) {
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
	inf, err := typed.NewInformer(fake, typed.Options[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	r := reconcile.Func(func(context.Context, cache.Key) error { return nil })
	for name, w := range map[string]reconcile.Watch{
		"nil":            nil,
		"nil informer":   reconcile.Owned[*corev1.Pod](nil, deploymentKind, reconcile.WatchOptions[*corev1.Pod]{}),
		"no kind":        reconcile.Owned(inf, schema.GroupKind{Group: "apps"}, reconcile.WatchOptions[*corev1.Pod]{}),
		"no label":       reconcile.Labeled(inf, "", reconcile.WatchOptions[*corev1.Pod]{}),
		"nil mapping":    reconcile.Mapped(inf, nil, reconcile.WatchOptions[*corev1.Pod]{}),
		"nil predicate":  reconcile.Labeled(inf, "x", reconcile.WatchOptions[*corev1.Pod]{Predicates: []reconcile.Predicate[*corev1.Pod]{nil}}),
		"nil informer 2": reconcile.Mapped[*corev1.Pod](nil, func(*corev1.Pod) []cache.Key { return nil }, reconcile.WatchOptions[*corev1.Pod]{}),
	} {
		if _, err := reconcile.New(inf, r, reconcile.Options[*corev1.Pod]{Watches: []reconcile.Watch{w}}); !errors.Is(err, reconcile.ErrBadOptions) {
			t.Errorf("%s: New = %v, want ErrBadOptions", name, err)
		}
	}
	for name, opts := range map[string]reconcile.Options[*corev1.Pod]{
		"negative periodic": {Periodic: -1},
		"jitter above 1":    {Periodic: 1, PeriodicJitter: 1.5},
		"negative jitter":   {PeriodicJitter: -0.1},
	} {
		if _, err := reconcile.New(inf, r, opts); !errors.Is(err, reconcile.ErrBadOptions) {
			t.Errorf("%s: New = %v, want ErrBadOptions", name, err)
		}
	}
}
