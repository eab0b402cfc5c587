package typed_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/informertest"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// gated delegates every call to h once gate is closed: a handler stalled
// until the test lets it go.
type gated[T any] struct {
	h    handler.Handler[*corev1.Pod]
	gate chan struct{}
}

func (g gated[T]) OnAdd(p *corev1.Pod, initial bool) { <-g.gate; g.h.OnAdd(p, initial) }
func (g gated[T]) OnUpdate(old, cur *corev1.Pod)     { <-g.gate; g.h.OnUpdate(old, cur) }
func (g gated[T]) OnDelete(d handler.Deleted[*corev1.Pod]) {
	<-g.gate
	g.h.OnDelete(d)
}

// updateAll makes n updates, round robin over the fake's objects, and
// returns the fake's resourceVersion after the last.
func updateAll(t *testing.T, fake *sourcetest.Fake[*corev1.Pod], objs []*corev1.Pod, n int) string {
	t.Helper()
	cur := make([]*corev1.Pod, len(objs))
	for i, o := range objs {
		var err error
		if cur[i], err = fake.Get(cache.KeyOf(o)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		p := cur[i%len(cur)].DeepCopy()
		p.Labels = map[string]string{"n": fmt.Sprint(i)}
		var err error
		if cur[i%len(cur)], err = fake.Update(p); err != nil {
			t.Fatal(err)
		}
	}
	return fake.ResourceVersion()
}

// TestStalledHandlerCoalescesByKey: a handler stalled through the initial
// list of 10k objects and 200k updates of them holds at most one pending
// notification per object under CoalesceByKey, and once it goes on it ends
// on every key's final state, each call consistent with the ones before
// (the recorder checks I2-I4).
func TestStalledHandlerCoalescesByKey(t *testing.T) {
	const objects, events = 10000, 200000
	objs := it.Pods(objects)
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, objs...)
	inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{})
	rec := it.NewRecorder()
	gate := make(chan struct{})
	reg, err := inf.AddHandlerWithOptions(gated[any]{h: rec, gate: gate}, typed.HandlerOptions{Buffer: typed.CoalesceByKey})
	if err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)
	if err := inf.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	rv := updateAll(t, fake, objs, events)
	// The cache, not only the reflector, must hold every update before
	// the state the handler must end on is read from it.
	// (A bound, not a performance assertion: it only names a hang.)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if err := inf.WaitForResourceVersion(ctx, rv); err != nil {
		t.Fatalf("the cache has every update: %v", err)
	}
	// One notification is in the stalled call; the rest pending, one per key.
	if p := reg.Pending(); p > objects+1 {
		t.Errorf("%d notifications pending for %d objects, want at most one per object", p, objects)
	}
	if m := reg.Merged(); m < events-objects {
		t.Errorf("Merged = %d, want at least %d", m, events-objects)
	}
	t.Logf("stalled through %d events on %d objects: %d pending, %d merged", events+objects, objects, reg.Pending(), reg.Merged())
	close(gate)
	want := informertest.StateOf(inf.Store().List())
	it.Eventually(t, "the handler ends on every key's final state", func() bool { return maps.Equal(want, rec.Replay()) })
	rec.Check(t, want)
}

// TestBlockHoldsTheWriter: under Block the pending notifications stay
// within the bound plus one batch while the handler stalls (the writer
// waits, and the cache with it); once it goes on, the handler gets every
// change, unmerged.
func TestBlockHoldsTheWriter(t *testing.T) {
	const objects, events, size = 100, 3000, 50
	objs := it.Pods(objects)
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, objs...)
	inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{})
	rec := it.NewRecorder()
	gate := make(chan struct{})
	var updates atomic.Int64
	counting := handler.Funcs[*corev1.Pod]{
		AddFunc:    rec.OnAdd,
		UpdateFunc: func(old, cur *corev1.Pod) { updates.Add(1); rec.OnUpdate(old, cur) },
		DeleteFunc: rec.OnDelete,
	}
	reg, err := inf.AddHandlerWithOptions(gated[any]{h: counting, gate: gate}, typed.HandlerOptions{Buffer: typed.Block, Size: size})
	if err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)
	if err := inf.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	rv := updateAll(t, fake, objs, events)
	it.Eventually(t, "the writer waits", func() bool { return reg.Pending() >= size })
	if p := reg.Pending(); p > size+fifo.DefaultMaxBatch+objects+1 {
		t.Errorf("%d notifications pending, want at most %d plus a batch", p, size)
	}
	// The cache waits with the writer (the queue, not yet applied, may
	// hold every event: the reflector's resourceVersion moves on).
	last := objs[(events-1)%objects]
	lastApplied := func() bool {
		p, ok := inf.Store().Get(last)
		return ok && p.Labels["n"] == fmt.Sprint(events-1)
	}
	if lastApplied() {
		t.Errorf("the cache has the last update while its Block handler stalls (%d pending)", reg.Pending())
	}
	close(gate)
	it.Eventually(t, "the cache has every update", func() bool { return inf.LastSyncResourceVersion() == rv && lastApplied() })
	it.Eventually(t, "the handler got every update", func() bool { return updates.Load() == events })
	want := informertest.StateOf(inf.Store().List())
	it.Eventually(t, "the handler ends on every key's final state", func() bool { return maps.Equal(want, rec.Replay()) })
	rec.Check(t, want)
	if m := reg.Merged(); m != 0 {
		t.Errorf("Merged = %d under Block, want 0", m)
	}

}

