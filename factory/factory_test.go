package factory_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/factory"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// TestSharing: two callers of one type and scope get the same informer,
// and the source sees one list and one watch for both, whether the
// informer is asked for before Start or while the factory runs; a pod
// created later reaches the shared cache.
func TestSharing(t *testing.T) {
	for _, tc := range []struct {
		name                string
		startFirst, noWatch bool
		lists, watches      int // source calls once synced and watching
	}{
		{name: "before Start, streaming list", watches: 1},
		{name: "after Start, streaming list", startFirst: true, watches: 1},
		{name: "before Start, LIST", noWatch: true, lists: 1, watches: 1},
		{name: "after Start, LIST", startFirst: true, noWatch: true, lists: 1, watches: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakes(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: tc.noWatch,
				Objects: []*corev1.Pod{it.Pod("shop", "a", nil), it.Pod("shop", "b", nil)}})
			f := newFactory(t, fs, factory.Options{})
			if tc.startFirst {
				start(t, f)
			}
			scope := factory.Scope{Namespace: "shop"}
			one, _ := informerFor[*corev1.Pod](t, f, scope)
			two, _ := informerFor[*corev1.Pod](t, f, scope)
			if one != two {
				t.Fatalf("InformerFor twice with scope %+v: two informers %p and %p, want one", scope, one, two)
			}
			if !tc.startFirst {
				start(t, f)
			}
			waitSynced(t, f)
			fake := fs.of("shop")
			it.Eventually(t, "the watch is open", func() bool { return fake.OpenWatches() == 1 })
			if _, err := fake.Create(it.Pod("shop", "c", nil)); err != nil {
				t.Fatal(err)
			}
			it.Eventually(t, "the later pod is cached", func() bool { return one.Store().Len() == 3 })

			got := map[string]int{"lists": fake.ListCalls(), "watches": fake.WatchCalls(), "sources": fs.sourceCalls()}
			want := map[string]int{"lists": tc.lists, "watches": tc.watches, "sources": 1}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("calls for two callers of one scope (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScopes: which scopes share an informer. Selectors are compared in
// canonical form, tweaks by name; any other difference is another
// informer, with its own content.
func TestScopes(t *testing.T) {
	tweak := func(o *metav1.ListOptions) { o.Limit = 7 }
	other := func(o *metav1.ListOptions) {}
	for _, tc := range []struct {
		name string
		a, b factory.Scope
		same bool
	}{
		{"same namespace", factory.Scope{Namespace: "a"}, factory.Scope{Namespace: "a"}, true},
		{"other namespace", factory.Scope{Namespace: "a"}, factory.Scope{Namespace: "b"}, false},
		{"one namespace and all", factory.Scope{Namespace: "a"}, factory.Scope{}, false},
		{"labels in another order", factory.Scope{LabelSelector: "b=2,a=1"}, factory.Scope{LabelSelector: "a=1, b=2"}, true},
		{"other labels", factory.Scope{LabelSelector: "a=1"}, factory.Scope{LabelSelector: "a=2"}, false},
		{"fields or none", factory.Scope{FieldSelector: "metadata.name=x"}, factory.Scope{}, false},
		{"same fields", factory.Scope{FieldSelector: "metadata.name=x"}, factory.Scope{FieldSelector: "metadata.name==x"}, true},
		{"same tweak name", factory.Scope{Tweak: tweak, TweakName: "t"}, factory.Scope{Tweak: other, TweakName: "t"}, true},
		{"other tweak name", factory.Scope{Tweak: tweak, TweakName: "t"}, factory.Scope{Tweak: tweak, TweakName: "u"}, false},
		{"tweak or none", factory.Scope{Tweak: tweak, TweakName: "t"}, factory.Scope{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFactory(t, newFakes(sourcetest.FakeOptions[*corev1.Pod]{}), factory.Options{})
			a, _ := informerFor[*corev1.Pod](t, f, tc.a)
			b, _ := informerFor[*corev1.Pod](t, f, tc.b)
			if got := a == b; got != tc.same {
				t.Errorf("scopes %+v and %+v: same informer = %v, want %v (names %q, %q)", tc.a, tc.b, got, tc.same, a.Name(), b.Name())
			}
		})
	}
}

// TestScopeContent: informers of two namespaces hold each its own pods,
// and their names say which namespace they hold.
func TestScopeContent(t *testing.T) {
	fs := newFakes(sourcetest.FakeOptions[*corev1.Pod]{})
	for _, p := range []*corev1.Pod{it.Pod("a", "a-0", nil), it.Pod("a", "a-1", nil), it.Pod("b", "b-0", nil)} {
		if _, err := fs.of(p.Namespace).Create(p); err != nil {
			t.Fatal(err)
		}
	}
	f := newFactory(t, fs, factory.Options{})
	a, _ := informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: "a"})
	b, _ := informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: "b", LabelSelector: "x!=y"})
	start(t, f)
	waitSynced(t, f)
	got := map[string][]string{a.Name(): podNames(a.Store().List()), b.Name(): podNames(b.Store().List())}
	want := map[string][]string{
		"pods (namespace a)":              {"a/a-0", "a/a-1"},
		"pods (namespace b, labels x!=y)": {"b/b-0"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("informers by name (-want +got):\n%s", diff)
	}
}

