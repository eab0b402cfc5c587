package objsize_test

import (
	"encoding/json"
	"runtime"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/internal/bench"
	"github.com/typedinformer/informer/internal/objsize"
)

// TestOfExact: the bytes of values whose layout is known.
func TestOfExact(t *testing.T) {
	type inner struct{ A, B string }
	type outer struct {
		S    string
		P    *inner
		L    []int64
		hide *inner // unexported: not followed
	}
	s := int64(unsafe.Sizeof(outer{}))
	in := int64(unsafe.Sizeof(inner{}))
	cases := []struct {
		v    any
		want int64
	}{
		{&outer{}, s},
		{&outer{S: "hello"}, s + 5},
		{&outer{P: &inner{A: "ab", B: "c"}}, s + in + 3},
		{&outer{L: make([]int64, 2, 8)}, s + 64},
		{&outer{hide: &inner{A: "not counted"}}, s},
		{(*outer)(nil), 0},
		{"not a pointer", 0},
	}
	for i, c := range cases {
		if got := objsize.Of(c.v); got != c.want {
			t.Errorf("case %d: Of = %d, want %d", i, got, c.want)
		}
	}
	// A recursive type ends.
	type node struct {
		Name string
		Next *node
	}
	if got := objsize.Of(&node{Name: "a", Next: &node{Name: "b"}}); got != 2*int64(unsafe.Sizeof(node{}))+2 {
		t.Errorf("recursive: %d", got)
	}
}

// TestOfPodsNearTheHeap: for pods decoded from the server's JSON, each
// holding its own strings, the estimate is within a quarter of what the
// heap grew by to hold them.
func TestOfPodsNearTheHeap(t *testing.T) {
	const n = 3000
	raw := make([][]byte, n)
	for i := range raw {
		p := bench.Pod(i, bench.PodOptions{Labels: bench.LabelsStatefulSet})
		p.ManagedFields = nil
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		raw[i] = b
	}
	pods := make([]*corev1.Pod, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i, b := range raw {
		pods[i] = new(corev1.Pod)
		if err := json.Unmarshal(b, pods[i]); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	var est int64
	for _, p := range pods {
		est += objsize.Of(p)
	}
	runtime.KeepAlive(pods)
	runtime.KeepAlive(raw) // not freed between the two readings
	ratio := float64(est) / float64(heap)
	t.Logf("%d pods: estimate %d bytes (%d a pod), heap grew %d (%d a pod): ratio %.2f", n, est, est/n, heap, heap/n, ratio)
	if ratio < 0.75 || ratio > 1.25 {
		t.Errorf("estimate %.2fx the heap, want within a quarter", ratio)
	}
}

func BenchmarkOfPod(b *testing.B) {
	p := bench.Pod(1, bench.PodOptions{})
	p.ManagedFields = nil
	b.ReportAllocs()
	for b.Loop() {
		objsize.Of(p)
	}
}
