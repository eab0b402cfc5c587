package factory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/source/sourcetest"
)

// gate stands in front of a pod server as kube-apiserver does for a CRD
// that is installed and removed: while closed, discovery of v1 lists no
// pods and every pods request gets a 404; closing it ends the open
// watches. It counts what it is sent while closed.
type gate struct {
	srv *httptest.Server

	mu       sync.Mutex
	open     bool
	gen      context.Context // requests of the current opening end with it
	end      context.CancelFunc
	lookups  atomic.Int64 // discovery of /api/v1
	refused  atomic.Int64 // pods requests while closed
	requests atomic.Int64 // every request
}

func newGate(ps *podserver.Server) *gate {
	g := &gate{}
	g.gen, g.end = context.WithCancel(context.Background())
	up, _ := url.Parse(ps.URL)
	proxy := httputil.NewSingleHostReverseProxy(up)
	proxy.FlushInterval = -1 // watches stream
	proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if errors.Is(r.Context().Err(), context.Canceled) {
			// Cut by a close before the server answered: the request
			// gets what it would have got a moment later.
			notFound(w)
			return
		}
		w.WriteHeader(http.StatusBadGateway)
	}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.requests.Add(1)
		g.mu.Lock()
		open, gen := g.open, g.gen
		g.mu.Unlock()
		pods := strings.HasSuffix(r.URL.Path, "/pods")
		switch {
		case r.URL.Path == "/api/v1":
			g.lookups.Add(1)
			if !open {
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1",
					APIResources: []metav1.APIResource{{Name: "nodes", Kind: "Node", Verbs: metav1.Verbs{"list", "watch"}}}})
				return
			}
		case pods && !open:
			g.refused.Add(1)
			notFound(w)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(gen, cancel)
		defer stop()
		proxy.ServeHTTP(w, r.WithContext(ctx))
	}))
	return g
}

// Close cuts what is in flight and stops the server.
func (g *gate) Close() {
	g.close()
	g.srv.CloseClientConnections()
	g.srv.Close()
}

func (g *gate) setOpen() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = true
}

// close refuses pods from now on and cuts the requests in flight.
func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = false
	g.end()
	g.gen, g.end = context.WithCancel(context.Background())
}

// notFound answers as kube-apiserver does for a resource it does not
// serve.
func notFound(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound, Message: "the server could not find the requested resource"})
}

// A following informer made for a kind the server does not serve waits
// for it, reporting it once; it lists once the kind is served, parks when
// it goes away (the watch cut, then 404s) with one report and no request
// but discovery lookups, and resumes each time it comes back, its cache
// following the server's.
func TestFollowDiscovery(t *testing.T) {
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
	ps := podserver.New(t, fake)
	g := newGate(ps)
	t.Cleanup(g.Close)
	var reports atomic.Int64
	var mu sync.Mutex
	var last error
	f, err := factory.New(&rest.Config{Host: g.srv.URL}, factory.Options{
		FollowDiscovery: true, DiscoveryInterval: 20 * time.Millisecond,
		ErrorHandler: func(err error) {
			reports.Add(1)
			mu.Lock()
			last = err
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	inf, release, err := factory.InformerFor[*corev1.Pod](f, factory.Scope{})
	if err != nil {
		t.Fatalf("InformerFor a kind not served yet: %v", err)
	}
	if got := inf.Name(); got != "pods" {
		t.Errorf("name %q, want pods", got)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()

	quiet := func(what string, wantReports int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for reports.Load() < wantReports && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		refused, lookups := g.refused.Load(), g.lookups.Load()
		time.Sleep(300 * time.Millisecond) // about 15 lookup intervals
		if n := reports.Load(); n != wantReports {
			mu.Lock()
			t.Fatalf("%s: %d reports, want %d; last: %v", what, n, wantReports, last)
			mu.Unlock()
		}
		mu.Lock()
		if !errors.Is(last, factory.ErrNotServed) {
			t.Errorf("%s: report %v, want one wrapping ErrNotServed", what, last)
		}
		mu.Unlock()
		if d := g.refused.Load() - refused; d != 0 {
			t.Errorf("%s: %d pods requests while parked, want 0", what, d)
		}
		if d := g.lookups.Load() - lookups; d == 0 {
			t.Errorf("%s: no discovery lookup while parked", what)
		}
		if st := inf.Status(); !errors.Is(st.LastError, factory.ErrNotServed) {
			t.Errorf("%s: Status().LastError %v, want ErrNotServed", what, st.LastError)
		}
	}
	quiet("never served", 1)
	if inf.HasSynced() {
		t.Fatal("synced before the kind was served")
	}

	const cycles = 5
	for i := range cycles {
		name := fmt.Sprintf("p%d", i)
		if _, err := fake.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}); err != nil {
			t.Fatal(err)
		}
		g.setOpen()
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		err := inf.WaitForSync(wctx)
		for err == nil && inf.Store().Len() != i+1 && wctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		wcancel()
		if err != nil || inf.Store().Len() != i+1 {
			t.Fatalf("cycle %d: served again: WaitForSync %v, %d pods, want %d", i, err, inf.Store().Len(), i+1)
		}
		if _, err := inf.Lister().Namespace("ns").Get(name); err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
		g.close()
		quiet(fmt.Sprintf("cycle %d: removed", i), int64(i+2))
	}

	release()
	select {
	case <-inf.Stopped():
	case <-time.After(10 * time.Second):
		t.Fatal("a released parked informer did not stop")
	}
}

// A negative DiscoveryInterval is refused.
func TestFollowDiscoveryBadInterval(t *testing.T) {
	_, err := factory.New(&rest.Config{Host: "http://127.0.0.1:1"}, factory.Options{FollowDiscovery: true, DiscoveryInterval: -time.Second})
	if err == nil || !strings.Contains(err.Error(), "DiscoveryInterval") {
		t.Fatalf("New with a negative DiscoveryInterval: %v", err)
	}
}
