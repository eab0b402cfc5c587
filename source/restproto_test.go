package source

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
)

// protoStream encodes events as the API server writes a protobuf watch.
func protoStream(t testing.TB, events ...watch.Event) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	enc := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion)
	var out bytes.Buffer
	fw := info.StreamSerializer.Framer.NewFrameWriter(&out)
	for _, ev := range events {
		var obj, frame bytes.Buffer
		if err := enc.Encode(ev.Object, &obj); err != nil {
			t.Fatal(err)
		}
		we := &metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: obj.Bytes()}}
		if err := info.StreamSerializer.Encode(we, &frame); err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write(frame.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes()
}

func protoWatch(data []byte, cutMF bool) *protoWatcher[*corev1.Pod] {
	rs := &restSource[*corev1.Pod]{gvk: corev1.SchemeGroupVersion.WithKind("Pod"), cutMF: cutMF}
	ctx, cancel := context.WithCancel(context.Background())
	body := io.NopCloser(bytes.NewReader(data))
	read := &recordingReader{r: body}
	p := &protoSource[*corev1.Pod]{rest: rs, newT: func() *corev1.Pod { return &corev1.Pod{} }}
	return &protoWatcher[*corev1.Pod]{src: p, ctx: ctx, cancel: cancel, body: body, read: read, in: newBufReader(read)}
}

// TestProtoWatch: pods, a bookmark and an ERROR event decode as the server
// sent them, managedFields cut when asked; the end of the stream closes it.
func TestProtoWatch(t *testing.T) {
	a, b := benchPod(1), benchPod(2)
	bookmark := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "77"}}
	gone := &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old"}
	data := protoStream(t, watch.Event{Type: watch.Added, Object: a}, watch.Event{Type: watch.Modified, Object: b},
		watch.Event{Type: watch.Bookmark, Object: bookmark}, watch.Event{Type: watch.Error, Object: gone})
	for _, cut := range []bool{false, true} {
		w := protoWatch(data, cut)
		ctx := context.Background()
		for i, want := range []watch.Event{{Type: watch.Added, Object: a}, {Type: watch.Modified, Object: b}, {Type: watch.Bookmark, Object: bookmark}} {
			ev, err := w.Next(ctx)
			if err != nil {
				t.Fatalf("cut %v, event %d: %v", cut, i, err)
			}
			p := want.Object.(*corev1.Pod).DeepCopy()
			p.TypeMeta = metav1.TypeMeta{}
			if cut {
				p.ManagedFields = nil
			}
			if diff := cmp.Diff(p, ev.Object); diff != "" || ev.Type != want.Type {
				t.Errorf("cut %v, event %d: %s (-want +got):\n%s", cut, i, ev.Type, diff)
			}
		}
		if _, err := w.Next(ctx); !apierrors.IsResourceExpired(err) {
			t.Errorf("ERROR event: %v, want the 410", err)
		}
		if _, err := w.Next(ctx); !errors.Is(err, ErrWatchClosed) {
			t.Errorf("at the end: %v, want ErrWatchClosed", err)
		}
		w.Stop()
	}
}

// TestProtoWatchBad: a frame of another kind is ErrWrongType; a frame that
// is not protobuf is ErrMalformed; a stream cut within a frame is closed;
// a JSON answer is decoded as JSON.
func TestProtoWatchBad(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}}
	good := protoStream(t, watch.Event{Type: watch.Added, Object: benchPod(1)})
	for _, tc := range []struct {
		name string
		data []byte
		want func(error) bool
	}{
		{"wrong kind", protoStream(t, watch.Event{Type: watch.Added, Object: svc}), func(err error) bool { return errors.Is(err, ErrWrongType) }},
		{"not protobuf", []byte("\x00\x00\x00\x05\xff\xff\xff\xff\xff"), func(err error) bool { return errors.Is(err, ErrMalformed) }},
		{"no envelope", append([]byte("\x00\x00\x00\x06"), 0x0a, 0x01, 'A', 0x12, 0x01, 0x00), func(err error) bool { return errors.Is(err, ErrMalformed) }},
		{"cut", good[:len(good)-10], func(err error) bool { return errors.Is(err, ErrWatchClosed) }},
		{"huge length", []byte("\xff\xff\xff\xff"), func(err error) bool { return errors.Is(err, ErrMalformed) }},
	} {
		w := protoWatch(tc.data, false)
		if _, err := w.Next(context.Background()); !tc.want(err) {
			t.Errorf("%s: %v", tc.name, err)
		}
		w.Stop()
	}
	w := protoWatch([]byte(`{"type":"ADDED","object":{"metadata":{"name":"a","namespace":"ns","resourceVersion":"5"}}}`+"\n"), false)
	defer w.Stop()
	if ev, err := w.Next(context.Background()); err != nil || ev.Object.Name != "a" {
		t.Errorf("JSON answer: %v, %v", ev.Object, err)
	}
}

// FuzzProtoFrame: any bytes after the length prefix give an event or an
// error, never a panic.
func FuzzProtoFrame(f *testing.F) {
	f.Add(protoStream(f, watch.Event{Type: watch.Added, Object: benchPod(1)}))
	f.Add(protoStream(f, watch.Event{Type: watch.Error, Object: &metav1.Status{Code: 500}}))
	f.Add([]byte("\x00\x00\x00\x02\x0a\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		w := protoWatch(data, true)
		defer w.Stop()
		for range 3 {
			if _, err := w.Next(context.Background()); err != nil {
				return
			}
		}
	})
}
