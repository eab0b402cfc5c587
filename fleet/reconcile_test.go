package fleet_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/fleet"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/reconcile"
)

// TestController: a controller over two clusters reconciles each one's
// pods with the cluster in the key, a change in one cluster reconciles
// that cluster's key alone, a cluster whose reconciles hang slows not the
// other, and disengaging that cluster drains its controller (its hung
// reconcile's context is canceled after the drain timeout, reported for
// that cluster) and stops it.
func TestController(t *testing.T) {
	leakcheck.Check(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var errMu sync.Mutex
	errs := map[string][]error{}
	fl, err := fleet.New(fleet.Options{ErrorHandler: func(cluster string, err error) {
		errMu.Lock()
		errs[cluster] = append(errs[cluster], err)
		errMu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	east, eastCS := fakeCluster(t, pod("shop", "web-0", "web"), pod("shop", "db-0", "db"))
	stuck, _ := fakeCluster(t, pod("lab", "x-0", "x"))
	for name, f := range map[string]*factory.Factory{"east": east, "stuck": stuck} {
		if err := fl.EngageFactory(name, f); err != nil {
			t.Fatal(err)
		}
	}
	pods, err := fleet.InformerFor[*corev1.Pod](fl, factory.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	var ev events
	hung := make(chan struct{}, 1)
	ctl, err := fleet.NewController(fl, pods, fleet.ReconcileFunc(func(ctx context.Context, k fleet.Key) error {
		if k.Cluster == "stuck" {
			hung <- struct{}{}
			<-ctx.Done() // hangs until the drain gives up on it
			return ctx.Err()
		}
		p, err := pods.Get(k)
		if err != nil {
			return err
		}
		ev.add("reconcile " + k.String() + " " + p.Labels["app"])
		return nil
	}), fleet.ControllerOptions[*corev1.Pod]{Controller: reconcile.Options[*corev1.Pod]{DrainTimeout: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fl.Run(ctx) }()

	eventually(t, "east's pods are reconciled, with their cluster", func() bool {
		return ev.has("reconcile east/shop/web-0 web") && ev.has("reconcile east/shop/db-0 db")
	})
	select {
	case <-hung:
	case <-ctx.Done():
		t.Fatal("stuck's reconcile was never called")
	}
	if _, ok := ctl.Cluster("east"); !ok {
		t.Error("Cluster(east): no controller")
	}

	// A live change in east, while stuck's only worker hangs.
	p := pod("shop", "web-0", "frontend")
	if _, err := eastCS.CoreV1().Pods("shop").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "east's change is reconciled", func() bool { return ev.has("reconcile east/shop/web-0 frontend") })

	// Disengaging stuck drains its controller: the hung reconcile's
	// context is canceled after the drain timeout.
	if err := fl.Disengage("stuck"); err != nil {
		t.Fatal(err)
	}
	if _, ok := ctl.Cluster("stuck"); ok {
		t.Error("the disengaged cluster still has a controller")
	}
	errMu.Lock()
	var drained bool
	for _, err := range errs["stuck"] {
		drained = drained || errors.Is(err, reconcile.ErrDrainTimeout)
	}
	eastErrs := errs["east"]
	errMu.Unlock()
	if !drained {
		t.Errorf("stuck's errors %v: want its drain timeout reported for it", errs["stuck"])
	}
	if len(eastErrs) > 0 {
		t.Errorf("east's errors: %v, want none", eastErrs)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}

// TestNewControllerRefuses: nil arguments, an informer of another fleet,
// options that belong to one cluster, options reconcile.New refuses.
func TestNewControllerRefuses(t *testing.T) {
	fl, err := fleet.New(fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := fleet.InformerFor[*corev1.Pod](fl, factory.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := fleet.New(fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	otherPods, err := fleet.InformerFor[*corev1.Pod](other, factory.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	r := fleet.ReconcileFunc(func(context.Context, fleet.Key) error { return nil })
	keys := make(chan cache.Key)
	for _, tc := range []struct {
		name string
		fl   *fleet.Fleet
		inf  *fleet.Informer[*corev1.Pod]
		r    fleet.Reconciler
		opts fleet.ControllerOptions[*corev1.Pod]
		want error
	}{
		{name: "nil fleet", inf: pods, r: r, want: fleet.ErrNil},
		{name: "nil informer", fl: fl, r: r, want: fleet.ErrNil},
		{name: "nil reconciler", fl: fl, inf: pods, want: fleet.ErrNil},
		{name: "another fleet's informer", fl: fl, inf: otherPods, r: r},
		{name: "a trigger for every cluster", fl: fl, inf: pods, r: r, want: reconcile.ErrBadOptions,
			opts: fleet.ControllerOptions[*corev1.Pod]{Controller: reconcile.Options[*corev1.Pod]{Trigger: keys}}},
		{name: "negative workers", fl: fl, inf: pods, r: r, want: reconcile.ErrBadOptions,
			opts: fleet.ControllerOptions[*corev1.Pod]{Controller: reconcile.Options[*corev1.Pod]{Workers: -1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fleet.NewController(tc.fl, tc.inf, tc.r, tc.opts)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Errorf("NewController = %v, want an error wrapping %v", err, tc.want)
			}
		})
	}
}

// TestControllerForCluster: options made per cluster, with a Watch of
// another fleet informer's informer in that cluster. The first call fails
// (as one would while the other informer is not made yet): the failure is
// reported for the cluster and the call retried, and then a change of a
// watched ConfigMap reconciles the key it names, in its cluster (a pod
// that does not exist, so that nothing else reconciles it).
func TestControllerForCluster(t *testing.T) {
	leakcheck.Check(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var errMu sync.Mutex
	var errs []string
	fl, err := fleet.New(fleet.Options{ErrorHandler: func(cluster string, err error) {
		errMu.Lock()
		errs = append(errs, cluster+": "+err.Error())
		errMu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	east, eastCS := fakeCluster(t, pod("shop", "web-0", "web"))
	if err := fl.EngageFactory("east", east); err != nil {
		t.Fatal(err)
	}
	pods, err := fleet.InformerFor[*corev1.Pod](fl, factory.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	cms, err := fleet.InformerFor[*corev1.ConfigMap](fl, factory.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	var ev events
	calls := 0
	_, err = fleet.NewController(fl, pods, fleet.ReconcileFunc(func(_ context.Context, k fleet.Key) error {
		ev.add("reconcile " + k.String())
		return nil
	}), fleet.ControllerOptions[*corev1.Pod]{ForCluster: func(cluster string) (reconcile.Options[*corev1.Pod], error) {
		calls++ // one cluster: the calls come from its goroutine, one at a time
		in, ok := cms.Cluster(cluster)
		if calls == 1 || !ok {
			return reconcile.Options[*corev1.Pod]{}, errors.New("configmaps not ready")
		}
		return reconcile.Options[*corev1.Pod]{Watches: []reconcile.Watch{
			reconcile.Mapped(in, func(cm *corev1.ConfigMap) []cache.Key {
				return []cache.Key{{Namespace: cm.Namespace, Name: cm.Data["pod"]}}
			}, reconcile.WatchOptions[*corev1.ConfigMap]{}),
		}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fl.Run(ctx) }()
	eventually(t, "web-0 is reconciled", func() bool { return ev.has("reconcile east/shop/web-0") })
	errMu.Lock()
	reported := slices.ContainsFunc(errs, func(s string) bool {
		return strings.HasPrefix(s, "east: ") && strings.Contains(s, "configmaps not ready")
	})
	errMu.Unlock()
	if !reported {
		t.Errorf("errors %q: want the failed ForCluster reported for east", errs)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "settings"}, Data: map[string]string{"pod": "ghost"}}
	if _, err := eastCS.CoreV1().ConfigMaps("shop").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ConfigMap's change reconciles the key it names", func() bool { return ev.has("reconcile east/shop/ghost") })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}
