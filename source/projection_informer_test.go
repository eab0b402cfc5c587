package source_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/internal/bench"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// TestProjectionInformer: an informer of a projection syncs, and its
// lister, label selectors, indexes and handlers work on it as on a Pod,
// over JSON and protobuf, directly and from a Factory.
func TestProjectionInformer(t *testing.T) {
	pods := bench.Pods(200, bench.PodOptions{Labels: bench.LabelsDeployment})
	byNode := cache.Indexers[*bench.PodSummary]{"node": func(p *bench.PodSummary) ([]string, error) { return []string{p.Spec.NodeName}, nil }}
	for _, proto := range []bool{false, true} {
		fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: pods})
		srv := podserver.New(t, fake)
		src, err := source.FromConfig[*bench.PodSummary](srv.Config(), source.RESTOptions{Mapper: podserver.Mapper(), Protobuf: proto})
		if err != nil {
			t.Fatal(err)
		}
		var errs it.ErrSink
		inf, err := typed.NewInformer(src, typed.Options[*bench.PodSummary]{Indexers: byNode, LabelIndexes: []string{"app"}, ErrorHandler: errs.Handle})
		if err != nil {
			t.Fatal(err)
		}
		var updates atomic.Int64
		h := handler.Funcs[*bench.PodSummary]{UpdateFunc: func(old, cur *bench.PodSummary) {
			if old.Status.Phase != cur.Status.Phase {
				updates.Add(1)
			}
		}}
		if _, err := inf.AddHandler(h); err != nil {
			t.Fatal(err)
		}
		it.Run(t, inf)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if err := inf.WaitForSync(ctx); err != nil {
			t.Fatal(err)
		}
		// Every pod, as a summary, answered by the lister and the indexes
		// as client-side filtering of the fake's pods answers.
		want := func(keep func(*corev1.Pod) bool) []string {
			var out []string
			for _, p := range fake.Items() {
				if keep(p) {
					out = append(out, p.Namespace+"/"+p.Name)
				}
			}
			return sorted(out)
		}
		names := func(ps []*bench.PodSummary) []string {
			var out []string
			for _, p := range ps {
				out = append(out, p.Namespace+"/"+p.Name)
			}
			return sorted(out)
		}
		sel := labels.SelectorFromSet(labels.Set{"app": "app-3"})
		got, err := inf.Lister().List(sel)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want(func(p *corev1.Pod) bool { return sel.Matches(labels.Set(p.Labels)) }), names(got)); diff != "" {
			t.Errorf("protobuf %v: List(app=app-3) (-want +got):\n%s", proto, diff)
		}
		node := pods[11].Spec.NodeName
		onNode, err := inf.Store().ByIndex("node", node)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want(func(p *corev1.Pod) bool { return p.Spec.NodeName == node }), names(onNode)); diff != "" {
			t.Errorf("protobuf %v: ByIndex(node) (-want +got):\n%s", proto, diff)
		}
		// A change reaches the handler as the summary's new state.
		p, err := fake.Get(cache.KeyOf(pods[5]))
		if err != nil {
			t.Fatal(err)
		}
		p = p.DeepCopy()
		p.Status.Phase = corev1.PodSucceeded
		if _, err := fake.Update(p); err != nil {
			t.Fatal(err)
		}
		it.Eventually(t, "the update in the cache", func() bool {
			s, ok := inf.Store().GetByKey(cache.KeyOf(pods[5]))
			return ok && s.Status.Phase == corev1.PodSucceeded
		})
		it.Eventually(t, "the update handled", func() bool { return updates.Load() == 1 })
		if len(errs.All()) != 0 {
			t.Errorf("protobuf %v: errors %v", proto, errs.All())
		}
	}

	// The same type from a Factory over the server's config.
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: pods})
	srv := podserver.New(t, fake)
	f, err := factory.New(srv.Config(), factory.Options{Mapper: podserver.Mapper(), DropAnnotations: []string{"prometheus.io/port"}})
	if err != nil {
		t.Fatal(err)
	}
	inf, release, err := factory.InformerFor[*bench.PodSummary](f, factory.Scope{Namespace: pods[0].Namespace})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	it.Run(t, runFunc(f.Start))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods {
		if p.Namespace == pods[0].Namespace {
			n++
		}
	}
	if got := inf.Store().Len(); got != n || n == 0 {
		t.Errorf("factory informer of summaries in %s: %d cached, want %d", pods[0].Namespace, got, n)
	}
	for _, s := range inf.Store().List() {
		if _, ok := s.Annotations["prometheus.io/port"]; ok || len(s.Annotations) == 0 {
			t.Fatalf("factory informer: %s has annotations %v, want all but the dropped one", s.Name, s.Annotations)
		}
	}
}

// runFunc makes a Start method an informertest.Runner.
type runFunc func(context.Context) error

func (f runFunc) Run(ctx context.Context) error { return f(ctx) }

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}
