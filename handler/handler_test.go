package handler_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

func pod(name, app string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": app}}}
}

// calls records what a handler got, as "add a", "update a", "delete a (fsu)".
type calls []string

func (c *calls) handler() handler.Funcs[*corev1.Pod] {
	return handler.Funcs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, initial bool) {
			*c = append(*c, "add "+p.Name+map[bool]string{true: " initial"}[initial])
		},
		UpdateFunc: func(_, p *corev1.Pod) { *c = append(*c, "update "+p.Name) },
		DeleteFunc: func(d handler.Deleted[*corev1.Pod]) {
			s := "delete " + d.Key.Name
			if d.FinalStateUnknown {
				s += " fsu"
			}
			if d.Object == nil {
				s += " nil"
			}
			*c = append(*c, s)
		},
	}
}

// Filter's transition table, as client-go's FilteringResourceEventHandler:
// accepted -> accepted is an update, rejected -> accepted an add, accepted
// -> rejected a delete, rejected -> rejected nothing; a deletion is passed
// on if its object is accepted, or unknown (the handler may have had it).
func TestFilterTransitions(t *testing.T) {
	web := func(p *corev1.Pod) bool { return p.Labels["app"] == "web" }
	in, out := pod("a", "web"), pod("a", "db")
	cases := []struct {
		name string
		call func(h handler.Handler[*corev1.Pod])
		want calls
	}{
		{"add accepted", func(h handler.Handler[*corev1.Pod]) { h.OnAdd(in, true) }, calls{"add a initial"}},
		{"add rejected", func(h handler.Handler[*corev1.Pod]) { h.OnAdd(out, false) }, nil},
		{"update in -> in", func(h handler.Handler[*corev1.Pod]) { h.OnUpdate(in, in) }, calls{"update a"}},
		{"update out -> in", func(h handler.Handler[*corev1.Pod]) { h.OnUpdate(out, in) }, calls{"add a"}},
		{"update in -> out", func(h handler.Handler[*corev1.Pod]) { h.OnUpdate(in, out) }, calls{"delete a"}},
		{"update out -> out", func(h handler.Handler[*corev1.Pod]) { h.OnUpdate(out, out) }, nil},
		{"delete accepted", func(h handler.Handler[*corev1.Pod]) {
			h.OnDelete(handler.Deleted[*corev1.Pod]{Object: in, Key: cache.KeyOf(in)})
		}, calls{"delete a"}},
		{"delete rejected", func(h handler.Handler[*corev1.Pod]) {
			h.OnDelete(handler.Deleted[*corev1.Pod]{Object: out, Key: cache.KeyOf(out)})
		}, nil},
		{"delete accepted, final state unknown", func(h handler.Handler[*corev1.Pod]) {
			h.OnDelete(handler.Deleted[*corev1.Pod]{Object: in, Key: cache.KeyOf(in), FinalStateUnknown: true})
		}, calls{"delete a fsu"}},
		{"delete rejected, final state unknown", func(h handler.Handler[*corev1.Pod]) {
			h.OnDelete(handler.Deleted[*corev1.Pod]{Object: out, Key: cache.KeyOf(out), FinalStateUnknown: true})
		}, nil},
		{"delete of an unknown object", func(h handler.Handler[*corev1.Pod]) {
			h.OnDelete(handler.Deleted[*corev1.Pod]{Key: cache.Key{Namespace: "ns", Name: "a"}, FinalStateUnknown: true})
		}, calls{"delete a fsu nil"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got calls
			tc.call(handler.Filter[*corev1.Pod]{Predicate: web, Handler: got.handler()})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

// A Filter without a Predicate passes everything; one without a Handler
// drops everything; neither panics.
func TestFilterZeroFields(t *testing.T) {
	var got calls
	all := handler.Filter[*corev1.Pod]{Handler: got.handler()}
	all.OnAdd(pod("a", "x"), false)
	all.OnUpdate(pod("a", "x"), pod("a", "y"))
	all.OnDelete(handler.Deleted[*corev1.Pod]{Object: pod("a", "y"), Key: cache.Key{Namespace: "ns", Name: "a"}})
	if diff := cmp.Diff(calls{"add a", "update a", "delete a"}, got); diff != "" {
		t.Errorf("nil Predicate (-want +got):\n%s", diff)
	}
	none := handler.Filter[*corev1.Pod]{Predicate: func(*corev1.Pod) bool { return true }}
	none.OnAdd(pod("a", "x"), false)
	none.OnUpdate(pod("a", "x"), pod("a", "y"))
	none.OnDelete(handler.Deleted[*corev1.Pod]{Key: cache.Key{Name: "a"}})
}

// Funcs skips nil functions.
func TestFuncsNil(t *testing.T) {
	var f handler.Funcs[*corev1.Pod]
	f.OnAdd(pod("a", "x"), true)
	f.OnUpdate(pod("a", "x"), pod("a", "x"))
	f.OnDelete(handler.Deleted[*corev1.Pod]{})
}

// EnqueueKeys and EnqueueStringKeys enqueue the key of every added,
// updated or deleted object; a deletion's key is used even without an
// object.
func TestEnqueue(t *testing.T) {
	keys := workqueue.NewTyped[cache.Key]()
	defer keys.ShutDown()
	strs := workqueue.NewTyped[string]()
	defer strs.ShutDown()
	for _, h := range []handler.Funcs[*corev1.Pod]{handler.EnqueueKeys[*corev1.Pod](keys), handler.EnqueueStringKeys[*corev1.Pod](strs)} {
		h.OnAdd(pod("a", "x"), true)
		h.OnUpdate(pod("b", "x"), pod("b", "y"))
		h.OnDelete(handler.Deleted[*corev1.Pod]{Key: cache.Key{Namespace: "ns", Name: "c"}, FinalStateUnknown: true})
		h.OnAdd(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, false) // no namespace: "n"
	}
	var gotKeys []string
	for keys.Len() > 0 {
		k, _ := keys.Get()
		gotKeys = append(gotKeys, k.String())
		keys.Done(k)
	}
	var gotStrs []string
	for strs.Len() > 0 {
		k, _ := strs.Get()
		gotStrs = append(gotStrs, k)
		strs.Done(k)
	}
	want := []string{"ns/a", "ns/b", "ns/c", "n"}
	if diff := cmp.Diff(want, gotKeys); diff != "" {
		t.Errorf("EnqueueKeys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, gotStrs); diff != "" {
		t.Errorf("EnqueueStringKeys (-want +got):\n%s", diff)
	}
	if !strings.Contains(strings.Join(gotStrs, ","), "ns/c") {
		t.Error("a deletion without an object was not enqueued")
	}
}
