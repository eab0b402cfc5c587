package httpinfo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/httpinfo"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// podInformer returns an informer over three pods of a fake API server; in
// a program: source.FromClient[*corev1.Pod](clientset.CoreV1().Pods("")).
func podInformer() *typed.Informer[*corev1.Pod] {
	var pods []*corev1.Pod
	for _, name := range []string{"web-0", "web-1", "db-0"} {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}})
	}
	src := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{
		Resource: schema.GroupResource{Resource: "pods"}, Scope: cache.ScopeNamespaced, Objects: pods,
	})
	inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	return inf
}

func get(h http.Handler, target string) string {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return fmt.Sprintf("%d %s", rec.Code, body)
}

// A registry holds the informers and handlers to report on; a snapshot
// reads them.
func ExampleNewRegistry() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := podInformer()
	reg, err := httpinfo.NewRegistry(httpinfo.Options{})
	if err != nil {
		panic(err)
	}
	if _, err := httpinfo.Add(reg, pods); err != nil {
		panic(err)
	}
	done := make(chan error)
	go func() { done <- pods.Run(ctx) }()
	if err := pods.WaitForSync(ctx); err != nil {
		panic(err)
	}
	for _, is := range reg.Snapshot().Informers {
		fmt.Printf("%s: synced=%v objects=%d lists+watchLists=%d error=%v\n",
			is.Name, is.Synced, is.Objects, is.Counts.Lists+is.Counts.WatchLists, is.Error)
	}
	cancel()
	<-done
	// Output:
	// pods: synced=true objects=3 lists+watchLists=1 error=<nil>
}

// Add registers an informer; the entry it returns registers the informer's
// handlers, whose depth and panics the snapshot then reports.
func ExampleAdd() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := podInformer()
	h, err := pods.AddHandler(handler.Funcs[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	reg, _ := httpinfo.NewRegistry(httpinfo.Options{})
	e, err := httpinfo.Add(reg, pods)
	if err != nil {
		panic(err)
	}
	if err := e.AddHandler("reconcile", h); err != nil {
		panic(err)
	}
	_, err = httpinfo.Add(reg, pods)
	fmt.Println("again:", err)

	done := make(chan error)
	go func() { done <- pods.Run(ctx) }()
	if err := typed.WaitForCacheSync(ctx, pods, h); err != nil {
		panic(err)
	}
	for _, hs := range reg.Snapshot().Informers[0].Handlers {
		fmt.Printf("handler %s: synced=%v pending=%d panics=%d\n", hs.Name, hs.Synced, hs.Pending, hs.Panics)
	}
	cancel()
	<-done
	// Output:
	// again: httpinfo: name already registered: informer "pods"
	// handler reconcile: synced=true pending=0 panics=0
}

// The readiness check as a probe's handler: ready once synced, not ready
// once the informer has stopped.
func ExampleNewReadiness() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := podInformer()
	reg, _ := httpinfo.NewRegistry(httpinfo.Options{})
	if _, err := httpinfo.Add(reg, pods); err != nil {
		panic(err)
	}
	ready, err := httpinfo.NewReadiness(reg, httpinfo.ReadinessOptions{})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/readyz", ready)

	done := make(chan error)
	go func() { done <- pods.Run(ctx) }()
	if err := pods.WaitForSync(ctx); err != nil {
		panic(err)
	}
	fmt.Print(get(mux, "/readyz"))
	fmt.Print(get(mux, "/readyz?verbose"))
	cancel()
	<-done
	fmt.Print(get(mux, "/readyz"))
	fmt.Println(ready.Name()+":", ready.Check(nil))
	// Output:
	// 200 ok
	// 200 [+]pods ok
	// informers check passed
	// 503 informer "pods": stopped
	// informers check failed
	// informers: not ready: informer "pods": stopped
}

