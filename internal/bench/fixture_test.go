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

// TestPodLabels: each label layout has the label sets, owners and app
// selectivity its documentation says, and no two pods of a namespace share
// a name.
func TestPodLabels(t *testing.T) {
	const n = 10000
	for _, tc := range []struct {
		labels     bench.Labels
		sets, apps int
		owner      string
	}{
		{bench.LabelsFriendly, 10, 10, "ReplicaSet"},
		{bench.LabelsDeployment, 500, bench.Apps, "ReplicaSet"},
		{bench.LabelsStatefulSet, n, bench.Apps, "StatefulSet"},
	} {
		t.Run(tc.labels.String(), func(t *testing.T) {
			pods := bench.Pods(n, bench.PodOptions{Labels: tc.labels})
			if got := bench.LabelSets(pods); got != tc.sets {
				t.Errorf("%d label sets, want %d", got, tc.sets)
			}
			names := map[string]bool{}
			apps := map[string]int{}
			owners := map[string]map[string]bool{} // owner -> its pods' pod-template-hash or revision
			for _, p := range pods {
				k := p.Namespace + "/" + p.Name
				if names[k] {
					t.Fatalf("two pods named %s", k)
				}
				names[k] = true
				apps[p.Labels["app"]]++
				o := p.OwnerReferences[0]
				if o.Kind != tc.owner {
					t.Fatalf("%s: owner kind %s, want %s", k, o.Kind, tc.owner)
				}
				ok := p.Namespace + "/" + o.Name
				if owners[ok] == nil {
					owners[ok] = map[string]bool{}
				}
				owners[ok][p.Labels["pod-template-hash"]+p.Labels["controller-revision-hash"]] = true
			}
			if len(apps) != tc.apps {
				t.Errorf("%d apps, want %d", len(apps), tc.apps)
			}
			if got := apps["app-3"]; got != n/tc.apps {
				t.Errorf("app=app-3 has %d pods, want %d", got, n/tc.apps)
			}
			for o, hashes := range owners {
				if len(hashes) != 1 {
					t.Errorf("owner %s: pods with %d hashes, want 1", o, len(hashes))
				}
			}
			if size := len(mustJSON(t, pods[1])); size < 3600 || size > 4800 {
				t.Errorf("pod is %d bytes of JSON, want about 4 KB", size)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
