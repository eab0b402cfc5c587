package typed_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

func examplePods() []*corev1.Pod {
	mk := func(ns, name, app string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}}}
	}
	return []*corev1.Pod{mk("default", "web-0", "web"), mk("default", "web-1", "web"), mk("default", "db-0", "db"), mk("kube-system", "dns-0", "dns")}
}

func exampleSource() *sourcetest.Fake[*corev1.Pod] {
	return sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{
		Resource: schema.GroupResource{Resource: "pods"}, Scope: cache.ScopeNamespaced, Objects: examplePods(),
	})
}

func names(pods []*corev1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// NewInformer with a handler, a sync wait and lister queries: no type
// assertion anywhere.
func ExampleNewInformer() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := exampleSource() // in a program: source.FromClient[*corev1.Pod](clientset.CoreV1().Pods(""))

	inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{LabelIndexes: []string{"app"}})
	if err != nil {
		panic(err)
	}
	var added []*corev1.Pod // written by the handler's goroutine only
	reg, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, isInInitialList bool) { added = append(added, p) },
	})
	if err != nil {
		panic(err)
	}
	done := make(chan error)
	go func() { done <- inf.Run(ctx) }()
	// The cache has the initial list and the handler has seen it.
	if err := typed.WaitForCacheSync(ctx, inf, reg); err != nil {
		panic(err) // says why: Forbidden, NotFound...
	}
	fmt.Println("handler saw:", names(added))

	web, _ := inf.Lister().List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	fmt.Println("app=web:", names(web))
	p, _ := inf.Lister().Namespace("kube-system").Get("dns-0")
	fmt.Println("get:", p.Name, p.Labels["app"])
	_, err = inf.Lister().Namespace("default").Get("nope")
	fmt.Println("missing:", err, apierrors.IsNotFound(err))
	_, err = inf.Lister().Get("web-0")
	fmt.Println("wrong scope:", errors.Is(err, cache.ErrWrongScope))

	cancel()
	fmt.Println("Run returned:", <-done)
	// Output:
	// handler saw: default/db-0 default/web-0 default/web-1 kube-system/dns-0
	// app=web: default/web-0 default/web-1
	// get: dns-0 dns
	// missing: pods "nope" not found true
	// wrong scope: true
	// Run returned: <nil>
}

// The first classic client-go program: cache.NewInformer with a
// ListWatch and ResourceEventHandlerFuncs, WaitForCacheSync, then store
// queries. Here it is typed: the handlers get *corev1.Pod and the store
// returns *corev1.Pod, and a deletion is a handler.Deleted, never an
// interface{} tombstone.
func Example_classicInformer() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := exampleSource()

	inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	events := make(chan string, 16)
	reg, _ := inf.AddHandler(handler.Funcs[*corev1.Pod]{
		AddFunc:    func(p *corev1.Pod, _ bool) { events <- "add " + p.Name },
		UpdateFunc: func(_, p *corev1.Pod) { events <- "update " + p.Name },
		DeleteFunc: func(d handler.Deleted[*corev1.Pod]) { events <- "delete " + d.Key.String() },
	})
	go inf.Run(ctx)
	if err := typed.WaitForCacheSync(ctx, inf, reg); err != nil {
		panic(err)
	}
	for range 4 {
		<-events // the initial adds
	}

	// Store queries, typed.
	obj, exists := inf.Store().GetByKey(cache.Key{Namespace: "default", Name: "web-0"})
	fmt.Println("web-0 exists:", exists, obj.Labels["app"])
	fmt.Println("keys:", len(inf.Store().ListKeys()))

	_, _ = src.Delete(cache.Key{Namespace: "default", Name: "db-0"})
	fmt.Println(<-events)
	// Output:
	// web-0 exists: true web
	// keys: 4
	// delete default/db-0
}

// The second classic client-go program: a shared index informer and
// Lister().List(labels.Everything()), here with a typed index function.
func Example_sharedIndexInformer() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	inf, err := typed.NewInformer(exampleSource(), typed.Options[*corev1.Pod]{
		Indexers: cache.Indexers[*corev1.Pod]{
			"app": func(p *corev1.Pod) ([]string, error) { return []string{p.Labels["app"]}, nil },
		},
	})
	if err != nil {
		panic(err)
	}
	go inf.Run(ctx)
	if err := inf.WaitForSync(ctx); err != nil {
		panic(err)
	}
	all, _ := inf.Lister().List(labels.Everything())
	fmt.Println("all:", len(all))
	inDefault, _ := inf.Lister().Namespace("default").List(labels.Everything())
	fmt.Println("default:", names(inDefault))
	db, _ := inf.Store().ByIndex("app", "db")
	fmt.Println("app index db:", names(db))
	// Output:
	// all: 4
	// default: default/db-0 default/web-0 default/web-1
	// app index db: default/db-0
}

// WaitForCacheSync waits for several informers and handlers at once and
// says which did not sync, and why.
func ExampleWaitForCacheSync() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	denied := exampleSource()
	denied.FailLists(1000, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC: access denied")))
	denied.FailWatches(1000, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC: access denied")))

	ok, _ := typed.NewInformer(exampleSource(), typed.Options[*corev1.Pod]{Name: "pods-ok"})
	bad, _ := typed.NewInformer(denied, typed.Options[*corev1.Pod]{Name: "pods-denied", ErrorHandler: func(error) {}})
	go ok.Run(ctx)
	go bad.Run(ctx)
	err := typed.WaitForCacheSync(ctx, ok, bad)
	fmt.Println(err)
	fmt.Println("forbidden:", apierrors.IsForbidden(err))
	// Output:
	// informer pods-denied not synced: list: pods is forbidden: RBAC: access denied
	// forbidden: true
}
