package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	restclientwatch "k8s.io/client-go/rest/watch"

	"github.com/typedinformer/informer/internal/bench"
	"github.com/typedinformer/informer/source"
)

// TestPodSize: the benchmark pod is about 4 KB of JSON, and its
// managedFields about 2.8 KB more, as the figures say.
func TestPodSize(t *testing.T) {
	plain, err := json.Marshal(bench.Pod(1, bench.PodOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	full, err := json.Marshal(bench.Pod(1, bench.PodOptions{ManagedFields: true}))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pod: %d bytes of JSON, %d with managedFields", len(plain), len(full))
	if n := len(plain); n < 3600 || n > 4600 {
		t.Errorf("pod is %d bytes of JSON, want about 4 KB", n)
	}
	if n := len(full) - len(plain); n < 2500 || n > 3100 {
		t.Errorf("managedFields are %d bytes of JSON, want about 2.8 KB", n)
	}
}

// TestStreamsDecode: both sides decode the replayed JSON and protobuf
// watch streams into the same pods the streams were made from.
func TestStreamsDecode(t *testing.T) {
	pods := bench.Pods(5, bench.PodOptions{ManagedFields: true})
	for _, format := range []string{"json", "protobuf"} {
		t.Run(format, func(t *testing.T) {
			var data []byte
			var err error
			contentType := runtime.ContentTypeJSON
			if format == "protobuf" {
				data, err = bench.ProtobufWatchStream(watch.Modified, pods)
				contentType = runtime.ContentTypeProtobuf + ";stream=watch"
			} else {
				data, err = bench.JSONWatchStream(watch.Modified, pods)
			}
			if err != nil {
				t.Fatal(err)
			}
			// Ours, through the REST source over the replaying transport.
			replay := &bench.Replay{List: emptyList, Watch: data, WatchType: contentType}
			src, err := source.FromConfig[*corev1.Pod](replay.Config(format == "protobuf"), source.RESTOptions{Mapper: bench.Mapper(), Protobuf: format == "protobuf", KeepManagedFields: true})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			w, err := src.Watch(ctx, metav1.ListOptions{ResourceVersion: "1"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			// client-go's decoders on the same bytes.
			neg := runtime.NewClientNegotiator(clientgoscheme.Codecs.WithoutConversion(), schema.GroupVersion{Version: "v1"})
			mediaType := runtime.ContentTypeJSON
			if format == "protobuf" {
				mediaType = runtime.ContentTypeProtobuf
			}
			objDec, streamDec, framer, err := neg.StreamDecoder(mediaType, nil)
			if err != nil {
				t.Fatal(err)
			}
			d := restclientwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(io.NopCloser(bytes.NewReader(data))), streamDec), objDec)
			for i, want := range pods {
				ev, err := w.Next(ctx)
				if err != nil {
					t.Fatalf("ours, event %d: %v", i, err)
				}
				typ, obj, err := d.Decode()
				if err != nil {
					t.Fatalf("client-go, event %d: %v", i, err)
				}
				theirs, ok := obj.(*corev1.Pod)
				if !ok || typ != watch.Modified || ev.Type != watch.Modified {
					t.Fatalf("event %d: ours %s, client-go %s %T", i, ev.Type, typ, obj)
				}
				want := want.DeepCopy()
				want.TypeMeta = metav1.TypeMeta{}
				theirs.TypeMeta = metav1.TypeMeta{}
				if diff := cmp.Diff(want, ev.Object); diff != "" {
					t.Errorf("ours, event %d (-want +got):\n%s", i, diff)
				}
				if diff := cmp.Diff(want, theirs); diff != "" {
					t.Errorf("client-go, event %d (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}
