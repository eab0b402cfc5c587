package factory_test

import (
	"errors"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/handler"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// TestRelease: the informer runs while it has a user; a release per user
// (a second call of one release does nothing); the last one stops it (its
// watch ends, it takes no more handlers) and the factory forgets it, so
// the next caller gets a new informer, which syncs.
func TestRelease(t *testing.T) {
	fs := newFakes(sourcetest.FakeOptions[*corev1.Pod]{Objects: it.Pods(5)})
	fake := fs.of("")
	f := newFactory(t, fs, factory.Options{})
	start(t, f)
	a, releaseA := informerFor[*corev1.Pod](t, f, factory.Scope{})
	b, releaseB := informerFor[*corev1.Pod](t, f, factory.Scope{})
	waitSynced(t, f)
	it.Eventually(t, "the watch is open", func() bool { return fake.OpenWatches() == 1 })

	releaseA()
	releaseA() // not a release of b's use
	c, releaseC := informerFor[*corev1.Pod](t, f, factory.Scope{})
	if c != a || b != a || fake.OpenWatches() != 1 {
		t.Fatalf("after one of two users released: same informer %v, %d watches open; want the running informer, 1 watch", c == a, fake.OpenWatches())
	}
	releaseB()
	releaseC()
	it.Eventually(t, "the watch of the released informer ends", func() bool { return fake.OpenWatches() == 0 })
	it.Eventually(t, "the released informer stops", func() bool {
		_, err := a.AddHandler(handler.Funcs[*corev1.Pod]{})
		return errors.Is(err, typed.ErrStopped)
	})

	d, _ := informerFor[*corev1.Pod](t, f, factory.Scope{})
	if d == a {
		t.Fatal("InformerFor after the last release returned the stopped informer")
	}
	waitSynced(t, f)
	if got := d.Store().Len(); got != 5 {
		t.Errorf("new informer holds %d pods, want 5", got)
	}
	if got := fake.WatchCalls(); got != 2 {
		t.Errorf("%d watches for two informers one after the other, want 2", got)
	}
}

// TestReleaseBeforeStart: an informer released before Start never runs.
func TestReleaseBeforeStart(t *testing.T) {
	fs := newFakes(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: true})
	f := newFactory(t, fs, factory.Options{})
	_, release := informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: "gone"})
	informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: "kept"})
	release()
	start(t, f)
	waitSynced(t, f)
	if l, w := fs.of("gone").ListCalls(), fs.of("gone").WatchCalls(); l+w != 0 {
		t.Errorf("the released informer made %d lists and %d watches, want none", l, w)
	}
	if l := fs.of("kept").ListCalls(); l != 1 {
		t.Errorf("the kept informer made %d lists, want 1", l)
	}
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestReleaseFreesMemory: releasing the last user of an informer holding
// 10,000 pods stops its goroutines (back to the count before it was asked
// for) and lets its cache be collected: the heap freed, within a bound
// after it stopped, is more than half of what the informer held. The
// figures are logged.
func TestReleaseFreesMemory(t *testing.T) {
	const n = 10000
	pods := it.Pods(n)
	for i, p := range pods {
		p.Labels = map[string]string{"app": "web", "shard": string(rune('a' + i%26))}
		p.Annotations = map[string]string{"note": "a pod of the memory test, with some bytes to hold"}
	}
	fs := newFakes(sourcetest.FakeOptions[*corev1.Pod]{Objects: pods, Window: 10})
	pods = nil
	fake := fs.of("")
	f := newFactory(t, fs, factory.Options{})
	start(t, f)
	// A small informer that syncs shows that Start runs: the baseline
	// counts the factory's own goroutines.
	informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: "small"})
	waitSynced(t, f)
	goroutines := runtime.NumGoroutine()
	before := heapAlloc()

	// Not informerFor: its cleanup would keep the informer reachable.
	inf, release, err := factory.InformerFor[*corev1.Pod](f, factory.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := inf.Store().Len(); got != n {
		t.Fatalf("informer holds %d pods, want %d", got, n)
	}
	running := runtime.NumGoroutine()
	synced := heapAlloc()

	release()
	stopped := inf.Stopped()
	inf, release = nil, nil
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("the released informer did not stop in a minute")
	}
	it.Eventually(t, "the informer's goroutines exit", func() bool {
		return runtime.NumGoroutine() <= goroutines && fake.OpenWatches() == 0
	})
	// The goroutine count can reach the baseline while one of the
	// factory's goroutines is still returning from the informer's Run (the
	// baseline may hold a goroutine that has since ended), so the cache
	// counts as freed once a collection finds it gone, within a bound.
	after := heapAlloc()
	for deadline := time.Now().Add(10 * time.Second); int64(synced)-int64(after) <= (int64(synced)-int64(before))/2 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		after = heapAlloc()
	}

	held := int64(synced) - int64(before)
	freed := int64(synced) - int64(after)
	t.Logf("figures: informer of %d pods: heap %.1f MB before, %.1f MB synced (held %.1f MB, %.0f B/pod), %.1f MB after release (freed %.1f MB, %.0f%%); goroutines %d before, %d running, %d after",
		n, mb(before), mb(synced), float64(held)/1e6, float64(held)/n, mb(after), float64(freed)/1e6, 100*float64(freed)/float64(held),
		goroutines, running, runtime.NumGoroutine())
	if held <= 0 || freed*2 <= held {
		t.Errorf("released informer: %d bytes freed of %d held 10 s after it stopped, want more than half", freed, held)
	}
	if g := runtime.NumGoroutine(); g > goroutines {
		t.Errorf("%d goroutines after release, want %d as before the informer", g, goroutines)
	}
}

func mb(b uint64) float64 { return float64(b) / 1e6 }
