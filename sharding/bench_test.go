package sharding_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	upstream "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"

	"github.com/typedinformer/informer/sharding"
)

// benchPods are pods with random UIDs, the same for both matchers.
func benchPods(n int) []*corev1.Pod {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]*corev1.Pod, n)
	for i := range out {
		p := &corev1.Pod{}
		p.Name = fmt.Sprintf("pod-%d", i)
		p.UID = types.UID(fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint64()&0xffffffffffff))
		out[i] = p
	}
	return out
}

// BenchmarkContains compares Shard.Contains with the API machinery's
// Matches on the same 1,024 pods (one op: all of them, both ways) and the
// same range (the middle third), and reports the time per object of each
// and how many times faster Contains is (x-faster).
func BenchmarkContains(b *testing.B) {
	pods := benchPods(1024)
	rs, err := sharding.Split(1, 1, 1)
	if err != nil {
		b.Fatal(err)
	}
	s := sharding.Shard{Key: sharding.ByUID, Range: rs[1]}
	sel := upstream.NewSelector(upstream.ShardRangeRequirement{Key: "object.metadata.uid",
		Start: fmt.Sprintf("0x%016x", rs[1].Start), End: fmt.Sprintf("0x%016x", rs[1].End)})
	var ours, theirs time.Duration
	var n1, n2 int
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		for _, p := range pods {
			if s.Contains(p) {
				n1++
			}
		}
		t1 := time.Now()
		for _, p := range pods {
			ok, err := sel.Matches(p)
			if err != nil {
				b.Fatal(err)
			}
			if ok {
				n2++
			}
		}
		ours += t1.Sub(t0)
		theirs += time.Since(t1)
	}
	if n1 != n2 {
		b.Fatalf("Contains matched %d, Matches %d", n1, n2)
	}
	if ours > 0 {
		b.ReportMetric(float64(ours)/float64(b.N*len(pods)), "contains-ns/obj")
		b.ReportMetric(float64(theirs)/float64(b.N*len(pods)), "matches-ns/obj")
		b.ReportMetric(float64(theirs)/float64(ours), "x-faster")
	}
}

// BenchmarkContainsOnly is Shard.Contains alone: its allocations (none)
// and time per object.
func BenchmarkContainsOnly(b *testing.B) {
	pods := benchPods(1024)
	s := sharding.Shard{Key: sharding.ByUID, Range: sharding.Range{End: 1 << 63}}
	n := 0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if s.Contains(pods[i%len(pods)]) {
			n++
		}
	}
	_ = n
}

// BenchmarkUpstreamMatches is the API machinery's Matches alone.
func BenchmarkUpstreamMatches(b *testing.B) {
	pods := benchPods(1024)
	sel := upstream.NewSelector(upstream.ShardRangeRequirement{Key: "object.metadata.uid", Start: "0x0000000000000000", End: "0x8000000000000000"})
	n := 0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if ok, _ := sel.Matches(pods[i%len(pods)]); ok {
			n++
		}
	}
	_ = n
}
