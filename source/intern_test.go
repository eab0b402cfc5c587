package source_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

// sharedPods are two pods of one namespace, with one label and one image,
// and the fields they differ in.
func sharedPods() []*corev1.Pod {
	out := make([]*corev1.Pod, 2)
	for i := range out {
		p := pod("shop", fmt.Sprintf("cart-%d", i), map[string]string{"app": "cart"})
		p.Spec.Containers = []corev1.Container{{Name: "app", Image: "registry.example.com/cart:1.0"}}
		p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}
		out[i] = p
	}
	return out
}

// TestFromConfigInterns: with Hints.Intern, the objects that the REST
// source lists and watches share their equal strings, whichever way they
// are decoded, and are otherwise as the server sent them; without it,
// they share nothing.
func TestFromConfigInterns(t *testing.T) {
	tests := []struct {
		name     string
		opts     source.RESTOptions
		intern   bool
		dropMF   bool
		wantSame bool
	}{
		{"list and watch", source.RESTOptions{}, true, false, true},
		{"dropping managedFields", source.RESTOptions{}, true, true, true},
		{"decode workers", source.RESTOptions{DecodeWorkers: 2}, true, false, true},
		{"protobuf asked, JSON answered", source.RESTOptions{Protobuf: true}, true, false, true},
		{"off", source.RESTOptions{}, false, false, false},
		{"off with decode workers", source.RESTOptions{DecodeWorkers: 2}, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: sharedPods()})
			tt.opts.Mapper = podMapper()
			src, err := source.FromConfig[*corev1.Pod](newPodServer(t, f).config(), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			ctx := source.WithHints(t.Context(), source.Hints{Intern: tt.intern, DropManagedFields: tt.dropMF})
			l, err := src.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := l.Items
			w, err := src.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			for _, p := range sharedPods() {
				p.Name += "-new"
				if _, err := f.Create(p); err != nil {
					t.Fatal(err)
				}
				ev := next(t, w)
				if ev.Type != watch.Added {
					t.Fatalf("event %s, want ADDED", ev.Type)
				}
				got = append(got, ev.Object)
			}
			want, err := f.List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.dropMF {
				for _, p := range want.Items {
					p.ManagedFields = nil
				}
			}
			byName := func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) }
			slices.SortFunc(want.Items, byName)
			slices.SortFunc(got, byName)
			if d := cmp.Diff(want.Items, got); d != "" {
				t.Fatalf("pods (-want +got):\n%s", d)
			}
			a := got[0]
			for i, b := range got[1:] {
				checks := []struct {
					what string
					x, y string
					want bool
				}{
					{"namespace", a.Namespace, b.Namespace, tt.wantSame},
					{"label", a.Labels["app"], b.Labels["app"], tt.wantSame},
					{"image", a.Spec.Containers[0].Image, b.Spec.Containers[0].Image, tt.wantSame},
					{"name prefix", a.Name[:4], b.Name[:4], false},
				}
				for _, c := range checks {
					if same := unsafe.StringData(c.x) == unsafe.StringData(c.y); same != c.want {
						t.Errorf("pods 0 and %d share their %s: %v, want %v", i+1, c.what, same, c.want)
					}
				}
			}
		})
	}
}
