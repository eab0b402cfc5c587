package source

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestCutMetadata: cutting managedFields and annotations from the bytes
// decodes to what decoding the whole object and deleting them gives, for
// annotations first, last, alone, escaped, absent, and for bytes it does
// not recognise.
func TestCutMetadata(t *testing.T) {
	drop := map[string]bool{"big": true, "a/b": true}
	cases := []string{
		`{"metadata":{"name":"p","annotations":{"big":"x","keep":"y"},"managedFields":[{"manager":"m"}]},"spec":{}}`,
		`{"metadata":{"annotations":{"keep":"y","big":"x"},"name":"p"}}`,
		`{"metadata":{"annotations":{"big":"x"},"name":"p"}}`,
		`{"metadata":{"name":"p","annotations":{ "a/b" : "x" , "keep":"y" }}}`,
		`{"metadata":{"name":"p","annotations":{"\u0062ig":"x","keep":"y"}}}`,
		`{"metadata":{"name":"p","managedFields":[],"annotations":{}}}`,
		`{"metadata":{"name":"p"}}`,
		`{"kind":"Pod","metadata":{"name":"p","annotations":null}}`,
		`{"metadata":{"name":"p","annotations":{"big":"x"}`, // cut short
		`{"metadata":["not","an","object"]}`,
	}
	for _, mf := range []bool{false, true} {
		for _, c := range cases {
			obj := []byte(c)
			cut := cutMetadata(nil, obj, mf, drop)
			var whole corev1.Pod
			errWhole := json.Unmarshal(obj, &whole)
			var got corev1.Pod
			errCut := json.Unmarshal(cut, &got)
			if (errWhole == nil) != (errCut == nil) {
				t.Errorf("mf %v, %s: whole decodes %v, cut %q decodes %v", mf, c, errWhole, cut, errCut)
				continue
			}
			if errWhole != nil {
				continue
			}
			s := &restSource[*corev1.Pod]{dropAnn: drop}
			if mf {
				whole.ManagedFields = nil
			}
			s.dropAnnotations(&whole)
			s.dropAnnotations(&got)
			if diff := cmp.Diff(&whole, &got); diff != "" {
				t.Errorf("mf %v, %s: cut to %s (-whole +cut):\n%s", mf, c, cut, diff)
			}
			if len(cut) < len(obj) && got.Annotations["big"] != "" {
				t.Errorf("mf %v, %s: cut, but kept the annotation", mf, c)
			}
		}
	}
}

// TestCutProtoMetaAnnotations: the protobuf cut removes the dropped
// annotations' entries from the bytes, and the rest decodes as it was.
func TestCutProtoMetaAnnotations(t *testing.T) {
	p := benchPod(1)
	p.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: `{"big":"config"}`, "keep": "y"}
	obj, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	c := metaCut{managedFields: true, annotations: map[string]bool{corev1.LastAppliedConfigAnnotation: true}}
	var buf []byte
	out, ok := c.cutProtoMeta(obj, &buf)
	if !ok || len(out) >= len(obj) {
		t.Fatalf("cut %d bytes to %d, ok %v", len(obj), len(out), ok)
	}
	var got corev1.Pod
	if err := got.Unmarshal(out); err != nil {
		t.Fatal(err)
	}
	want := p.DeepCopy()
	want.ManagedFields = nil
	delete(want.Annotations, corev1.LastAppliedConfigAnnotation)
	want.TypeMeta = got.TypeMeta
	if diff := cmp.Diff(want, &got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
