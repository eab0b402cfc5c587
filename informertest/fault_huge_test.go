package informertest_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/cache"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestFault15Huge: fault 15. An informer syncs 100,000 pods and 8 pods of
// about 1 MiB each (a large annotation): the cache and a handler hold
// exactly the server's objects (I1, I2, by key, resourceVersion and UID),
// the large ones whole; a live update of a large one arrives whole. Then
// 99% of the small pods are deleted: the cache and the handler follow (I1,
// I2), and the live heap goes down by more than half of what the deleted
// objects took (measured after a GC, a comparison of sizes, not a time).
// The fake keeps only a short history, so that it holds no deleted object
// either.
func TestFault15Huge(t *testing.T) {
	const small, large, mib = 100000, 8, 1 << 20
	base := liveHeap()
	pods := podsIn("a", small)
	big := strings.Repeat("x", mib)
	for i := range large {
		p := it.Pod("big", fmt.Sprintf("big-%d", i), nil)
		p.Annotations = map[string]string{"blob": big}
		pods = append(pods, p)
	}
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: pods, Window: 100})
	pods = nil
	inf, err := typed.NewInformer[*corev1.Pod](fake, typed.Options[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	rec := it.NewRecorder()
	if _, err := inf.AddHandler(rec); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	if err := inf.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	it.Converge(t, fake, inf.Store(), rec)
	for i := range large {
		k := cache.Key{Namespace: "big", Name: fmt.Sprintf("big-%d", i)}
		p, ok := inf.Store().GetByKey(k)
		if !ok || len(p.Annotations["blob"]) != mib {
			t.Fatalf("large pod %v cached: %v, annotation of %d bytes, want %d", k, ok, len(p.Annotations["blob"]), mib)
		}
	}
	// A live update of a large object arrives whole.
	k := cache.Key{Namespace: "big", Name: "big-0"}
	p, err := fake.Get(k)
	if err != nil {
		t.Fatal(err)
	}
	p.Annotations["blob"] = strings.Repeat("y", mib)
	if _, err := fake.Update(p); err != nil {
		t.Fatal(err)
	}
	it.Converge(t, fake, inf.Store(), rec)
	if p, _ := inf.Store().GetByKey(k); p.Annotations["blob"] != strings.Repeat("y", mib) {
		t.Errorf("the updated large pod is not cached whole")
	}
	full := liveHeap()
	for i := range small - small/100 {
		if _, err := fake.Delete(cache.Key{Namespace: "a", Name: fmt.Sprintf("p-%05d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	it.Converge(t, fake, inf.Store(), rec)
	if n := inf.Store().Len(); n != small/100+large {
		t.Fatalf("%d cached after deleting 99%%, want %d", n, small/100+large)
	}
	after := liveHeap()
	t.Logf("live heap: %d MiB before, %d MiB with %d pods and %d of 1 MiB, %d MiB after deleting 99%% of the small ones",
		base>>20, full>>20, small, large, after>>20)
	// What the small pods took, in the fake, the cache and the handler's
	// record, is most of full-base less the large pods' share.
	smallShare := int64(full) - int64(base) - 3*large*mib
	if smallShare <= 0 {
		t.Fatalf("the heap grew by %d bytes with %d pods: cannot tell what they took", int64(full)-int64(base), small)
	}
	if freed := int64(full) - int64(after); freed < smallShare/2 {
		t.Errorf("deleting 99%% of %d pods freed %d MiB of the %d MiB they took, want more than half", small, freed>>20, smallShare>>20)
	}
}
