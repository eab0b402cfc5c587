package source

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// decodeBoth decodes obj whole, then drops managedFields, and decodes it
// through cutProtoManagedFields.
func decodeBoth(obj []byte) (whole, cut *corev1.Pod, wholeErr, cutErr error, cutLen int) {
	whole, cut = &corev1.Pod{}, &corev1.Pod{}
	wholeErr = whole.Unmarshal(obj)
	whole.ManagedFields = nil
	var buf []byte
	b, _ := cutProtoManagedFields(obj, &buf)
	cutErr = cut.Unmarshal(b)
	cut.ManagedFields = nil
	return whole, cut, wholeErr, cutErr, len(b)
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
	whole, cut, werr, cerr, n := decodeBoth(obj)
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
	if out, ok := cutProtoManagedFields(bobj, &buf); !ok || &out[0] != &bobj[0] || len(out) != len(bobj) {
		t.Errorf("a pod without managedFields: ok %v, copied %v", ok, &out[0] != &bobj[0])
	}

	for i := range obj {
		whole, cut, werr, cerr, _ := decodeBoth(obj[:i])
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

// FuzzCutProtoManagedFields: bytes that decode as a pod decode the same
// once cut, managedFields aside; no input panics.
func FuzzCutProtoManagedFields(f *testing.F) {
	obj, err := benchPod(1).Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(obj)
	f.Add([]byte{0x0a, 0x03, 0x8a, 0x01, 0x00})
	f.Add([]byte{0x0a, 0x00})
	f.Fuzz(func(t *testing.T, obj []byte) {
		whole, cut, werr, cerr, _ := decodeBoth(obj)
		if werr != nil {
			return
		}
		if cerr != nil {
			t.Fatalf("decodes whole, but not cut: %v", cerr)
		}
		if diff := cmp.Diff(whole, cut); diff != "" {
			t.Fatalf("cut pod (-whole +cut):\n%s", diff)
		}
	})
}
