package typed_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// hintsSeen is a source that records the hints of every List and Watch.
type hintsSeen struct {
	source.Source[*corev1.Pod]
	mu   sync.Mutex
	seen []source.Hints
}

func (h *hintsSeen) note(ctx context.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = append(h.seen, source.HintsFrom(ctx))
}

func (h *hintsSeen) List(ctx context.Context, opts metav1.ListOptions) (source.List[*corev1.Pod], error) {
	h.note(ctx)
	return h.Source.List(ctx, opts)
}

func (h *hintsSeen) Watch(ctx context.Context, opts metav1.ListOptions) (source.Watcher[*corev1.Pod], error) {
	h.note(ctx)
	return h.Source.Watch(ctx, opts)
}

// TestInformerHintsIntern: an informer asks its source to share strings
// unless Options.NoIntern, on every List and Watch; a source that decodes
// nothing (the fake) hands its objects over as they are.
func TestInformerHintsIntern(t *testing.T) {
	tests := []struct {
		name string
		opts typed.Options[*corev1.Pod]
		want source.Hints
	}{
		{"default", typed.Options[*corev1.Pod]{}, source.Hints{DropManagedFields: true, Intern: true}},
		{"NoIntern", typed.Options[*corev1.Pod]{NoIntern: true}, source.Hints{DropManagedFields: true}},
		{"KeepManagedFields", typed.Options[*corev1.Pod]{KeepManagedFields: true}, source.Hints{Intern: true}},
		{"both", typed.Options[*corev1.Pod]{KeepManagedFields: true, NoIntern: true}, source.Hints{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := it.Pod(strings.Clone("ns"), "a", map[string]string{"app": strings.Clone("web")})
			b := it.Pod(strings.Clone("ns"), "b", map[string]string{"app": strings.Clone("web")})
			src := &hintsSeen{Source: fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: true}, a, b)}
			inf, err := typed.NewInformer[*corev1.Pod](src, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			startSynced(t, inf)()
			src.mu.Lock()
			seen := src.seen
			src.mu.Unlock()
			if len(seen) < 2 {
				t.Fatalf("%d calls, want a List and a Watch at least", len(seen))
			}
			want := make([]source.Hints, len(seen))
			for i := range want {
				want[i] = tt.want
			}
			if d := cmp.Diff(want, seen); d != "" {
				t.Errorf("hints (-want +got):\n%s", d)
			}
			ga, _ := inf.Store().GetByKey(cache.Key{Namespace: "ns", Name: "a"})
			gb, _ := inf.Store().GetByKey(cache.Key{Namespace: "ns", Name: "b"})
			if ga == nil || gb == nil {
				t.Fatalf("cached %v and %v, want both pods", ga, gb)
			}
			if unsafe.StringData(ga.Namespace) == unsafe.StringData(gb.Namespace) {
				t.Errorf("the fake's pods share their namespace after the informer: it interned them")
			}
		})
	}
}
