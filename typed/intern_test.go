package typed_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// exclusive is the fake, saying that its objects are the caller's alone:
// the fake returns a new copy of each object on every List and watch.
type exclusive struct {
	*sourcetest.Fake[*corev1.Pod]
	yes bool
}

func (e exclusive) Info() source.Info {
	i := e.Fake.Info()
	i.Exclusive = e.yes
	return i
}

// podWith is a pod whose namespace, label and image are strings of their
// own, as a decoder makes them.
func podWith(name string) *corev1.Pod {
	p := it.Pod(strings.Clone("shop"), name, map[string]string{"app": strings.Clone("cart")})
	p.Spec.Containers = []corev1.Container{{Name: "app", Image: strings.Clone("registry.example.com/cart:1.0")}}
	return p
}

// TestInformerSharesStrings: an informer shares the equal strings (and
// equal maps) of the objects of an exclusive source, listed or watched, unless
// Options.NoIntern, and leaves the objects of any other source as they
// come. Shared or not, the cached objects equal the source's.
func TestInformerSharesStrings(t *testing.T) {
	tests := []struct {
		name      string
		exclusive bool
		opts      typed.Options[*corev1.Pod]
		wantSame  bool
	}{
		{"exclusive source", true, typed.Options[*corev1.Pod]{}, true},
		{"exclusive source, NoIntern", true, typed.Options[*corev1.Pod]{NoIntern: true}, false},
		{"other source", false, typed.Options[*corev1.Pod]{}, false},
		{"exclusive source, streaming list", true, typed.Options[*corev1.Pod]{NoWatchList: false}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: !strings.Contains(tt.name, "streaming")},
				podWith("a"), podWith("b"))
			inf, err := typed.NewInformer[*corev1.Pod](exclusive{fake, tt.exclusive}, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer startSynced(t, inf)()
			if _, err := fake.Create(podWith("c")); err != nil { // by the watch
				t.Fatal(err)
			}
			it.Eventually(t, "the watched pod cached", func() bool { return inf.Store().Len() == 3 })
			want, err := fake.List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []*corev1.Pod
			for _, p := range want.Items {
				g, ok := inf.Store().Get(p)
				if !ok {
					t.Fatalf("%s not cached", p.Name)
				}
				p.ManagedFields = nil
				if d := cmp.Diff(p, g); d != "" {
					t.Errorf("cached %s (-source +cached):\n%s", p.Name, d)
				}
				got = append(got, g)
			}
			for _, b := range got[1:] {
				a := got[0]
				for _, c := range []struct{ what, x, y string }{
					{"namespace", a.Namespace, b.Namespace},
					{"label", a.Labels["app"], b.Labels["app"]},
					{"image", a.Spec.Containers[0].Image, b.Spec.Containers[0].Image},
				} {
					if same := unsafe.StringData(c.x) == unsafe.StringData(c.y); same != tt.wantSame {
						t.Errorf("%s and %s share their %s: %v, want %v", a.Name, b.Name, c.what, same, tt.wantSame)
					}
				}
				if unsafe.StringData(a.Name) == unsafe.StringData(b.Name) {
					t.Errorf("%s and %s share their name", a.Name, b.Name)
				}
				if same := reflect.ValueOf(a.Labels).Pointer() == reflect.ValueOf(b.Labels).Pointer(); same != tt.wantSame {
					t.Errorf("%s and %s share their labels map: %v, want %v", a.Name, b.Name, same, tt.wantSame)
				}
			}
		})
	}
}
