package warm_test

import (
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/internal/bench"
	"github.com/typedinformer/informer/internal/warm"
)

// BenchmarkLoad loads a saved cache of 20,000 realistic pods; -cpu 1,2
// compares the decoding on one goroutine with the decoding spread over
// two.
//
//	go test -run '^$' -bench BenchmarkLoad -cpu 1,2 -count 6 ./internal/warm/
func BenchmarkLoad(b *testing.B) {
	id := warm.Identity{Resource: "pods", Type: warm.TypeName[*corev1.Pod]()}
	path := filepath.Join(b.TempDir(), "pods.cache")
	pods := bench.Pods(20000, bench.PodOptions{Labels: bench.LabelsDeployment})
	n, err := warm.Save(path, id, "42", pods)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(n)
	b.ReportAllocs()
	for b.Loop() {
		f, err := warm.Open[*corev1.Pod](path, id)
		if err != nil {
			b.Fatal(err)
		}
		got := 0
		if err := f.Load(func(*corev1.Pod) error { got++; return nil }); err != nil {
			b.Fatal(err)
		}
		f.Close()
		if got != len(pods) {
			b.Fatalf("loaded %d pods, want %d", got, len(pods))
		}
	}
}
