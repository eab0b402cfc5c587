package fleet_test

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/fleet"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/internal/leakcheck"
)

func pod(ns, name, app string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}}}
}

// fakeCluster is a factory over a fake clientset holding objs.
func fakeCluster(t *testing.T, objs ...*corev1.Pod) (*factory.Factory, *fake.Clientset) {
	t.Helper()
	var ros []kruntime.Object
	for _, o := range objs {
		ros = append(ros, o)
	}
	cs := fake.NewClientset(ros...)
	f, err := factory.NewForClientsets([]any{cs}, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return f, cs
}

// events records what a fleet handler was told.
type events struct {
	mu  sync.Mutex
	got []string
}

func (e *events) add(s string) {
	e.mu.Lock()
	e.got = append(e.got, s)
	e.mu.Unlock()
}

func (e *events) has(s string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Contains(e.got, s)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// items returns the sorted fleet keys of list, or the error.
func items(list []fleet.Item[*corev1.Pod], err error) []string {
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	var out []string
	for _, it := range list {
		out = append(out, fleet.Key{Cluster: it.Cluster, Key: cache.KeyOf(it.Object)}.String())
	}
	slices.Sort(out)
	return out
}

// TestFleet: two clusters, a fleet informer over both, a handler told the
// cluster; a third cluster engaged while it runs; one disengaged, whose
// objects leave the lister and whose goroutines end.
func TestFleet(t *testing.T) {
	leakcheck.Check(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	fl, err := fleet.New(fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	east, _ := fakeCluster(t, pod("shop", "web-0", "web"), pod("shop", "db-0", "db"))
	west, westCS := fakeCluster(t, pod("shop", "web-0", "web"))
	for name, f := range map[string]*factory.Factory{"east": east, "west": west} {
		if err := fl.EngageFactory(name, f); err != nil {
			t.Fatal(err)
		}
	}
	pods, err := fleet.InformerFor[*corev1.Pod](fl, factory.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	var ev events
	if err := pods.AddHandler(fleet.HandlerFuncs[*corev1.Pod]{
		AddFunc: func(cluster string, p *corev1.Pod, _ bool) { ev.add("add " + cluster + "/" + p.Name) },
		DeleteFunc: func(cluster string, d handler.Deleted[*corev1.Pod]) {
			ev.add("delete " + cluster + "/" + d.Object.Name)
		},
	}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fl.Run(ctx) }()
	if err := pods.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := items(pods.List(labels.SelectorFromSet(labels.Set{"app": "web"}))), []string{"east/shop/web-0", "west/shop/web-0"}; !slices.Equal(got, want) {
		t.Errorf("List(app=web) = %q, want %q", got, want)
	}
	if p, err := pods.Get(fleet.Key{Cluster: "east", Key: cache.Key{Namespace: "shop", Name: "db-0"}}); err != nil || p.Name != "db-0" {
		t.Errorf("Get(east/shop/db-0) = %v, %v", p, err)
	}
	if _, err := pods.Get(fleet.Key{Cluster: "west", Key: cache.Key{Namespace: "shop", Name: "db-0"}}); !apierrors.IsNotFound(err) {
		t.Errorf("Get(west/shop/db-0) = %v, want NotFound", err)
	}
	eventually(t, "the handler has each cluster's web-0", func() bool { return ev.has("add east/web-0") && ev.has("add west/web-0") })

	// A live change in one cluster reaches the handler with that cluster.
	if err := westCS.CoreV1().Pods("shop").Delete(ctx, "web-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the handler is told west's web-0 is deleted", func() bool { return ev.has("delete west/web-0") })
	if ev.has("delete east/web-0") {
		t.Error("a deletion in west was reported for east")
	}

	// A cluster engaged while the fleet runs gets the informer, synced.
	north, _ := fakeCluster(t, pod("lab", "x-0", "x"))
	if err := fl.EngageFactory("north", north); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.WaitForCluster(ctx, "north"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the handler has north's x-0", func() bool { return ev.has("add north/x-0") })

	// Disengaging frees the cluster: its objects leave the lister, its
	// goroutines end.
	before := runtime.NumGoroutine()
	if err := fl.Disengage("east"); err != nil {
		t.Fatal(err)
	}
	if got, want := items(pods.List(nil)), []string{"north/lab/x-0"}; !slices.Equal(got, want) {
		t.Errorf("after disengaging east, List = %q, want %q", got, want)
	}
	if _, ok := pods.Cluster("east"); ok {
		t.Error("the disengaged cluster still has an informer")
	}
	if got, want := fl.Clusters(), []string{"north", "west"}; !slices.Equal(got, want) {
		t.Errorf("Clusters = %q, want %q", got, want)
	}
	eventually(t, "east's goroutines end", func() bool { return runtime.NumGoroutine() < before })
	if err := fl.Disengage("east"); !errors.Is(err, fleet.ErrUnknownCluster) {
		t.Errorf("second Disengage = %v, want ErrUnknownCluster", err)
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
	if err := fl.EngageFactory("late", north); !errors.Is(err, fleet.ErrStopped) {
		t.Errorf("Engage after Run = %v, want ErrStopped", err)
	}
}

// TestEngageRefuses: bad names, a second engagement of one name, nil
// arguments, options that would be shared by every cluster.
func TestEngageRefuses(t *testing.T) {
	fl, err := fleet.New(fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := fakeCluster(t)
	if err := fl.EngageFactory("", f); !errors.Is(err, fleet.ErrBadName) {
		t.Errorf("empty name: %v", err)
	}
	if err := fl.EngageFactory("a", f); err != nil {
		t.Fatal(err)
	}
	g, _ := fakeCluster(t)
	if err := fl.EngageFactory("a", g); !errors.Is(err, fleet.ErrEngaged) {
		t.Errorf("second a: %v", err)
	}
	if err := fl.Engage("b", nil); !errors.Is(err, fleet.ErrNil) {
		t.Errorf("nil config: %v", err)
	}
	if err := fl.EngageFactory("b", nil); !errors.Is(err, fleet.ErrNil) {
		t.Errorf("nil factory: %v", err)
	}
	if _, err := fleet.New(fleet.Options{Factory: factory.Options{HTTPClient: &http.Client{}}}); err == nil {
		t.Error("a shared HTTPClient was accepted")
	}
}

// TestWaitForClusterEngagedLater: WaitForCluster waits for a cluster a
// provider has not engaged yet, and returns its informer once it is
// engaged and synced; for a name never engaged it returns
// ErrUnknownCluster when ctx ends.
func TestWaitForClusterEngagedLater(t *testing.T) {
	leakcheck.Check(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	fl, err := fleet.New(fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := fleet.InformerFor[*corev1.Pod](fl, factory.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fl.Run(ctx) }()
	got := make(chan error, 1)
	go func() {
		_, err := pods.WaitForCluster(ctx, "late")
		got <- err
	}()
	time.Sleep(50 * time.Millisecond) // let it wait before the cluster is engaged
	f, _ := fakeCluster(t, pod("shop", "web-0", "web"))
	if err := fl.EngageFactory("late", f); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Errorf("WaitForCluster(late) = %v", err)
	}
	short, stop := context.WithTimeout(ctx, 100*time.Millisecond)
	defer stop()
	if _, err := pods.WaitForCluster(short, "never"); !errors.Is(err, fleet.ErrUnknownCluster) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitForCluster(never) = %v, want ErrUnknownCluster and the deadline", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
}
