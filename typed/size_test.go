package typed_test

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/bench"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/objsize"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// TestSizeEstimate: after a sync of server pods, the informer knows how
// many objects it holds and estimates their bytes near the mean of every
// cached object's size (it sizes the first 16, then one in 256).
func TestSizeEstimate(t *testing.T) {
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, bench.Pods(2000, bench.PodOptions{Labels: bench.LabelsStatefulSet})...)
	inf, err := typed.NewInformer(fake, typed.Options[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	startSynced(t, inf)
	var all int64
	for _, p := range inf.Store().List() {
		all += objsize.Of(p)
	}
	mean := all / int64(inf.Store().Len())
	s := inf.Status().Size
	t.Logf("size %+v; mean of every object %d", s, mean)
	if s.Objects != 2000 || s.EstimatedBytes != int64(s.Objects)*s.BytesPerObject || s.Budget != 0 || s.OverBudget {
		t.Errorf("size %+v, want 2000 objects, no budget", s)
	}
	if r := float64(s.BytesPerObject) / float64(mean); r < 0.9 || r > 1.1 {
		t.Errorf("bytes per object %d, %.2fx the mean of all (%d)", s.BytesPerObject, r, mean)
	}
	if _, err := typed.NewInformer(fake, typed.Options[*corev1.Pod]{MemoryBudget: &typed.MemoryBudget{}}); err == nil {
		t.Error("a budget of 0 bytes: no error")
	}
}

// TestMemoryBudget: crossing the budget is reported once with the
// informer's size; without Refuse every object is cached; with Refuse
// the cache stops near the budget, holds back the rest in quarantine,
// and takes them in once deletions make room again.
func TestMemoryBudget(t *testing.T) {
	pods := bench.Pods(1000, bench.PodOptions{Labels: bench.LabelsStatefulSet})
	per := objsize.Of(pods[0])
	budget := 300 * per
	overs := func(errs *it.ErrSink) []*typed.OverBudgetError {
		var out []*typed.OverBudgetError
		for _, err := range errs.All() {
			var ob *typed.OverBudgetError
			if errors.As(err, &ob) {
				out = append(out, ob)
			}
		}
		return out
	}
	t.Run("report", func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, pods...)
		var errs it.ErrSink
		inf, err := typed.NewInformer(fake, typed.Options[*corev1.Pod]{MemoryBudget: &typed.MemoryBudget{Bytes: budget}, ErrorHandler: errs.Handle})
		if err != nil {
			t.Fatal(err)
		}
		startSynced(t, inf)
		it.Eventually(t, "the report", func() bool { return len(overs(&errs)) == 1 })
		ob := overs(&errs)[0]
		if s := inf.Status().Size; inf.Store().Len() != 1000 || !s.OverBudget || s.Budget != budget ||
			ob.Informer != inf.Name() || ob.Size.Objects == 0 || ob.Size.BytesPerObject == 0 || !errors.Is(ob, typed.ErrOverBudget) {
			t.Errorf("%d cached, size %+v, report %v", inf.Store().Len(), s, ob)
		}
		for _, p := range pods[:900] {
			if _, err := fake.Delete(cache.KeyOf(p)); err != nil {
				t.Fatal(err)
			}
		}
		it.Eventually(t, "under budget again", func() bool { return !inf.Status().Size.OverBudget })
		if n := len(overs(&errs)); n != 1 {
			t.Errorf("%d reports, want 1", n)
		}
	})
	t.Run("refuse", func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, pods...)
		var errs it.ErrSink
		inf, err := typed.NewInformer(fake, typed.Options[*corev1.Pod]{MemoryBudget: &typed.MemoryBudget{Bytes: budget, Refuse: true}, ErrorHandler: errs.Handle})
		if err != nil {
			t.Fatal(err)
		}
		startSynced(t, inf)
		it.Eventually(t, "the report", func() bool { return len(overs(&errs)) == 1 })
		held := func() int {
			n := 0
			for _, q := range inf.Status().Quarantined {
				if errors.Is(q.Reason, typed.ErrOverBudget) {
					n++
				}
			}
			return n
		}
		// The quarantine is published just after the list is applied.
		it.Eventually(t, "the list applied, the rest held back", func() bool { return inf.Store().Len()+held() == 1000 })
		cached := inf.Store().Len()
		t.Logf("budget of %d pods' bytes: %d cached, %d held back, size %+v", budget/per, cached, held(), inf.Status().Size)
		if cached < 250 || cached > 310 || cached+held() != 1000 || !inf.Status().Size.OverBudget {
			t.Errorf("%d cached and %d held back, want about 300 and the rest", cached, held())
		}
		// A new pod is held back too, and a cached one is still updated.
		if _, err := fake.Create(it.Pod("late", "late", nil)); err != nil {
			t.Fatal(err)
		}
		some := inf.Store().List()[0]
		upd := some.DeepCopy()
		upd.Labels = map[string]string{"updated": "yes"}
		if _, err := fake.Update(upd); err != nil {
			t.Fatal(err)
		}
		it.Eventually(t, "the update", func() bool {
			p, ok := inf.Store().GetByKey(cache.KeyOf(some))
			return ok && p.Labels["updated"] == "yes"
		})
		it.Eventually(t, "the new pod held back", func() bool { return held() == 1000-cached+1 })
		// Deleting cached pods makes room: a relist takes in what was held back.
		for _, p := range inf.Store().List()[:200] {
			if _, err := fake.Delete(cache.KeyOf(p)); err != nil {
				t.Fatal(err)
			}
		}
		it.Eventually(t, "the relist after room was made", func() bool { return inf.Status().Stats.Relists >= 1 && len(overs(&errs)) == 2 })
		it.Eventually(t, "cache and quarantine add up to the server", func() bool {
			return inf.Store().Len()+held() == fake.Len() && inf.Store().Len() >= 250
		})
		for _, p := range inf.Store().List() {
			if _, err := fake.Get(cache.KeyOf(p)); err != nil {
				t.Errorf("cached %s, which the server deleted", p.Name)
			}
		}
	})
}
