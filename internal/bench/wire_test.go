package bench_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	goruntime "runtime"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	restclientwatch "k8s.io/client-go/rest/watch"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/internal/bench"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// streamEvents is the number of distinct events in a replayed stream.
const streamEvents = 1000

// wireStream returns a watch stream of streamEvents MODIFIED events of
// pods as the API server sends them (with managedFields, labelled as a
// Deployment's), in format.
func wireStream(b *testing.B, format string) (data []byte, contentType string) {
	b.Helper()
	pods := bench.Pods(streamEvents, bench.PodOptions{ManagedFields: true, Labels: bench.LabelsDeployment})
	var err error
	if format == "protobuf" {
		data, err = bench.ProtobufWatchStream(watch.Modified, pods)
		contentType = runtime.ContentTypeProtobuf + ";stream=watch"
	} else {
		data, err = bench.JSONWatchStream(watch.Modified, pods)
		contentType = runtime.ContentTypeJSON
	}
	if err != nil {
		b.Fatal(err)
	}
	return data, contentType
}

// emptyList is the JSON of an empty pod list at resourceVersion 1.
var emptyList = []byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`)

// listWatchNoStream is client-go's ListWatch that tells the reflector not
// to try a streaming list, as our side is told by NoWatchList.
type listWatchNoStream struct{ *clientcache.ListWatch }

func (listWatchNoStream) IsWatchListSemanticsUnSupported() bool { return true }

// startWire runs an informer of impl whose requests replay answers, with
// one handler calling hit.
func startWire(b *testing.B, impl string, replay *bench.Replay, protobuf bool, workers int, hit func(), opts typed.Options[*corev1.Pod]) *running {
	return startWireWith(b, impl, replay, protobuf, workers, hit, settings{ours: opts})
}

// startWireWith is startWire with settings for both sides.
func startWireWith(b *testing.B, impl string, replay *bench.Replay, protobuf bool, workers int, hit func(), set settings) *running {
	b.Helper()
	cfg := replay.Config(protobuf)
	opts := set.ours
	opts.KeepManagedFields = opts.KeepManagedFields || set.keepManagedFields
	if impl == "ours" {
		src, err := source.FromConfig[*corev1.Pod](cfg, source.RESTOptions{Mapper: bench.Mapper(), Protobuf: protobuf, DecodeWorkers: workers,
			KeepManagedFields: set.keepManagedFields})
		if err != nil {
			b.Fatal(err)
		}
		opts.NoWatchList = true
		r, _ := runOurs(b, src, opts, 1, hit)
		return r
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	lw := listWatchNoStream{clientcache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", "", fields.Everything())}
	return startWith(b, "client-go", lw, 1, hit, set)
}

// BenchmarkWire measures watch events per second end to end: a framed
// watch stream replayed from bytes in memory through an HTTP client, each
// side's decoder and its informer to one handler. One op is one event.
// The events carry managedFields, as the API server sends them; mf=keep
// has both sides keep them (ours with KeepManagedFields, client-go by
// default), mf=drop has both drop them (ours by default, cutting them from
// the bytes; client-go decodes them and its users' transform clears them).
func BenchmarkWire(b *testing.B) {
	for _, format := range []string{"json", "protobuf"} {
		data, contentType := wireStream(b, format)
		for _, mf := range []string{"keep", "drop"} {
			set := settings{keepManagedFields: mf == "keep", dropManagedFields: mf == "drop"}
			for _, impl := range sides(impls...) {
				b.Run(fmt.Sprintf("format=%s/mf=%s/impl=%s", format, mf, impl), func(b *testing.B) {
					benchmarkWire(b, impl, data, contentType, format == "protobuf", 0, set)
				})
			}
		}
	}
}

func benchmarkWire(b *testing.B, impl string, data []byte, contentType string, protobuf bool, workers int, set settings) {
	replay := &bench.Replay{List: emptyList, Watch: data, WatchType: contentType, Repeat: (b.N + streamEvents - 1) / streamEvents}
	c := newCounter(b.N)
	b.ReportAllocs()
	b.ResetTimer()
	r := startWireWith(b, impl, replay, protobuf, workers, c.hit, set)
	<-c.done
	b.StopTimer()
	r.stop()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkWireParallel is BenchmarkWire for JSON with our decoding spread
// over two goroutines (source.RESTOptions.DecodeWorkers), events still
// committed in stream order, at GOMAXPROCS 1 and 2; client-go, which
// decodes on one goroutine, beside it. Both drop managedFields.
func BenchmarkWireParallel(b *testing.B) {
	data, contentType := wireStream(b, "json")
	for _, procs := range []int{1, 2} {
		for _, impl := range sides(impls...) {
			b.Run(fmt.Sprintf("procs=%d/impl=%s", procs, impl), func(b *testing.B) {
				defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(procs))
				benchmarkWire(b, impl, data, contentType, false, 2, settings{dropManagedFields: true})
			})
		}
	}
}

// BenchmarkDecodeSpread is the ceiling under BenchmarkWireParallel's
// speed-up on this machine at the time it runs: the same JSON watch
// events decoded by two independent watchers of our REST source, each on
// its own goroutine and its own replayed stream, with nothing shared,
// ordered or cached, at GOMAXPROCS 1 and 2. One op is one event; the
// report divides the two rates.
func BenchmarkDecodeSpread(b *testing.B) {
	if !runs("") {
		b.Skip("a benchmark of our source alone") // a return would print a result line
	}
	data, contentType := wireStream(b, "json")
	for _, procs := range []int{1, 2} {
		b.Run(fmt.Sprintf("procs=%d", procs), func(b *testing.B) {
			defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(procs))
			ctx := context.Background()
			half := [2]int{b.N / 2, b.N - b.N/2}
			var ws [2]source.Watcher[*corev1.Pod]
			for i := range ws {
				replay := &bench.Replay{List: emptyList, Watch: data, WatchType: contentType, Repeat: (half[i] + streamEvents) / streamEvents}
				src, err := source.FromConfig[*corev1.Pod](replay.Config(false), source.RESTOptions{Mapper: bench.Mapper()})
				if err != nil {
					b.Fatal(err)
				}
				if ws[i], err = src.Watch(ctx, metav1.ListOptions{ResourceVersion: "1"}); err != nil {
					b.Fatal(err)
				}
				defer ws[i].Stop()
			}
			var errs [2]error
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for i := range ws {
				wg.Go(func() {
					for range half[i] {
						if ev, err := ws[i].Next(ctx); err != nil || ev.Object == nil {
							errs[i] = fmt.Errorf("event: %v, %w", ev.Type, err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			if err := errors.Join(errs[:]...); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkDecodeWatchEvent measures one JSON watch event decoded, frame
// to *corev1.Pod, for pods as the API server sends them (with
// managedFields): our REST source's watcher against the decoders
// client-go's typed clientset stacks for a watch (the JSON framer, the
// WatchEvent decoder, the object decoder of kubernetes/scheme), on the
// same bytes and without either side's channel. One op is one event.
// mf=keep: ours decodes managedFields too, as client-go does (equal
// work); mf=drop: ours cuts them from the bytes first, its default.
func BenchmarkDecodeWatchEvent(b *testing.B) {
	data, contentType := wireStream(b, "json")
	for _, mf := range []string{"keep", "drop"} {
		runSide(b, "ours", func(b *testing.B) {
			replay := &bench.Replay{List: emptyList, Watch: data, WatchType: contentType, Repeat: (b.N + streamEvents - 1) / streamEvents}
			src, err := source.FromConfig[*corev1.Pod](replay.Config(false), source.RESTOptions{Mapper: bench.Mapper(), KeepManagedFields: mf == "keep"})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			w, err := src.Watch(ctx, metav1.ListOptions{ResourceVersion: "1"})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Stop()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if ev, err := w.Next(ctx); err != nil || ev.Object == nil {
					b.Fatal(err)
				}
			}
		}, "mf="+mf)
	}
	runSide(b, "client-go", func(b *testing.B) {
		neg := runtime.NewClientNegotiator(clientgoscheme.Codecs.WithoutConversion(), schema.GroupVersion{Version: "v1"})
		objDec, streamDec, framer, err := neg.StreamDecoder(runtime.ContentTypeJSON, nil)
		if err != nil {
			b.Fatal(err)
		}
		body := io.NopCloser(bytes.NewReader(bytes.Repeat(data, (b.N+streamEvents-1)/streamEvents)))
		b.ReportAllocs()
		b.ResetTimer()
		d := restclientwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(body), streamDec), objDec)
		for range b.N {
			if _, obj, err := d.Decode(); err != nil {
				b.Fatal(err)
			} else if _, ok := obj.(*corev1.Pod); !ok {
				b.Fatalf("decoded a %T", obj)
			}
		}
	}, "mf=keep") // client-go decodes them; its transform would drop them after
}
