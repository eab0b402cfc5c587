package source

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// decodeBoth decodes obj whole, then drops managedFields; and decodes it as
// a watcher that drops them does.
func decodeBoth(obj []byte) (whole, cut *corev1.Pod, cutLen int, wholeErr, cutErr error) {
	whole = &corev1.Pod{}
	wholeErr = whole.Unmarshal(obj)
	whole.ManagedFields = nil
	var buf []byte
	b, _ := metaCut{managedFields: true}.cutProtoMeta(obj, &buf)
	var scratch []byte
	cut, cutErr = protoWatch(nil, true).src.unmarshal(obj, &scratch)
	if cut != nil {
		cut.ManagedFields = nil
	}
	return whole, cut, len(b), wholeErr, cutErr
}

// TestCutProtoManagedFields: a pod's bytes without managedFields decode to
// the pod without them, and are shorter; a pod without any comes back as
// it is, uncopied; every truncation of the bytes that decodes whole
// decodes the same once cut, and none panics.
func TestCutProtoManagedFields(t *testing.T) {
	p := benchPod(1)
	if len(p.ManagedFields) == 0 {
		t.Fatal("the test pod has no managedFields")
	}
	obj, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	whole, cut, n, werr, cerr := decodeBoth(obj)
	if werr != nil || cerr != nil {
		t.Fatalf("decode: whole %v, cut %v", werr, cerr)
	}
	if diff := cmp.Diff(whole, cut); diff != "" {
		t.Errorf("cut pod (-whole +cut):\n%s", diff)
	}
	if n >= len(obj) {
		t.Errorf("cut bytes %d, want fewer than the %d of the whole", n, len(obj))
	}
	t.Logf("%d bytes, %d without managedFields", len(obj), n)

	bare := p.DeepCopy()
	bare.ManagedFields = nil
	bobj, err := bare.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var buf []byte
	if out, ok := (metaCut{managedFields: true}).cutProtoMeta(bobj, &buf); !ok || &out[0] != &bobj[0] || len(out) != len(bobj) {
		t.Errorf("a pod without managedFields: ok %v, copied %v", ok, &out[0] != &bobj[0])
	}

	for i := range obj {
		whole, cut, _, werr, cerr := decodeBoth(obj[:i])
		if werr != nil {
			continue // the decoder reports it; what the cut copy gives does not matter
		}
		if cerr != nil {
			t.Fatalf("%d bytes: decodes whole, but not cut: %v", i, cerr)
		}
		if diff := cmp.Diff(whole, cut); diff != "" {
			t.Fatalf("%d bytes: cut pod (-whole +cut):\n%s", i, diff)
		}
	}
}

// TestCutProtoFallsBackToWhole: bytes that decode whole only by reading
// across the managedFields the cut removes (a label entry whose key runs
// past the entry's end: the generated decoder bounds it by the whole
// ObjectMeta) decode whole through the watcher too, rather than fail.
func TestCutProtoFallsBackToWhole(t *testing.T) {
	mf := []byte{0x8a, 0x01, 0x02, 0x0a, 0x00}        // managedFields: one entry, manager ""
	label := []byte{0x5a, 0x04, 0x0a, 0x05, 'a', 'b'} // key of 5 bytes in an entry of 4
	meta := append(label, mf...)
	obj := append([]byte{0x0a, byte(len(meta))}, meta...)
	whole, cut, n, werr, cerr := decodeBoth(obj)
	if werr != nil {
		t.Fatalf("the generated decoder no longer reads across the entry: %v; the test needs other bytes", werr)
	}
	var buf []byte
	if b, _ := (metaCut{managedFields: true}).cutProtoMeta(obj, &buf); new(corev1.Pod).Unmarshal(b) == nil {
		t.Fatalf("the cut bytes %d of %d decode: the test does not reach the fallback", n, len(obj))
	}
	if cerr != nil {
		t.Fatalf("decodes whole, but not through the watcher: %v", cerr)
	}
	if diff := cmp.Diff(whole, cut); diff != "" {
		t.Errorf("watcher's pod (-whole +watcher):\n%s", diff)
	}
}

// FuzzCutProtoManagedFields: no input panics; bytes that decode whole
// decode through a watcher that drops managedFields too (it may decode
// more: it never reads them); and the encoding of what they decode to
// decodes the same both ways, managedFields aside. The raw bytes are
// compared only when they are that encoding: on malformed bytes the
// generated decoders can read across a field's end into the next one,
// which the cut changes, and neither result means anything.
func FuzzCutProtoManagedFields(f *testing.F) {
	obj, err := benchPod(1).Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(obj)
	f.Add([]byte{0x0a, 0x03, 0x8a, 0x01, 0x00})
	f.Add([]byte{0x0a, 0x00})
	f.Fuzz(func(t *testing.T, obj []byte) {
		full := &corev1.Pod{}
		if full.Unmarshal(obj) != nil {
			_, _, _, _, _ = decodeBoth(obj) // only: no panic
			return
		}
		canon, err := full.Marshal()
		if err != nil {
			t.Fatalf("re-encoding what decoded: %v", err)
		}
		for _, b := range [][]byte{obj, canon} {
			whole, cut, _, _, cerr := decodeBoth(b)
			if cerr != nil {
				t.Fatalf("decodes whole, but not through the watcher: %v", cerr)
			}
			if diff := cmp.Diff(whole, cut); diff != "" && bytes.Equal(b, canon) {
				t.Fatalf("watcher's pod (-whole +watcher):\n%s", diff)
			}
		}
	})
}
