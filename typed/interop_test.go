package typed_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedinformer/informer/cache"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// client-go's fake clientset, the way most controllers are unit-tested:
// its watches never send the initial-events bookmark, so the informer
// must list. It syncs, sees later creates, updates and deletes, names the
// resource from the fake client, and checks the scope.
func TestFakeClientset(t *testing.T) {
	cs := fake.NewClientset(it.Pod("default", "a", nil), it.Pod("default", "b", nil))
	src, err := source.FromClient[*corev1.Pod](cs.CoreV1().Pods("default"))
	if err != nil {
		t.Fatal(err)
	}
	inf := mustInformer(t, src, typed.Options[*corev1.Pod]{})
	rec := it.NewRecorder()
	startSynced(t, inf, rec)
	if n := inf.Store().Len(); n != 2 {
		t.Fatalf("synced with %d pods, want 2", n)
	}
	ctx := context.Background()
	if _, err := cs.CoreV1().Pods("default").Create(ctx, it.Pod("default", "c", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("default").Update(ctx, it.Pod("default", "a", map[string]string{"v": "2"}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods("default").Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	it.Eventually(t, "later changes seen", func() bool {
		a, okA := inf.Store().GetByKey(cache.Key{Namespace: "default", Name: "a"})
		_, okB := inf.Store().GetByKey(cache.Key{Namespace: "default", Name: "b"})
		_, okC := inf.Store().GetByKey(cache.Key{Namespace: "default", Name: "c"})
		return okA && a.Labels["v"] == "2" && !okB && okC
	})
	it.Eventually(t, "handler heard them", func() bool { return len(rec.Replay()) == 2 && it.Count(rec, "delete") == 1 })
	if _, err := inf.Lister().Namespace("default").Get("zzz"); err == nil || err.Error() != `pods "zzz" not found` {
		t.Errorf("Get(zzz) = %v, want pods \"zzz\" not found", err)
	}
	if st := inf.Status().Stats; st.WatchLists != 0 || st.Lists != 1 {
		t.Errorf("stats %+v: want one LIST and no streaming attempt with a fake clientset", st)
	}
}
