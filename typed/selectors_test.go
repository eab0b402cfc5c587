package typed_test

import (
	"strings"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// Options.LabelSelector and FieldSelector restrict what the informer
// lists and watches, on every request, streaming or not; an object that
// stops matching is deleted from the cache, one that starts matching added.
func TestSelectors(t *testing.T) {
	for _, watchList := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: !watchList},
				it.Pod("ns-1", "web-a", map[string]string{"app": "web"}),
				it.Pod("ns-1", "db-a", map[string]string{"app": "db"}),
				it.Pod("ns-2", "web-b", map[string]string{"app": "web"}),
			)
			var tweaked int
			inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{
				LabelSelector: "app=web", FieldSelector: "metadata.namespace=ns-1",
				TweakListOptions: func(o *metav1.ListOptions) {
					tweaked++
					if o.LabelSelector != "app=web" {
						t.Errorf("tweak saw label selector %q", o.LabelSelector)
					}
				},
			})
			rec := it.NewRecorder()
			startSynced(t, inf, rec)
			keys := func() []string {
				var out []string
				for _, k := range inf.Store().ListKeys() {
					out = append(out, k.String())
				}
				return out
			}
			if got := keys(); len(got) != 1 || got[0] != "ns-1/web-a" {
				t.Fatalf("cache %v, want only ns-1/web-a", got)
			}
			if _, err := fake.Update(it.Pod("ns-1", "db-a", map[string]string{"app": "web"})); err != nil {
				t.Fatal(err)
			}
			if _, err := fake.Update(it.Pod("ns-1", "web-a", map[string]string{"app": "db"})); err != nil {
				t.Fatal(err)
			}
			it.Eventually(t, "selector transitions", func() bool {
				_, in := inf.Store().GetByKey(cache.Key{Namespace: "ns-1", Name: "db-a"})
				_, out := inf.Store().GetByKey(cache.Key{Namespace: "ns-1", Name: "web-a"})
				return in && !out
			})
			synctest.Wait()
			if it.Count(rec, "delete") != 1 || it.Count(rec, "add") != 2 {
				t.Errorf("handler: %d adds, %d deletes; want 2 and 1", it.Count(rec, "add"), it.Count(rec, "delete"))
			}
			// One streaming list that goes on as the watch, or a LIST and a watch.
			if want := map[bool]int{true: 1, false: 2}[watchList]; tweaked != want {
				t.Errorf("TweakListOptions called %d times, want %d: once per request", tweaked, want)
			}
		})
	}
}

func TestInvalidSelectors(t *testing.T) {
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{})
	for _, opts := range []typed.Options[*corev1.Pod]{
		{LabelSelector: "app in (web"},
		{FieldSelector: "metadata.name"},
	} {
		_, err := typed.NewInformer(fake, opts)
		if err == nil || !strings.Contains(err.Error(), "Selector") {
			t.Errorf("NewInformer(%+v) = %v, want an error naming the selector option", opts, err)
		}
	}
	if n := fake.ListCalls() + fake.WatchCalls(); n != 0 {
		t.Errorf("%d requests", n)
	}
}
