package sourcetest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

func TestFakeWrites(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	f := sourcetest.NewFake(podOptions{Resource: gr})
	type step struct {
		name    string
		do      func() (*corev1.Pod, error)
		wantID  string // "ns/name@rv uid"
		wantErr func(error) bool
	}
	id := func(p *corev1.Pod) string {
		return cache.KeyOf(p).String() + "@" + p.ResourceVersion + " " + string(p.UID)
	}
	steps := []step{
		{name: "create", do: func() (*corev1.Pod, error) { return f.Create(pod("ns", "a", nil)) }, wantID: "ns/a@101 uid-101"},
		{name: "create keeps uid", do: func() (*corev1.Pod, error) {
			p := pod("ns", "b", nil)
			p.UID = "mine"
			return f.Create(p)
		}, wantID: "ns/b@102 mine"},
		{name: "create existing", do: func() (*corev1.Pod, error) { return f.Create(pod("ns", "a", nil)) }, wantErr: apierrors.IsAlreadyExists},
		{name: "update without rv", do: func() (*corev1.Pod, error) { return f.Update(pod("ns", "a", map[string]string{"x": "1"})) }, wantID: "ns/a@103 uid-101"},
		{name: "update with current rv", do: func() (*corev1.Pod, error) {
			p := pod("ns", "a", nil)
			p.ResourceVersion, p.UID = "103", "ignored"
			return f.Update(p)
		}, wantID: "ns/a@104 uid-101"},
		{name: "update with stale rv", do: func() (*corev1.Pod, error) {
			p := pod("ns", "a", nil)
			p.ResourceVersion = "101"
			return f.Update(p)
		}, wantErr: apierrors.IsConflict},
		{name: "update missing", do: func() (*corev1.Pod, error) { return f.Update(pod("ns", "zz", nil)) }, wantErr: apierrors.IsNotFound},
		{name: "delete returns the object at the new rv", do: func() (*corev1.Pod, error) { return f.Delete(key("ns", "b")) }, wantID: "ns/b@105 mine"},
		{name: "delete missing", do: func() (*corev1.Pod, error) { return f.Delete(key("ns", "b")) }, wantErr: apierrors.IsNotFound},
		{name: "create nil", do: func() (*corev1.Pod, error) { return f.Create(nil) }, wantErr: func(err error) bool { return errors.Is(err, source.ErrNilObject) }},
		{name: "create nameless", do: func() (*corev1.Pod, error) { return f.Create(pod("ns", "", nil)) }, wantErr: func(err error) bool { return errors.Is(err, cache.ErrNoName) }},
		{name: "create after delete", do: func() (*corev1.Pod, error) { return f.Create(pod("ns", "b", nil)) }, wantID: "ns/b@106 uid-106"},
	}
	for _, s := range steps {
		got, err := s.do()
		if s.wantErr != nil {
			if err == nil || !s.wantErr(err) {
				t.Fatalf("%s: err = %v, want a matching error", s.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if diff := cmp.Diff(s.wantID, id(got)); diff != "" {
			t.Fatalf("%s: (-want +got)\n%s", s.name, diff)
		}
	}
	if got := f.ResourceVersion(); got != "106" {
		t.Errorf("ResourceVersion() = %q, want 106", got)
	}
	if diff := cmp.Diff([]string{"ns/a@104", "ns/b@106"}, ids(f.Items())); diff != "" {
		t.Errorf("Items (-want +got)\n%s", diff)
	}
	_, err := f.Get(key("ns", "nope"))
	if !apierrors.IsNotFound(err) {
		t.Errorf("Get missing: %v, want NotFound", err)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details.Kind != "pods" {
		t.Errorf("Get missing: %v, want an error naming the resource", err)
	}
}

func TestFakeOptionsAndSeeds(t *testing.T) {
	f := sourcetest.NewFake(podOptions{
		StartResourceVersion: 7,
		Objects:              []*corev1.Pod{pod("ns", "a", nil), nil, pod("ns", "", nil), pod("ns", "b", nil), pod("ns", "a", map[string]string{"v": "2"})},
	})
	if diff := cmp.Diff([]string{"ns/a@10", "ns/b@9"}, ids(f.Items())); diff != "" {
		t.Errorf("Items (-want +got)\n%s", diff)
	}
	a, err := f.Get(key("ns", "a"))
	if err != nil || a.Labels["v"] != "2" || a.UID != "uid-8" {
		t.Errorf("Get(ns/a) = %v, %v; want the replacing seed with the first UID", a, err)
	}
	if f.Len() != 2 || f.ResourceVersion() != "10" {
		t.Errorf("Len, ResourceVersion = %d, %s; want 2, 10", f.Len(), f.ResourceVersion())
	}
	_, err = sourcetest.NewFake(podOptions{}).Delete(key("", "x"))
	if !apierrors.IsNotFound(err) || err.Error() != `pods "x" not found` {
		t.Errorf("default resource: %v", err)
	}
	if got := sourcetest.NewFake(podOptions{}).ResourceVersion(); got != "100" {
		t.Errorf("default start resourceVersion %q, want 100", got)
	}
}

func TestFakeNeverAliases(t *testing.T) {
	f := sourcetest.NewFake(podOptions{})
	in := pod("ns", "a", map[string]string{"k": "v"})
	out, err := f.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	if in.ResourceVersion != "" || in.UID != "" {
		t.Errorf("Create modified its argument: %+v", in.ObjectMeta)
	}
	in.Labels["k"] = "changed by caller"
	out.Labels["k"] = "changed by caller"
	got, _ := f.Get(key("ns", "a"))
	got.Labels["k"] = "changed by caller"
	f.Items()[0].Labels["k"] = "changed by caller"
	l, err := f.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Items[0].Labels["k"] = "changed by caller"
	if got, _ := f.Get(key("ns", "a")); got.Labels["k"] != "v" {
		t.Errorf("stored object was modified through a handed-out copy: %v", got.Labels)
	}
	del, _ := f.Delete(key("ns", "a"))
	del.Labels["k"] = "changed by caller"
	l, _ = f.List(context.Background(), metav1.ListOptions{ResourceVersion: "101", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if len(l.Items) != 1 || l.Items[0].Labels["k"] != "v" {
		t.Errorf("history was modified through a handed-out copy: %v", ids(l.Items))
	}
}

func TestFakeList(t *testing.T) {
	f := sourcetest.NewFake(podOptions{Window: 4, Objects: []*corev1.Pod{
		pod("b", "x", map[string]string{"app": "web"}), // 101
		pod("a", "y", map[string]string{"app": "db"}),  // 102
		pod("a", "x", map[string]string{"app": "web"}), // 103
	}})
	mustDo(t)(f.Update(pod("a", "y", map[string]string{"app": "web"}))) // 104
	mustDo(t)(f.Delete(key("b", "x")))                                  // 105: history 102..105
	tests := []struct {
		name    string
		opts    metav1.ListOptions
		want    []string
		wantRV  string
		wantErr func(error) bool
	}{
		{name: "all", want: []string{"a/x@103", "a/y@104"}, wantRV: "105"},
		{name: "rv 0", opts: metav1.ListOptions{ResourceVersion: "0"}, want: []string{"a/x@103", "a/y@104"}, wantRV: "105"},
		{name: "not older than", opts: metav1.ListOptions{ResourceVersion: "103", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}, want: []string{"a/x@103", "a/y@104"}, wantRV: "105"},
		{name: "legacy rv is not older than", opts: metav1.ListOptions{ResourceVersion: "50"}, want: []string{"a/x@103", "a/y@104"}, wantRV: "105"},
		{name: "exact current", opts: metav1.ListOptions{ResourceVersion: "105", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, want: []string{"a/x@103", "a/y@104"}, wantRV: "105"},
		{name: "exact older", opts: metav1.ListOptions{ResourceVersion: "103", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, want: []string{"a/x@103", "a/y@102", "b/x@101"}, wantRV: "103"},
		{name: "exact oldest retained", opts: metav1.ListOptions{ResourceVersion: "101", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, want: []string{"b/x@101"}, wantRV: "101"},
		{name: "exact compacted", opts: metav1.ListOptions{ResourceVersion: "100", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, wantErr: isExpired},
		{name: "exact with selector", opts: metav1.ListOptions{ResourceVersion: "103", ResourceVersionMatch: metav1.ResourceVersionMatchExact, LabelSelector: "app=web"}, want: []string{"a/x@103", "b/x@101"}, wantRV: "103"},
		// A limit with a version and no match reads at that version, as
		// the API server's legacy exact read does; "0" still reads the
		// current state.
		{name: "legacy exact with limit", opts: metav1.ListOptions{ResourceVersion: "103", Limit: 10}, want: []string{"a/x@103", "a/y@102", "b/x@101"}, wantRV: "103"},
		{name: "legacy exact with limit, compacted", opts: metav1.ListOptions{ResourceVersion: "100", Limit: 10}, wantErr: isExpired},
		{name: "rv 0 with limit", opts: metav1.ListOptions{ResourceVersion: "0", Limit: 10}, want: []string{"a/x@103", "a/y@104"}, wantRV: "105"},
		{name: "not older than with limit", opts: metav1.ListOptions{ResourceVersion: "103", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 10}, want: []string{"a/x@103", "a/y@104"}, wantRV: "105"},
		{name: "too large", opts: metav1.ListOptions{ResourceVersion: "106"}, wantErr: isTooLarge},
		{name: "exact too large", opts: metav1.ListOptions{ResourceVersion: "999", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, wantErr: isTooLarge},
		{name: "bad rv", opts: metav1.ListOptions{ResourceVersion: "abc"}, wantErr: apierrors.IsBadRequest},
		{name: "exact 0", opts: metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, wantErr: apierrors.IsInvalid},
		{name: "match without rv", opts: metav1.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}, wantErr: apierrors.IsInvalid},
		{name: "send initial events", opts: metav1.ListOptions{SendInitialEvents: new(true)}, wantErr: apierrors.IsInvalid},
		{name: "label selector", opts: metav1.ListOptions{LabelSelector: "app=web"}, want: []string{"a/x@103", "a/y@104"}, wantRV: "105"},
		{name: "label selector none", opts: metav1.ListOptions{LabelSelector: "app in (db)"}, want: []string{}, wantRV: "105"},
		{name: "bad label selector", opts: metav1.ListOptions{LabelSelector: "app in ("}, wantErr: apierrors.IsBadRequest},
		{name: "field name", opts: metav1.ListOptions{FieldSelector: "metadata.name=y"}, want: []string{"a/y@104"}, wantRV: "105"},
		{name: "field namespace", opts: metav1.ListOptions{FieldSelector: "metadata.namespace!=a"}, want: []string{}, wantRV: "105"},
		{name: "unsupported field", opts: metav1.ListOptions{FieldSelector: "spec.nodeName=n1"}, wantErr: apierrors.IsBadRequest},
		{name: "bad field selector", opts: metav1.ListOptions{FieldSelector: "metadata.name"}, wantErr: apierrors.IsBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.List(context.Background(), tt.opts)
			if tt.wantErr != nil {
				var serr *source.Error
				if !tt.wantErr(err) || !errors.As(err, &serr) || serr.Phase != source.PhaseList {
					t.Fatalf("err = %v, want a matching *source.Error in phase list", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, ids(got.Items)); diff != "" {
				t.Errorf("items (-want +got)\n%s", diff)
			}
			if got.ResourceVersion != tt.wantRV || got.Continue != "" {
				t.Errorf("rv, continue = %q, %q; want %q, none", got.ResourceVersion, got.Continue, tt.wantRV)
			}
		})
	}
}

func TestFakeListPages(t *testing.T) {
	ctx := context.Background()
	f := sourcetest.NewFake(podOptions{})
	for _, n := range []string{"e", "a", "d", "b", "c"} {
		mustDo(t)(f.Create(pod("ns", n, map[string]string{"odd": map[bool]string{true: "y", false: "n"}[n == "a" || n == "c" || n == "e"]})))
	}
	// 101..105; page through all five, two at a time, while writing.
	var pages [][]string
	var rvs []string
	opts := metav1.ListOptions{Limit: 2}
	for i := 0; ; i++ {
		l, err := f.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages, rvs = append(pages, ids(l.Items)), append(rvs, l.ResourceVersion)
		if l.Continue == "" {
			break
		}
		opts.Continue = l.Continue
		mustDo(t)(f.Delete(key("ns", "e")))
		mustDo(t)(f.Create(pod("ns", "e", nil)))
		mustDo(t)(f.Create(pod("ns", "f"+string(rune('0'+i)), nil)))
	}
	want := [][]string{{"ns/a@102", "ns/b@104"}, {"ns/c@105", "ns/d@103"}, {"ns/e@101"}}
	if diff := cmp.Diff(want, pages); diff != "" {
		t.Errorf("pages (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]string{"105", "105", "105"}, rvs); diff != "" {
		t.Errorf("page resourceVersions (-want +got)\n%s", diff)
	}

	// Selector and limit: a page holds limit matches; no token after the last.
	l, err := f.List(ctx, metav1.ListOptions{Limit: 1, LabelSelector: "odd=n", ResourceVersion: "105", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil || l.Continue == "" {
		t.Fatalf("first page: %v, %+v", err, l)
	}
	l, err = f.List(ctx, metav1.ListOptions{Limit: 1, LabelSelector: "odd=n", Continue: l.Continue})
	if err != nil || l.Continue != "" {
		t.Fatalf("second page: %v, %+v", err, l)
	}
	if diff := cmp.Diff([]string{"ns/d@103"}, ids(l.Items)); diff != "" {
		t.Errorf("second page (-want +got)\n%s", diff)
	}

	// A token outlives nothing: once compacted past its snapshot, 410.
	l, err = f.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	token := l.Continue
	if _, err := f.List(ctx, metav1.ListOptions{Limit: 1, Continue: token}); err != nil {
		t.Fatalf("continue before any change: %v", err)
	}
	f.Compact()
	if _, err := f.List(ctx, metav1.ListOptions{Limit: 1, Continue: token}); err != nil {
		t.Fatalf("continue after compacting at the token's version: %v", err)
	}
	mustDo(t)(f.Create(pod("ns", "z", nil)))
	f.Compact()
	for name, tc := range map[string]struct {
		opts    metav1.ListOptions
		wantErr func(error) bool
	}{
		"expired":             {metav1.ListOptions{Continue: token}, isExpired},
		"garbage":             {metav1.ListOptions{Continue: "not-a-token"}, apierrors.IsBadRequest},
		"with rv":             {metav1.ListOptions{Continue: token, ResourceVersion: "5"}, apierrors.IsBadRequest},
		"with match":          {metav1.ListOptions{Continue: token, ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, apierrors.IsInvalid},
		"exact after compact": {metav1.ListOptions{ResourceVersion: "105", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, isExpired},
	} {
		if _, err := f.List(ctx, tc.opts); !tc.wantErr(err) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestFakeFailLists(t *testing.T) {
	ctx := context.Background()
	f := sourcetest.NewFake(podOptions{Objects: []*corev1.Pod{pod("ns", "a", nil)}})
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
	f.FailLists(2, forbidden)
	for i := range 2 {
		_, err := f.List(ctx, metav1.ListOptions{})
		var serr *source.Error
		if !apierrors.IsForbidden(err) || !errors.As(err, &serr) || serr.Phase != source.PhaseList {
			t.Fatalf("list %d: err = %v, want forbidden in phase list", i, err)
		}
	}
	if l, err := f.List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 1 {
		t.Fatalf("third list: %v, %v", l, err)
	}
	f.FailLists(1, nil)
	if _, err := f.List(ctx, metav1.ListOptions{}); !apierrors.IsInternalError(err) {
		t.Errorf("nil err: got %v, want an internal error", err)
	}
	f.FailLists(5, forbidden)
	f.FailLists(0, nil)
	if _, err := f.List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("after cancelling failures: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.List(cancelled, metav1.ListOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: %v", err)
	}
	if got := f.ListCalls(); got != 6 {
		t.Errorf("ListCalls() = %d, want 6", got)
	}
}

// TestFakeDescribes checks what the fake tells informers about its
// resource: the options it was made with, or the documented defaults.
func TestFakeDescribes(t *testing.T) {
	deployments := schema.GroupResource{Group: "apps", Resource: "deployments"}
	tests := []struct {
		name string
		opts podOptions
		want source.Resource
	}{
		{name: "defaults: guessed from T", want: source.Resource{GroupResource: schema.GroupResource{Resource: "pods"}}},
		{name: "resource and scope", opts: podOptions{Resource: deployments, Scope: cache.ScopeNamespaced},
			want: source.Resource{GroupResource: deployments, Scope: cache.ScopeNamespaced}},
		{name: "cluster scope", opts: podOptions{Resource: schema.GroupResource{Resource: "nodes"}, Scope: cache.ScopeCluster},
			want: source.Resource{GroupResource: schema.GroupResource{Resource: "nodes"}, Scope: cache.ScopeCluster}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := sourcetest.NewFake(tt.opts)
			if diff := cmp.Diff(tt.want, f.Info().Resource); diff != "" {
				t.Errorf("Info().Resource (-want +got)\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, source.ResourceOf[*corev1.Pod](f)); diff != "" {
				t.Errorf("source.ResourceOf (-want +got)\n%s", diff)
			}
		})
	}
}

func TestFakeUpdateAndDeleteRefuseBadInput(t *testing.T) {
	f := sourcetest.NewFake(podOptions{Objects: []*corev1.Pod{pod("ns", "a", nil)}})
	if _, err := f.Update(nil); !errors.Is(err, source.ErrNilObject) {
		t.Errorf("Update(nil) = %v, want source.ErrNilObject", err)
	}
	if _, err := f.Update(pod("ns", "", nil)); !errors.Is(err, cache.ErrNoName) {
		t.Errorf("Update(nameless) = %v, want cache.ErrNoName", err)
	}
	if _, err := f.Get(key("other", "a")); !apierrors.IsNotFound(err) {
		t.Errorf("Get in another namespace = %v, want NotFound", err)
	}
	if got := f.ResourceVersion(); got != "101" {
		t.Errorf("refused writes changed the resourceVersion to %s, want 101", got)
	}
}
