package source

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

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

// listed decodes a protobuf list body as the source reads one: item by
// item, in random chunks; the items yielded become the list's Items.
func (p *protoSource[T]) listed(body []byte, rng *rand.Rand) (List[T], error) {
	var items []T
	l, err := p.decodeListItems(&chunkReader{b: body, rng: rng}, func(t T) error {
		items = append(items, t)
		return nil
	})
	if err != nil {
		return List[T]{}, err
	}
	if l.Items != nil {
		return List[T]{}, fmt.Errorf("decodeListItems returned %d Items", len(l.Items))
	}
	l.Items = items
	return l, nil
}

// seeded is a random source whose seed the test prints.
func seeded(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 0))
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
	rng := seeded(t)
	for _, cut := range []bool{false, true} {
		got, err := protoPods(cut).listed(body, rng)
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
	rng := seeded(t)
	if _, err := protoPods(true).listed(svcs, rng); !errors.Is(err, ErrWrongType) {
		t.Errorf("a ServiceList: %v, want ErrWrongType", err)
	}
	list := &corev1.PodList{Items: []corev1.Pod{*benchPod(1), *benchPod(2)}}
	body := protoBody(t, list)
	for n := range len(body) {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			l, err := protoPods(false).listed(body[:n], rng)
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

// appendField appends protobuf field num, length-delimited, holding val.
func appendField(b []byte, num int, val []byte) []byte {
	b = binary.AppendUvarint(b, uint64(num)<<3|protoWireBytes)
	b = binary.AppendUvarint(b, uint64(len(val)))
	return append(b, val...)
}

// protoList builds a protobuf list body by hand: the envelope of type
// v1 kind, the list's metadata and the items' bytes as they are.
func protoList(t *testing.T, kind string, meta metav1.ListMeta, items ...[]byte) []byte {
	t.Helper()
	m, err := meta.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	list := appendField(nil, 1, m)
	for _, it := range items {
		list = appendField(list, 2, it)
	}
	typ := appendField(appendField(nil, 1, []byte("v1")), 2, []byte(kind))
	return appendField(appendField(append([]byte(nil), protoMagic...), 1, typ), 2, list)
}

// marshalled is a pod's protobuf message.
func marshalled(t *testing.T, p *corev1.Pod) []byte {
	t.Helper()
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestProtoListItemErrors: an item that names itself and does not decode
// is an Undecodable of the list, which goes on; one that does not name
// itself fails the list after the rest is read; a body cut short or a
// connection that fails is the list's error (malformed, or the
// connection's); yield's error stops the list at once, as it is.
func TestProtoListItemErrors(t *testing.T) {
	rng := seeded(t)
	good := func(name string) []byte {
		return marshalled(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: "3"}})
	}
	meta, _ := (&metav1.ObjectMeta{Namespace: "ns", Name: "bad", ResourceVersion: "4"}).Marshal()
	named := appendField(appendField(nil, 1, meta), 2, []byte{0xff}) // a spec that is not a message
	nameless := appendField(nil, 2, []byte{0xff})

	l, err := protoPods(true).listed(protoList(t, "PodList", metav1.ListMeta{ResourceVersion: "9"}, good("a"), named, good("b")), rng)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 2 || l.Items[0].Name != "a" || l.Items[1].Name != "b" || l.ResourceVersion != "9" {
		t.Errorf("items %v, version %q; want a, b and 9", l.Items, l.ResourceVersion)
	}
	if len(l.Undecodable) != 1 || l.Undecodable[0].Name != "bad" || l.Undecodable[0].Index != 1 || l.Undecodable[0].ResourceVersion != "4" {
		t.Errorf("undecodable %+v, want ns/bad at index 1, version 4", l.Undecodable)
	}

	var yielded []string
	_, err = protoPods(true).decodeListItems(bytes.NewReader(protoList(t, "PodList", metav1.ListMeta{}, good("a"), nameless, good("b"))), func(p *corev1.Pod) error {
		yielded = append(yielded, p.Name)
		return nil
	})
	var u *UndecodableError
	if !errors.As(err, &u) || u.Index != 1 || errors.Is(err, ErrMalformed) || strings.Join(yielded, ",") != "a" {
		t.Errorf("a nameless item: error %v after %v, want an *UndecodableError at index 1 after [a]", err, yielded)
	}

	body := protoList(t, "PodList", metav1.ListMeta{}, good("a"), good("b"))
	broken := errors.New("connection reset")
	_, err = protoPods(true).decodeListItems(io.MultiReader(bytes.NewReader(body[:len(body)-5]), iotestErrReader{broken}), func(*corev1.Pod) error { return nil })
	var serr *Error
	if !errors.As(err, &serr) || serr.Phase != PhaseList || !errors.Is(err, broken) || errors.Is(err, ErrMalformed) {
		t.Errorf("broken connection: error %v, want a list *Error wrapping %v, not malformed", err, broken)
	}
	if _, err := protoPods(true).listed(body[:len(body)-5], rng); !errors.Is(err, ErrMalformed) {
		t.Errorf("a body cut short: %v, want ErrMalformed", err)
	}
	stop := errors.New("stop")
	yielded = nil
	_, err = protoPods(true).decodeListItems(bytes.NewReader(body), func(p *corev1.Pod) error {
		yielded = append(yielded, p.Name)
		return stop
	})
	if err != stop || len(yielded) != 1 {
		t.Errorf("yield's error: got %v after %v, want %v after [a]", err, yielded, stop)
	}

	// A length past what the body holds allocates nothing: it is refused.
	huge := append(append([]byte(nil), protoMagic...), binary.AppendUvarint([]byte{2<<3 | protoWireBytes}, 1<<40)...)
	if _, err := protoPods(true).listed(huge, rng); !errors.Is(err, ErrMalformed) {
		t.Errorf("an object of 1 TiB in a short body: %v, want ErrMalformed", err)
	}
	// The object before its type, or a list of another kind, is refused.
	swapped := appendField(appendField(append([]byte(nil), protoMagic...), 2, nil), 1, appendField(appendField(nil, 1, []byte("v1")), 2, []byte("PodList")))
	if _, err := protoPods(true).listed(swapped, rng); !errors.Is(err, ErrMalformed) {
		t.Errorf("the object before its type: %v, want ErrMalformed", err)
	}
	if _, err := protoPods(true).listed(protoList(t, "ServiceList", metav1.ListMeta{}), rng); !errors.Is(err, ErrWrongType) {
		t.Errorf("a ServiceList: %v, want ErrWrongType", err)
	}
}

// TestProtoListStreams: items are handed over while the body is still
// arriving. The server side sends half the body and then waits for the
// first item; a decoder that read the body whole would never hand one
// over, and the test fails after a minute rather than hang.
func TestProtoListStreams(t *testing.T) {
	list := &corev1.PodList{}
	for i := range 50 {
		list.Items = append(list.Items, *benchPod(i))
	}
	body := protoBody(t, list)
	pr, pw := io.Pipe()
	first := make(chan struct{})
	sent := make(chan error, 1)
	go func() {
		if _, err := pw.Write(body[:len(body)/2]); err != nil {
			sent <- err
			return
		}
		select {
		case <-first:
		case <-time.After(time.Minute):
			sent <- errors.New("no item was handed over while half the body was unsent")
			pw.CloseWithError(io.ErrClosedPipe)
			return
		}
		_, err := pw.Write(body[len(body)/2:])
		pw.Close()
		sent <- err
	}()
	n := 0
	_, err := protoPods(true).decodeListItems(pr, func(*corev1.Pod) error {
		if n++; n == 1 {
			close(first)
		}
		return nil
	})
	if werr := <-sent; werr != nil {
		t.Fatal(werr)
	}
	if err != nil || n != len(list.Items) {
		t.Fatalf("%d items, %v; want %d", n, err, len(list.Items))
	}
}

// FuzzProtoList: no body makes the streaming list decoder panic; a body
// both it and client-go's codecs decode is the same pods to both; and one
// client-go decodes, it decodes too, unless the envelope's object comes
// before its type, or there are two objects, or a content encoding (all
// refused on purpose: client-go ignores an encoding it cannot undo and
// keeps the last object). It may accept what
// client-go refuses in fields it does not read (a content type of the
// wrong wire type).
func FuzzProtoList(f *testing.F) {
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: []corev1.Pod{*benchPod(1), *benchPod(2)}}
	f.Add(protoBody(f, list))
	f.Add(protoBody(f, &corev1.PodList{}))
	f.Fuzz(func(t *testing.T, body []byte) {
		var items []*corev1.Pod
		l, err := protoPods(false).decodeListItems(bytes.NewReader(body), func(p *corev1.Pod) error {
			items = append(items, p)
			return nil
		})
		obj, _, cerr := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
		want, ok := obj.(*corev1.PodList)
		switch {
		case cerr != nil || !ok:
			return
		case err != nil && !refusedOnPurpose(err):
			t.Fatalf("client-go decoded %d pods, ours refused the body: %v", len(want.Items), err)
		case err != nil || len(l.Undecodable) > 0:
			return
		}
		if len(want.Items) != len(items) || want.ResourceVersion != l.ResourceVersion {
			t.Fatalf("ours %d pods at %q, client-go %d at %q", len(items), l.ResourceVersion, len(want.Items), want.ResourceVersion)
		}
		for i := range items {
			w := want.Items[i].DeepCopy()
			w.TypeMeta = metav1.TypeMeta{}
			if diff := cmp.Diff(w, items[i]); diff != "" {
				t.Fatalf("pod %d (-client-go +ours):\n%s", i, diff)
			}
		}
	})
}

// refusedOnPurpose tells the envelopes the list decoder refuses and
// client-go's codecs do not.
func refusedOnPurpose(err error) bool {
	for _, s := range []string{"comes before its type", "type after its object", "two objects", "content encoding"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}
