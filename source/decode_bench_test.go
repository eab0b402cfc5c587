package source

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	restclientwatch "k8s.io/client-go/rest/watch"
	sigsjson "sigs.k8s.io/json"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// benchPod is a pod as the API server sends it for a controller-made
// workload: labels, owner, two containers with resources and env, status
// with conditions, and managedFields for two managers (~4.5 KB of JSON).
func benchPod(i int) *corev1.Pod {
	now := metav1.NewTime(time.Unix(1700000000, 0).UTC())
	fields := `{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"0000-1111\"}":{}}},` +
		`"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:env":{},"f:image":{},"f:name":{},"f:resources":{}}}},` +
		`"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:status":{},"f:type":{}}},"f:phase":{},"f:podIP":{}}}`
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("web-7d4b9c8f5d-%05d", i), Namespace: "shop", UID: "6f1c2d3e-0000-4000-8000-00000000abcd",
			ResourceVersion: fmt.Sprint(1000 + i), CreationTimestamp: now,
			Labels:          map[string]string{"app": "web", "pod-template-hash": "7d4b9c8f5d"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d4b9c8f5d", UID: "0000-1111"}},
		},
		Spec: corev1.PodSpec{
			NodeName: "node-17", ServiceAccountName: "default", RestartPolicy: corev1.RestartPolicyAlways,
			Containers: []corev1.Container{
				{Name: "app", Image: "registry.example.com/shop/web:1.42.0", Args: []string{"--port=8080", "--log=json"},
					Env: []corev1.EnvVar{{Name: "MODE", Value: "production"}, {Name: "REGION", Value: "eu-west-1"}},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")}},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}},
				{Name: "sidecar", Image: "registry.example.com/proxy:2.1", Args: []string{"--upstream=127.0.0.1:8080"}},
			},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: "10.0.3.17", HostIP: "192.168.1.17", StartTime: &now,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			},
		},
	}
	for _, m := range []string{"kube-controller-manager", "kubelet"} {
		p.ManagedFields = append(p.ManagedFields, metav1.ManagedFieldsEntry{
			Manager: m, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)},
		})
	}
	return p
}

// wireEvent is a watch event as the API server encodes it: the type,
// then the object (metav1.WatchEvent's field order).
type wireEvent struct {
	Type   watch.EventType `json:"type"`
	Object any             `json:"object"`
}

// watchStream is n MODIFIED events of different pods, encoded as an API
// server writes a JSON watch stream.
func watchStream(b *testing.B, n int, pod func(int) *corev1.Pod) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i := range n {
		if err := enc.Encode(wireEvent{Type: watch.Modified, Object: pod(i)}); err != nil {
			b.Fatal(err)
		}
	}
	return buf.Bytes()
}

// BenchmarkDecodeWatchEvent decodes the same JSON watch stream (1000
// MODIFIED pod events, with managedFields as the API server sends them, and
// without) into *corev1.Pod with this package's single-pass
// decoder and with the decoders client-go's typed clientset uses for a
// watch (the JSON framer, the WatchEvent decoder, then the object decoder
// from kubernetes/scheme), without the channel of either watcher. ns/event
// is the time per event.
func BenchmarkDecodeWatchEvent(b *testing.B) {
	trimmed := func(i int) *corev1.Pod {
		p := benchPod(i)
		p.ManagedFields = nil
		return p
	}
	for _, tc := range []struct {
		name string
		pod  func(int) *corev1.Pod
	}{{"pod", benchPod}, {"pod-without-managedFields", trimmed}} {
		b.Run(tc.name, func(b *testing.B) { benchmarkDecode(b, tc.pod) })
	}
}

func benchmarkDecode(b *testing.B, pod func(int) *corev1.Pod) {
	const n = 1000
	data := watchStream(b, n, pod)
	b.Logf("%d bytes per event", len(data)/n)
	perEvent := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		b.SetBytes(int64(len(data)))
	}
	b.Run("source", func(b *testing.B) {
		b.ReportAllocs()
		src := &restSource[*corev1.Pod]{gvk: corev1.SchemeGroupVersion.WithKind("Pod")}
		r := bytes.NewReader(data)
		for b.Loop() {
			r.Reset(data)
			w := &restWatcher[*corev1.Pod]{src: src, dec: sigsjson.NewDecoderCaseSensitivePreserveInts(r)}
			for range n {
				ev, err := w.decode()
				if err != nil || ev.Object == nil {
					b.Fatal(err)
				}
			}
		}
		perEvent(b)
	})
	b.Run("client-go", func(b *testing.B) {
		b.ReportAllocs()
		neg := runtime.NewClientNegotiator(clientgoscheme.Codecs.WithoutConversion(), schema.GroupVersion{Version: "v1"})
		objDec, streamDec, framer, err := neg.StreamDecoder(runtime.ContentTypeJSON, nil)
		if err != nil {
			b.Fatal(err)
		}
		r := bytes.NewReader(data)
		for b.Loop() {
			r.Reset(data)
			d := restclientwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(io.NopCloser(r)), streamDec), objDec)
			for range n {
				_, obj, err := d.Decode()
				if err != nil {
					b.Fatal(err)
				}
				if _, ok := obj.(*corev1.Pod); !ok {
					b.Fatalf("decoded a %T", obj)
				}
			}
		}
		perEvent(b)
	})
}

// TestDecodeMatchesClientGo: on the benchmark's stream, the single-pass
// decoder gives exactly the pods client-go's decoders give.
func TestDecodeMatchesClientGo(t *testing.T) {
	const n = 20
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i := range n {
		if err := enc.Encode(wireEvent{Type: watch.Modified, Object: benchPod(i)}); err != nil {
			t.Fatal(err)
		}
	}
	src := &restSource[*corev1.Pod]{gvk: corev1.SchemeGroupVersion.WithKind("Pod")}
	w := &restWatcher[*corev1.Pod]{src: src, dec: sigsjson.NewDecoderCaseSensitivePreserveInts(bytes.NewReader(buf.Bytes()))}
	neg := runtime.NewClientNegotiator(clientgoscheme.Codecs.WithoutConversion(), schema.GroupVersion{Version: "v1"})
	objDec, streamDec, framer, err := neg.StreamDecoder(runtime.ContentTypeJSON, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := restclientwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(io.NopCloser(bytes.NewReader(buf.Bytes()))), streamDec), objDec)
	for i := range n {
		ev, err := w.decode()
		if err != nil {
			t.Fatal(err)
		}
		typ, obj, err := d.Decode()
		if err != nil {
			t.Fatal(err)
		}
		want, ok := obj.(*corev1.Pod)
		if !ok || typ != ev.Type {
			t.Fatalf("event %d: client-go decoded %s %T, we %s", i, typ, obj, ev.Type)
		}
		if !apiequality.Semantic.DeepEqual(want, ev.Object) {
			t.Errorf("event %d: pods differ:\nclient-go %+v\nsource    %+v", i, want, ev.Object)
		}
	}
}