// notInScheme is a Go type no scheme knows.
type notInScheme struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (n *notInScheme) DeepCopyObject() runtime.Object {
	c := *n
	n.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// offlineFactory is a factory with a config and a REST mapper that knows
// only namespaces (cluster-scoped) and pods: nothing it does needs a
// server.
func offlineFactory(t *testing.T) *factory.Factory {
	t.Helper()
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace)
	f, err := factory.New(&rest.Config{Host: "https://127.0.0.1:1"}, factory.Options{Mapper: m, HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestInformerForErrors: what InformerFor refuses, at the call, with an
// error that says why.
func TestInformerForErrors(t *testing.T) {
	errSource := errors.New("no such clientset")
	for _, tc := range []struct {
		name  string
		call  func(t *testing.T) error
		check func(error) bool
	}{
		{"bad label selector", func(t *testing.T) error {
			_, _, err := factory.InformerFor[*corev1.Pod](offlineFactory(t), factory.Scope{LabelSelector: "a in (b"})
			return err
		}, func(err error) bool { return errors.Is(err, factory.ErrBadScope) }},
		{"bad field selector", func(t *testing.T) error {
			_, _, err := factory.InformerFor[*corev1.Pod](offlineFactory(t), factory.Scope{FieldSelector: "a"})
			return err
		}, func(err error) bool { return errors.Is(err, factory.ErrBadScope) }},
		{"tweak without a name", func(t *testing.T) error {
			_, _, err := factory.InformerFor[*corev1.Pod](offlineFactory(t), factory.Scope{Tweak: func(*metav1.ListOptions) {}})
			return err
		}, func(err error) bool {
			return errors.Is(err, factory.ErrBadScope) && strings.HasSuffix(err.Error(), "so the name tells them apart")
		}},
		{"tweak name without a tweak", func(t *testing.T) error {
			_, _, err := factory.InformerFor[*corev1.Pod](offlineFactory(t), factory.Scope{TweakName: "t"})
			return err
		}, func(err error) bool { return errors.Is(err, factory.ErrBadScope) }},
		{"type not in the scheme", func(t *testing.T) error {
			_, _, err := factory.InformerFor[*notInScheme](offlineFactory(t), factory.Scope{})
			return err
		}, func(err error) bool { return errors.Is(err, source.ErrUnknownKind) }},
		{"kind the server does not serve", func(t *testing.T) error {
			_, _, err := factory.InformerFor[*corev1.ConfigMap](offlineFactory(t), factory.Scope{})
			return err
		}, meta.IsNoMatchError},
		{"namespace of a cluster-scoped resource", func(t *testing.T) error {
			_, _, err := factory.InformerFor[*corev1.Namespace](offlineFactory(t), factory.Scope{Namespace: "a"})
			return err
		}, func(err error) bool { return err != nil && strings.Contains(err.Error(), "cluster-scoped") }},
		{"no config, no registered source", func(t *testing.T) error {
			f := newFactory(t, newFakes(sourcetest.FakeOptions[*corev1.Pod]{}), factory.Options{})
			_, _, err := factory.InformerFor[*corev1.ConfigMap](f, factory.Scope{})
			return err
		}, func(err error) bool { return errors.Is(err, factory.ErrNoConfig) }},
		{"registered source fails", func(t *testing.T) error {
			f, _ := factory.New(nil, factory.Options{})
			if err := factory.Register(f, func(factory.Scope) (source.Source[*corev1.Pod], error) { return nil, errSource }); err != nil {
				t.Fatal(err)
			}
			_, _, err := factory.InformerFor[*corev1.Pod](f, factory.Scope{})
			return err
		}, func(err error) bool { return errors.Is(err, errSource) }},
		{"registered source is nil", func(t *testing.T) error {
			f, _ := factory.New(nil, factory.Options{})
			if err := factory.Register(f, func(factory.Scope) (source.Source[*corev1.Pod], error) {
				var fake *sourcetest.Fake[*corev1.Pod]
				return fake, nil
			}); err != nil {
				t.Fatal(err)
			}
			_, _, err := factory.InformerFor[*corev1.Pod](f, factory.Scope{})
			return err
		}, func(err error) bool { return errors.Is(err, source.ErrNilSource) }},
		{"Register twice", func(t *testing.T) error {
			f := newFactory(t, newFakes(sourcetest.FakeOptions[*corev1.Pod]{}), factory.Options{})
			return factory.Register(f, newFakes(sourcetest.FakeOptions[*corev1.Pod]{}).newSource)
		}, func(err error) bool { return errors.Is(err, factory.ErrRegistered) }},
		{"Register a type in use", func(t *testing.T) error {
			f := offlineFactory(t)
			informerFor[*corev1.Pod](t, f, factory.Scope{})
			return factory.Register(f, newFakes(sourcetest.FakeOptions[*corev1.Pod]{}).newSource)
		}, func(err error) bool { return errors.Is(err, factory.ErrRegistered) }},
		{"Register nil", func(t *testing.T) error {
			return factory.Register[*corev1.Pod](offlineFactory(t), nil)
		}, func(err error) bool { return err != nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(t)
			if !tc.check(err) {
				t.Fatalf("got error %v", err)
			}
			t.Logf("error: %v", err)
		})
	}
}

// TestLifecycle: a factory runs once; after Start returns it hands out no
// informer and has nothing to wait for.
func TestLifecycle(t *testing.T) {
	f := newFactory(t, newFakes(sourcetest.FakeOptions[*corev1.Pod]{}), factory.Options{})
	informerFor[*corev1.Pod](t, f, factory.Scope{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx) }()
	waitSynced(t, f) // Start is running
	second := f.Start(context.Background())
	cancel()
	first := <-done
	var got []string
	for _, err := range []error{
		first, second, f.Start(context.Background()),
		func() error { _, _, err := factory.InformerFor[*corev1.Pod](f, factory.Scope{}); return err }(),
		f.WaitForSync(context.Background()),
	} {
		got = append(got, fmt.Sprint(unwrapAll(err)))
	}
	want := []string{"<nil>", fmt.Sprint(typed.ErrRunning), fmt.Sprint(typed.ErrStopped), fmt.Sprint(typed.ErrStopped), fmt.Sprint(typed.ErrStopped)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("first Start, concurrent Start, later Start, InformerFor and WaitForSync after Start (-want +got):\n%s", diff)
	}
}

// unwrapAll returns the innermost error of a chain of single wraps.
func unwrapAll(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// notSynced returns the *typed.NotSyncedError values joined in err.
func notSynced(err error) []*typed.NotSyncedError {
	var out []*typed.NotSyncedError
	var walk func(error)
	walk = func(err error) {
		if e, ok := err.(*typed.NotSyncedError); ok {
			out = append(out, e)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

// TestWaitForSyncNamesEachInformer: WaitForSync returns at once when
// informers cannot sync without help, with an error that names each of
// them and its cause (Forbidden, NotFound) and leaves out the one that
// synced.
func TestWaitForSyncNamesEachInformer(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	fs := newFakes(sourcetest.FakeOptions[*corev1.Pod]{})
	fs.of("denied").FailWatches(1000, apierrors.NewForbidden(gr, "", errors.New("RBAC says no")))
	fs.of("denied").FailLists(1000, apierrors.NewForbidden(gr, "", errors.New("RBAC says no")))
	fs.of("gone").FailWatches(1000, apierrors.NewNotFound(gr, ""))
	fs.of("gone").FailLists(1000, apierrors.NewNotFound(gr, ""))
	f := newFactory(t, fs, factory.Options{ErrorHandler: func(error) {}})
	for _, ns := range []string{"ok", "denied", "gone"} {
		informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: ns})
	}
	start(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a deadlock guard
	defer cancel()
	err := f.WaitForSync(ctx)
	if err == nil {
		t.Fatal("WaitForSync = nil, want an error")
	}
	t.Logf("WaitForSync: %v", err)
	got := map[string]string{}
	for _, nse := range notSynced(err) {
		cause := "other: " + fmt.Sprint(nse.Cause, nse.Wait)
		switch {
		case nse.Wait != nil:
			cause = "wait ended: " + nse.Wait.Error()
		case apierrors.IsForbidden(nse.Cause):
			cause = "Forbidden"
		case apierrors.IsNotFound(nse.Cause):
			cause = "NotFound"
		}
		got[nse.Informer] = cause
	}
	want := map[string]string{"pods (namespace denied)": "Forbidden", "pods (namespace gone)": "NotFound"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("informers not synced and why (-want +got):\n%s", diff)
	}
	for name := range want {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
}

// TestStartFails: an informer that cannot go on (its first list refused as
// a bad request) ends Start with its error, and the others stop.
func TestStartFails(t *testing.T) {
	fs := newFakes(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: true})
	fs.of("bad").FailLists(1, apierrors.NewBadRequest("field label not supported"))
	f := newFactory(t, fs, factory.Options{})
	informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: "good"})
	informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: "bad"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a deadlock guard
	defer cancel()
	err := f.Start(ctx)
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "pods (namespace bad)") || ctx.Err() != nil {
		t.Fatalf("Start = %v, want the bad request of pods (namespace bad), before the guard", err)
	}
	if n := fs.of("good").OpenWatches(); n != 0 {
		t.Errorf("%d watches open after Start returned, want 0", n)
	}
	t.Logf("Start: %v", err)
}

// TestConcurrentInformerFor: callers racing for one new scope, while the
// factory runs, all get the same informer, and it makes one watch.
func TestConcurrentInformerFor(t *testing.T) {
	fs := newFakes(sourcetest.FakeOptions[*corev1.Pod]{Objects: it.Pods(3)})
	f := newFactory(t, fs, factory.Options{})
	start(t, f)
	const callers = 16
	infs := make([]*typed.Informer[*corev1.Pod], callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			inf, release, err := factory.InformerFor[*corev1.Pod](f, factory.Scope{LabelSelector: "app!=db"})
			if err != nil {
				t.Error(err)
				return
			}
			t.Cleanup(release)
			infs[i] = inf
		})
	}
	wg.Wait()
	for i, inf := range infs {
		if inf != infs[0] {
			t.Fatalf("caller %d got another informer than caller 0", i)
		}
	}
	waitSynced(t, f)
	it.Eventually(t, "the watch is open", func() bool { return fs.of("").OpenWatches() == 1 })
	if n := fs.of("").WatchCalls(); n != 1 {
		t.Errorf("%d watches for %d callers of one scope, want 1", n, callers)
	}
}

// TestErrorHandlerNamesInformer: Options.ErrorHandler gets each error
// wrapped with the name of the informer it came from (in a bubble: the
// backoff after the failed list takes no real time).
func TestErrorHandlerNamesInformer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakes(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: true})
		errBoom := apierrors.NewInternalError(errors.New("boom"))
		fs.of("flaky").FailLists(1, errBoom)
		var errs it.ErrSink
		f := newFactory(t, fs, factory.Options{ErrorHandler: errs.Handle})
		informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: "flaky"})
		start(t, f)
		waitSynced(t, f) // after one failed list and a backoff
		got := errs.All()
		if len(got) != 1 || !strings.HasPrefix(got[0].Error(), "informer pods (namespace flaky): ") || !apierrors.IsInternalError(got[0]) {
			t.Errorf("errors handled: %v, want the one 500, named after pods (namespace flaky)", got)
		}
		if len(got) == 1 && strings.Count(got[0].Error(), "informer ") != 1 {
			t.Errorf("error %q names the informer more than once", got[0])
		}
	})
}
