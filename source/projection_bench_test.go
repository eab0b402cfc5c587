package source_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/bench"
	"github.com/typedinformer/informer/source"
)

// BenchmarkDecodeProjection: one watch event of a server pod decoded into
// the full corev1.Pod and into a projection (metadata, node, phase and
// conditions), from JSON and protobuf, managedFields dropped in both.
func BenchmarkDecodeProjection(b *testing.B) {
	pods := bench.Pods(streamPods, bench.PodOptions{Labels: bench.LabelsDeployment, ManagedFields: true})
	for _, format := range []string{"json", "protobuf"} {
		var data []byte
		var err error
		if format == "json" {
			data, err = bench.JSONWatchStream(watch.Modified, pods)
		} else {
			data, err = bench.ProtobufWatchStream(watch.Modified, pods)
		}
		if err != nil {
			b.Fatal(err)
		}
		b.Run("format="+format+"/type=pod", func(b *testing.B) { decodeEvents[*corev1.Pod](b, data, format) })
		b.Run("format="+format+"/type=summary", func(b *testing.B) { decodeEvents[*bench.PodSummary](b, data, format) })
	}
}

const streamPods = 200

func decodeEvents[T cache.Object](b *testing.B, data []byte, format string) {
	ct := runtime.ContentTypeJSON
	if format == "protobuf" {
		ct = runtime.ContentTypeProtobuf
	}
	replay := &bench.Replay{List: []byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`), Watch: data, WatchType: ct, Repeat: (b.N + streamPods - 1) / streamPods}
	src, err := source.FromConfig[T](replay.Config(format == "protobuf"), source.RESTOptions{Mapper: bench.Mapper(), Protobuf: format == "protobuf"})
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
		if _, err := w.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