// The debug page on a private mux beside the readiness check: HTML for a
// browser, JSON for tools.
func ExampleNewPage() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := podInformer()
	reg, _ := httpinfo.NewRegistry(httpinfo.Options{})
	if _, err := httpinfo.Add(reg, pods); err != nil {
		panic(err)
	}
	ready, _ := httpinfo.NewReadiness(reg, httpinfo.ReadinessOptions{})
	page, err := httpinfo.NewPage(reg, httpinfo.PageOptions{Readiness: ready})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux() // serve it on a private port: see the package documentation
	mux.Handle("/readyz", ready)
	mux.Handle("/debug/informers", page)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	done := make(chan error)
	go func() { done <- pods.Run(ctx) }()
	if err := pods.WaitForSync(ctx); err != nil {
		panic(err)
	}
	resp, err := http.Get(srv.URL + "/debug/informers?format=json")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var got struct {
		httpinfo.Snapshot
		Readiness httpinfo.ReadinessStatus `json:"readiness"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		panic(err)
	}
	fmt.Println(resp.Header.Get("Content-Type"), "ready:", got.Readiness.Ready)
	for _, is := range got.Informers {
		fmt.Printf("%s: synced=%v objects=%d resourceVersion=%s\n", is.Name, is.Synced, is.Objects, is.ResourceVersion)
	}
	cancel()
	<-done
	// Output:
	// application/json ready: true
	// pods: synced=true objects=3 resourceVersion=103
}

// Serving the check and the page on a private port of their own, apart
// from the port that serves users: here the loopback interface.
func Example_privatePort() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := podInformer()
	reg, _ := httpinfo.NewRegistry(httpinfo.Options{})
	if _, err := httpinfo.Add(reg, pods); err != nil {
		panic(err)
	}
	ready, _ := httpinfo.NewReadiness(reg, httpinfo.ReadinessOptions{})
	page, _ := httpinfo.NewPage(reg, httpinfo.PageOptions{Readiness: ready})
	mux := http.NewServeMux()
	mux.Handle("GET /readyz", ready)
	mux.Handle("GET /debug/informers", page)

	ln, err := net.Listen("tcp", "127.0.0.1:0") // in a program: a fixed port, such as 127.0.0.1:8081
	if err != nil {
		panic(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	done := make(chan error)
	go func() { done <- pods.Run(ctx) }()
	if err := pods.WaitForSync(ctx); err != nil {
		panic(err)
	}
	for _, path := range []string{"/readyz", "/debug/informers"} {
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	_ = srv.Shutdown(ctx)
	<-served
	cancel()
	<-done
	// Output:
	// /readyz 200 text/plain; charset=utf-8
	// /debug/informers 200 text/html; charset=utf-8
}

// AddFactory puts every informer of a factory on the registry (the debug
// page and readiness), those made later too, and takes each off after its
// last release.
func ExampleAddFactory() {
	cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0"}})
	f, err := factory.NewForClientsets([]any{cs}, factory.Options{})
	if err != nil {
		panic(err)
	}
	reg, _ := httpinfo.NewRegistry(httpinfo.Options{})
	stop, err := httpinfo.AddFactory(reg, f)
	if err != nil {
		panic(err)
	}
	defer stop()
	names := func() (out []string) {
		for _, s := range reg.Snapshot().Informers {
			out = append(out, fmt.Sprintf("%s (synced=%v objects=%d)", s.Name, s.Synced, s.Objects))
		}
		return out
	}

	_, releasePods, err := factory.InformerFor[*corev1.Pod](f, factory.Scope{Namespace: "shop"})
	if err != nil {
		panic(err)
	}
	defer releasePods()
	_, releaseCMs, err := factory.InformerFor[*corev1.ConfigMap](f, factory.Scope{Namespace: "shop"})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx) }()
	if err := f.WaitForSync(ctx); err != nil {
		panic(err)
	}
	fmt.Println(names())
	releaseCMs() // the last release: stopped, and off the page
	fmt.Println(names())
	cancel()
	fmt.Println("start:", <-done)
	// Output:
	// [pods (namespace shop) (synced=true objects=1) configmaps (namespace shop) (synced=true objects=0)]
	// [pods (namespace shop) (synced=true objects=1)]
	// start: <nil>
}