// TestCoalesceByKeyKeepsUIDChange: a CoalesceByKey handler stalled while
// an object it has is deleted and re-created under its name with a new
// UID, then updated, hears a Delete of the old object and an Add of the new
// one's last state, never an Update between two UIDs (the soak found them
// merged into one). The handler stalls in an update of another object;
// a marker object's update, merged into its pending Add, says that every
// change before it is in the buffer.
func TestCoalesceByKeyKeepsUIDChange(t *testing.T) {
	type call struct{ Kind, UID, OldUID, RV string }
	for _, updates := range []int{0, 1, 3} {
		t.Run(fmt.Sprint(updates, " updates"), func(t *testing.T) {
			fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pod("ns", "stall", nil))
			inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{})
			var mu sync.Mutex
			var calls []call // of ns/a
			record := func(name string, c call) {
				if name == "a" {
					mu.Lock()
					calls = append(calls, c)
					mu.Unlock()
				}
			}
			rec := it.NewRecorder()
			gate := make(chan struct{})
			h := handler.Funcs[*corev1.Pod]{
				AddFunc: func(p *corev1.Pod, initial bool) {
					rec.OnAdd(p, initial)
					record(p.Name, call{"add", string(p.UID), "", p.ResourceVersion})
				},
				UpdateFunc: func(old, cur *corev1.Pod) {
					if cur.Name == "stall" {
						<-gate
					}
					rec.OnUpdate(old, cur)
					record(cur.Name, call{"update", string(cur.UID), string(old.UID), cur.ResourceVersion})
				},
				DeleteFunc: func(d handler.Deleted[*corev1.Pod]) {
					rec.OnDelete(d)
					record(d.Object.Name, call{"delete", string(d.Object.UID), "", d.Object.ResourceVersion})
				},
			}
			reg, err := inf.AddHandlerWithOptions(h, typed.HandlerOptions{Buffer: typed.CoalesceByKey})
			if err != nil {
				t.Fatal(err)
			}
			it.Run(t, inf)
			first, err := fake.Create(it.Pod("ns", "a", nil))
			if err != nil {
				t.Fatal(err)
			}
			it.Eventually(t, "the handler has ns/a", func() bool { mu.Lock(); defer mu.Unlock(); return len(calls) == 1 })
			update := func(p *corev1.Pod, n int) *corev1.Pod {
				p = p.DeepCopy()
				p.Labels = map[string]string{"n": fmt.Sprint(n)}
				p, err := fake.Update(p)
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			stall, err := fake.Get(cache.Key{Namespace: "ns", Name: "stall"})
			if err != nil {
				t.Fatal(err)
			}
			update(stall, 0) // the handler stalls in this update
			gone, err := fake.Delete(cache.KeyOf(first))
			if err != nil {
				t.Fatal(err)
			}
			cur, err := fake.Create(it.Pod("ns", "a", nil))
			if err != nil {
				t.Fatal(err)
			}
			if cur.UID == first.UID || cur.UID == "" {
				t.Fatalf("re-created object has UID %q, the first %q: want a new one", cur.UID, first.UID)
			}
			for i := range updates {
				cur = update(cur, i)
			}
			marker, err := fake.Create(it.Pod("ns", "marker", nil))
			if err != nil {
				t.Fatal(err)
			}
			update(marker, 0)
			// Merged: the marker's update and the updates of the new ns/a
			// (and, merged wrongly, its Delete then Add).
			it.Eventually(t, "every change is in the handler's buffer", func() bool { return reg.Merged() >= int64(updates)+1 })
			close(gate)
			want := informertest.StateOf(fake.Items())
			it.Eventually(t, "the handler ends on the final state", func() bool { return maps.Equal(want, rec.Replay()) })
			mu.Lock()
			got := slices.Clone(calls)
			mu.Unlock()
			wantCalls := []call{
				{"add", string(first.UID), "", first.ResourceVersion},
				{"delete", string(first.UID), "", gone.ResourceVersion},
				{"add", string(cur.UID), "", cur.ResourceVersion},
			}
			if diff := cmp.Diff(wantCalls, got); diff != "" {
				t.Errorf("calls for ns/a (-want +got):\n%s", diff)
			}
			rec.Check(t, want)
		})
	}
}
