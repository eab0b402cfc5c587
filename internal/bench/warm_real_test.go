package bench_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/internal/bench"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// BenchmarkRealServerWarmStart measures a warm restart (typed.Options.
// WarmStart) against the server of -bench.kubeconfig: a cold start (a
// streaming list, protobuf), the save when it stops, then a start from the
// saved file, each timed to synced. It reports both times, their ratio,
// the file's size, the save's time and the lists the warm start sent
// (want 0). There is no client-go row: client-go has no warm start.
func BenchmarkRealServerWarmStart(b *testing.B) {
	srv := realServerOf(b)
	if *implFlag == "client-go" {
		b.Skip("client-go has no warm start")
	}
	b.Run("pods="+srv.podsLabel(), func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "pods.cache")
		var cold, warm, save time.Duration
		var lists, bytes int
		for b.Loop() {
			os.Remove(path)
			c, stop := warmRun(b, srv, path)
			cold += c
			start := time.Now()
			stop()
			save += time.Since(start)
			w, stop2 := warmRun(b, srv, path)
			warm += w
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			bytes = int(fi.Size())
			stop2()
			lists = warmLists
		}
		n := float64(b.N)
		b.ReportMetric(cold.Seconds()/n, "cold-s")
		b.ReportMetric(warm.Seconds()/n, "warm-s")
		b.ReportMetric(warm.Seconds()/cold.Seconds(), "warm/cold")
		b.ReportMetric(save.Seconds()/n, "save-s")
		b.ReportMetric(float64(bytes)/(1<<20), "file-MiB")
		b.ReportMetric(float64(lists), "warm-lists")
	})
}

// warmLists is the lists and streaming lists of the last warmRun.
var warmLists int

// warmRun starts an informer of every pod with a warm start at path and
// returns its time to synced and the function that stops it (and saves).
func warmRun(b *testing.B, srv *realServer, path string) (time.Duration, func()) {
	b.Helper()
	src, err := source.FromConfig[*corev1.Pod](srv.config(true, nil), source.RESTOptions{Mapper: bench.Mapper(), Protobuf: true})
	if err != nil {
		b.Fatal(err)
	}
	inf, err := typed.NewInformer[*corev1.Pod](src, typed.Options[*corev1.Pod]{
		WarmStart:    &typed.WarmStart{Path: path, Interval: -1},
		ErrorHandler: func(err error) { b.Log(err) },
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// Each start begins from a collected heap, as a restarted process
	// does: the cache of the run before must not lend this one the large
	// heap goal it left, which spares a load most of its collections.
	runtime.GC()
	start := time.Now()
	go func() { done <- inf.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Minute)
	defer wcancel()
	if err := inf.WaitForSync(wctx); err != nil {
		cancel()
		b.Fatal(err)
	}
	took := time.Since(start)
	if got := inf.Store().Len(); got != srv.pods {
		b.Errorf("synced with %d pods, the server holds %d", got, srv.pods)
	}
	s := inf.Status().Stats
	warmLists = s.Lists + s.WatchLists
	return took, func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}
}
