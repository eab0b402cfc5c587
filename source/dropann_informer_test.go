package source_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/bench"
	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

// TestDropAnnotations: a source told to drop kubectl's last-applied
// annotation never hands out an object with it, in lists (paged, whole)
// and watch events, over JSON and protobuf, for Pods and a projection;
// other annotations stay, and a pod left with none has none.
func TestDropAnnotations(t *testing.T) {
	const last = corev1.LastAppliedConfigAnnotation
	pods := bench.Pods(20, bench.PodOptions{ManagedFields: true})
	for i, p := range pods {
		p.Annotations[last] = fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q}}`, p.Name)
		if i == 3 {
			p.Annotations = map[string]string{last: "only"}
		}
	}
	byName := map[string]*corev1.Pod{}
	for _, p := range pods {
		byName[p.Name] = p
	}
	check := func(t *testing.T, what string, meta metav1.Object) {
		t.Helper()
		want := byName[meta.GetName()]
		if _, ok := meta.GetAnnotations()[last]; ok {
			t.Errorf("%s %s: kept %s", what, meta.GetName(), last)
		}
		if len(meta.GetManagedFields()) != 0 {
			t.Errorf("%s %s: kept managedFields", what, meta.GetName())
		}
		if meta.GetName() == pods[3].Name {
			if meta.GetAnnotations() != nil {
				t.Errorf("%s %s: annotations %v, want nil", what, meta.GetName(), meta.GetAnnotations())
			}
			return
		}
		if len(meta.GetAnnotations()) != len(want.Annotations)-1 {
			t.Errorf("%s %s: annotations %v, want all of %v but %s", what, meta.GetName(), meta.GetAnnotations(), want.Annotations, last)
		}
	}
	for _, proto := range []bool{false, true} {
		for _, whole := range []bool{false, true} {
			for _, projection := range []bool{false, true} {
				name := fmt.Sprintf("protobuf=%v/whole=%v/projection=%v", proto, whole, projection)
				t.Run(name, func(t *testing.T) {
					fake := sourceFake(pods)
					srv := podserver.New(t, fake)
					srv.Whole = whole
					opts := source.RESTOptions{Mapper: podserver.Mapper(), Protobuf: proto, DropAnnotations: []string{last}}
					if projection {
						src, err := source.FromConfig[*bench.PodSummary](srv.Config(), opts)
						if err != nil {
							t.Fatal(err)
						}
						listAndWatch(t, src, fake, func(what string, p *bench.PodSummary) { check(t, what, p) })
						return
					}
					src, err := source.FromConfig[*corev1.Pod](srv.Config(), opts)
					if err != nil {
						t.Fatal(err)
					}
					listAndWatch(t, src, fake, func(what string, p *corev1.Pod) { check(t, what, p) })
				})
			}
		}
	}
	if _, err := source.FromConfig[*corev1.Pod](podserver.New(t, sourceFake(nil)).Config(), source.RESTOptions{Mapper: podserver.Mapper(), DropAnnotations: []string{last, ""}}); err == nil {
		t.Error("an empty annotation key: no error")
	}
}

func sourceFake(pods []*corev1.Pod) *sourcetest.Fake[*corev1.Pod] {
	return sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: pods})
}

// listAndWatch lists src (in pages of 7), checks each item, then watches
// an update of every pod of fake and checks each event's object.
func listAndWatch[T cache.Object](t *testing.T, src source.Source[T], fake *sourcetest.Fake[*corev1.Pod], check func(string, T)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	opts := metav1.ListOptions{Limit: 7}
	var rv string
	n := 0
	for {
		l, err := src.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range l.Items {
			check("list", obj)
			n++
		}
		rv = l.ResourceVersion
		if l.Continue == "" {
			break
		}
		opts.Continue = l.Continue
	}
	if n != fake.Len() {
		t.Fatalf("listed %d, want %d", n, fake.Len())
	}
	w, err := src.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	items := fake.Items()
	for _, p := range items {
		p = p.DeepCopy()
		p.Labels["touched"] = "yes"
		if _, err := fake.Update(p); err != nil {
			t.Fatal(err)
		}
	}
	for range items {
		ev, err := w.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		check("watch", ev.Object)
	}
}
