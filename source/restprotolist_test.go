package source

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// protoBody encodes obj as the API server writes a protobuf body.
func protoBody(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	var b bytes.Buffer
	if err := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).Encode(obj, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func protoPods(cutMF bool) *protoSource[*corev1.Pod] {
	rs := &restSource[*corev1.Pod]{gvk: corev1.SchemeGroupVersion.WithKind("Pod"), cutMF: cutMF}
	return &protoSource[*corev1.Pod]{rest: rs, newT: func() *corev1.Pod { return &corev1.Pod{} }}
}

// TestProtoListDecodesItemByItem: a protobuf list body decodes into the
// items client-go's codecs encoded, in order, with the list's version,
// continue token and shard echo; managedFields are gone when the source
// drops them, there when it keeps them.
func TestProtoListDecodesItemByItem(t *testing.T) {
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "77", Continue: "next", ShardInfo: &metav1.ShardInfo{Selector: "s"}}}
	for i := range 5 {
		list.Items = append(list.Items, *benchPod(i))
	}
	body := protoBody(t, list)
	for _, cut := range []bool{false, true} {
		got, err := protoPods(cut).decodeList(body)
		if err != nil {
			t.Fatalf("cut %v: %v", cut, err)
		}
		if got.ResourceVersion != "77" || got.Continue != "next" || got.ShardInfo == nil || got.ShardInfo.Selector != "s" {
			t.Errorf("cut %v: list meta %q %q %v", cut, got.ResourceVersion, got.Continue, got.ShardInfo)
		}
		if len(got.Items) != len(list.Items) {
			t.Fatalf("cut %v: %d items, want %d", cut, len(got.Items), len(list.Items))
		}
		for i := range list.Items {
			want := list.Items[i].DeepCopy()
			want.TypeMeta = metav1.TypeMeta{}
			if cut {
				want.ManagedFields = nil
			}
			if diff := cmp.Diff(want, got.Items[i]); diff != "" {
				t.Errorf("cut %v, item %d (-want +got):\n%s", cut, i, diff)
			}
		}
	}
}

// TestProtoListRefusesWhatIsNotTheList: a list of another kind is
// ErrWrongType; every truncation of a good body is an error or a list of
// the body's own items (the envelope's last fields may be cut off whole),
// never a panic or an item that was not sent.
func TestProtoListRefusesWhatIsNotTheList(t *testing.T) {
	svcs := protoBody(t, &corev1.ServiceList{Items: []corev1.Service{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}})
	if _, err := protoPods(true).decodeList(svcs); !errors.Is(err, ErrWrongType) {
		t.Errorf("a ServiceList: %v, want ErrWrongType", err)
	}
	list := &corev1.PodList{Items: []corev1.Pod{*benchPod(1), *benchPod(2)}}
	body := protoBody(t, list)
	for n := range len(body) {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			l, err := protoPods(false).decodeList(body[:n])
			if err != nil {
				return
			}
			if len(l.Items) > len(list.Items) {
				t.Fatalf("%d of %d bytes: %d items", n, len(body), len(l.Items))
			}
			for i, got := range l.Items {
				want := list.Items[i].DeepCopy()
				want.TypeMeta = metav1.TypeMeta{}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%d of %d bytes: item %d (-sent +decoded):\n%s", n, len(body), i, diff)
				}
			}
		})
	}
}
