package manager_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/httpinfo"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/manager"
	"github.com/typedinformer/informer/reconcile"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// order records what happened, in order.
type order struct {
	mu     sync.Mutex
	events []string
}

func (o *order) add(e string) {
	o.mu.Lock()
	o.events = append(o.events, e)
	o.mu.Unlock()
}

func (o *order) all() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.events...)
}

// stopWatcher is a runnable that records, when its context ends, whether
// the informer was still running: the manager stops runnables first.
type stopWatcher struct {
	inf *typed.Informer[*corev1.Pod]
	o   *order
}

func (s stopWatcher) Run(ctx context.Context) error {
	<-ctx.Done()
	select {
	case <-s.inf.Stopped():
		s.o.add("runnable stopped after the informer")
	default:
		s.o.add("runnable stopped before the informer")
	}
	return nil
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestManager: an informer, a controller on it and a runnable, with the
// HTTP endpoints: the controller reconciles, /readyz passes once all
// synced, the debug page's JSON has the informer and the controller, and
// on cancel the runnable stops before the informer and Run returns nil.
func TestManager(t *testing.T) {
	leakcheck.Check(t)
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: []*corev1.Pod{it.Pod("ns", "a", nil)}})
	inf, err := typed.NewInformer(fake, typed.Options[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	reconciled := make(chan cache.Key, 10)
	ctrl, err := reconcile.New(inf, reconcile.Func(func(_ context.Context, k cache.Key) error {
		reconciled <- k
		return nil
	}), reconcile.Options[*corev1.Pod]{Name: "pods-controller"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := manager.New(manager.Options{Addr: "127.0.0.1:0", Handlers: map[string]http.Handler{
		"/metrics": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "metrics here\n") }),
	}})
	if err != nil {
		t.Fatal(err)
	}
	o := &order{}
	for _, err := range []error{manager.AddInformer(m, inf), m.AddController(ctrl), m.Add("watcher", stopWatcher{inf, o})} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := m.AddController(ctrl); !errors.Is(err, manager.ErrDuplicate) {
		t.Errorf("a second controller of one name: %v, want ErrDuplicate", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	if k := <-reconciled; k != (cache.Key{Namespace: "ns", Name: "a"}) {
		t.Errorf("reconciled %v, want ns/a", k)
	}
	if err := m.Run(ctx); !errors.Is(err, typed.ErrRunning) {
		t.Errorf("a second Run while running: %v, want typed.ErrRunning", err)
	}
	if err := m.Add("late", stopWatcher{inf, o}); !errors.Is(err, manager.ErrStarted) {
		t.Errorf("Add after Run: %v, want ErrStarted", err)
	}
	base := "http://" + m.Addr().String()
	it.Eventually(t, "/readyz passes", func() bool { code, _ := get(t, base+"/readyz"); return code == http.StatusOK })
	if code, body := get(t, base+"/readyz?verbose"); code != 200 || !strings.Contains(body, "[+]controller pods-controller ok") {
		t.Errorf("/readyz?verbose = %d %q, want the controller listed ok", code, body)
	}
	if code, body := get(t, base+"/metrics"); code != 200 || body != "metrics here\n" {
		t.Errorf("/metrics = %d %q, want the handler of Options.Handlers", code, body)
	}
	code, body := get(t, base+"/debug/informers?format=json")
	var snap httpinfo.Snapshot
	if err := json.Unmarshal([]byte(body), &snap); code != 200 || err != nil {
		t.Fatalf("/debug/informers?format=json = %d, %v", code, err)
	}
	if len(snap.Informers) != 1 || len(snap.Controllers) != 1 || snap.Controllers[0].Name != "pods-controller" ||
		snap.Controllers[0].Reconciles.Success != 1 || !snap.Controllers[0].Started {
		t.Errorf("snapshot = %+v, want the informer and the started controller with one success", snap)
	}
	if code, body := get(t, base+"/debug/informers"); code != 200 || !strings.Contains(body, `data-controller="pods-controller"`) {
		t.Errorf("the HTML page has no row for the controller: %d", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	if got := o.all(); len(got) != 1 || got[0] != "runnable stopped before the informer" {
		t.Errorf("stop order: %v", got)
	}
	if err := m.Run(context.Background()); !errors.Is(err, typed.ErrStopped) {
		t.Errorf("Run after it returned: %v, want typed.ErrStopped", err)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("the HTTP server still answers after Run returned")
	}
}

// failing is a runnable that fails after a while.
type failing struct{ err error }

func (f failing) Run(context.Context) error { return f.err }

// TestManagerStopsOnFailure: a part that fails stops the others, and Run
// returns its error naming it.
func TestManagerStopsOnFailure(t *testing.T) {
	leakcheck.Check(t)
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
	inf, _ := typed.NewInformer(fake, typed.Options[*corev1.Pod]{})
	m, _ := manager.New(manager.Options{})
	boom := errors.New("boom")
	if err := manager.AddInformer(m, inf); err != nil {
		t.Fatal(err)
	}
	if err := m.Add("exploder", failing{boom}); err != nil {
		t.Fatal(err)
	}
	err := m.Run(context.Background())
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "exploder") {
		t.Errorf("Run = %v, want boom naming the part", err)
	}
	select {
	case <-inf.Stopped():
	case <-time.After(time.Minute):
		t.Error("the informer was not stopped")
	}
}

// TestManagerFactory: InformerFor registers a factory informer on the page
// once, the manager starts the factory, and releases the informer after.
func TestManagerFactory(t *testing.T) {
	leakcheck.Check(t)
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: []*corev1.Pod{it.Pod("ns", "a", nil)}})
	f, err := factory.New(nil, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := factory.Register(f, func(factory.Scope) (source.Source[*corev1.Pod], error) { return fake, nil }); err != nil {
		t.Fatal(err)
	}
	cms := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.ConfigMap]{})
	if err := factory.Register(f, func(factory.Scope) (source.Source[*corev1.ConfigMap], error) { return cms, nil }); err != nil {
		t.Fatal(err)
	}
	reg, _ := httpinfo.NewRegistry(httpinfo.Options{})
	m, err := manager.New(manager.Options{Factory: f, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	registered := func() (names []string) {
		for _, s := range reg.Snapshot().Informers {
			names = append(names, s.Name)
		}
		return names
	}
	// An informer taken from the factory itself, not through the manager,
	// is on the page too, until its last release.
	_, releaseCMs, err := factory.InformerFor[*corev1.ConfigMap](f, factory.Scope{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := manager.InformerFor[*corev1.Pod](m, factory.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := manager.InformerFor[*corev1.Pod](m, factory.Scope{})
	if err != nil || a != b {
		t.Fatalf("second InformerFor = %p, %v; want the same informer", b, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	it.Eventually(t, "ready", func() bool { return m.Readiness().Check(nil) == nil })
	if got := a.Store().Len(); got != 1 {
		t.Errorf("the factory informer holds %d pods, want 1", got)
	}
	if got, want := registered(), []string{"configmaps (namespace ns)", "pods"}; !slices.Equal(got, want) {
		t.Errorf("registered informers = %q, want %q", got, want)
	}
	releaseCMs()
	if got, want := registered(), []string{"pods"}; !slices.Equal(got, want) {
		t.Errorf("after the configmaps' last release, registered informers = %q, want %q", got, want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
	if _, err := manager.InformerFor[*corev1.Pod](nil, factory.Scope{}); !errors.Is(err, manager.ErrNil) {
		t.Errorf("InformerFor(nil) = %v", err)
	}
	plain, _ := manager.New(manager.Options{})
	if _, err := manager.InformerFor[*corev1.Pod](plain, factory.Scope{}); !errors.Is(err, manager.ErrNoFactory) {
		t.Errorf("InformerFor without a factory = %v, want ErrNoFactory", err)
	}
}

// TestNewRefuses: handlers the mux would panic on, a negative timeout.
func TestNewRefuses(t *testing.T) {
	ok := http.NotFoundHandler()
	for name, opts := range map[string]manager.Options{
		"nil handler":      {Handlers: map[string]http.Handler{"/x": nil}},
		"manager's own":    {Handlers: map[string]http.Handler{"/readyz": ok}},
		"invalid pattern":  {Handlers: map[string]http.Handler{"/{unclosed": ok}},
		"negative timeout": {ShutdownTimeout: -time.Second},
	} {
		if _, err := manager.New(opts); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
	m, _ := manager.New(manager.Options{})
	if err := m.AddController(nil); !errors.Is(err, manager.ErrNil) {
		t.Errorf("AddController(nil) = %v", err)
	}
	if err := m.Add("x", nil); !errors.Is(err, manager.ErrNil) {
		t.Errorf("Add(nil) = %v", err)
	}
}
