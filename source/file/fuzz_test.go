package file

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/typedinformer/informer/cache"
)

// FuzzDecode feeds arbitrary bytes to the manifest decoder, as the content
// of a YAML file or of a JSON one: it must not panic, and it must return
// either objects of the source's kind with a name, the key they are stored
// under and no resourceVersion, or an *Error naming the file, never both
// for one document and never a nil error. The seed corpus is in
// testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: a\n"), false)
	f.Add([]byte(`{"apiVersion":"v1","kind":"PodList","items":[{"metadata":{"name":"p1"}}]}`), true)
	f.Fuzz(func(t *testing.T, data []byte, asJSON bool) {
		name := "m.yaml"
		if asJSON {
			name = "m.json"
		}
		pods := &decoder[*corev1.Pod]{
			gvk: corev1.SchemeGroupVersion.WithKind("Pod"), namespace: "default",
			newT: func() *corev1.Pod { return &corev1.Pod{} },
		}
		checkDecoded(t, name, data, pods)
		objs := &decoder[*unstructured.Unstructured]{
			gvk:  corev1.SchemeGroupVersion.WithKind("Pod"),
			newT: func() *unstructured.Unstructured { return &unstructured.Unstructured{} },
		}
		checkDecoded(t, name, data, objs)
	})
}

func checkDecoded[T cache.Object](t *testing.T, name string, data []byte, d *decoder[T]) {
	t.Helper()
	var zero T
	got, errs := d.decode(name, data)
	for i, p := range got {
		switch {
		case p.obj == zero:
			t.Fatalf("object %d of %T: nil", i, zero)
		case p.obj.GetName() == "":
			t.Fatalf("object %d of %T: no name", i, zero)
		case p.key != cache.KeyOf(p.obj):
			t.Fatalf("object %d of %T: stored under %v, its key is %v", i, zero, p.key, cache.KeyOf(p.obj))
		case p.obj.GetResourceVersion() != "":
			t.Fatalf("object %d of %T: resourceVersion %q kept from the file", i, zero, p.obj.GetResourceVersion())
		case p.obj.GetObjectKind().GroupVersionKind() != d.gvk:
			t.Fatalf("object %d of %T: kind %v, want %v", i, zero, p.obj.GetObjectKind().GroupVersionKind(), d.gvk)
		case d.namespace != "" && p.obj.GetNamespace() == "":
			t.Fatalf("object %d of %T: no namespace despite the default %q", i, zero, d.namespace)
		}
	}
	for i, err := range errs {
		var fe *Error
		if !errors.As(err, &fe) {
			t.Fatalf("problem %d of %T: %v (%T) is not an *Error", i, zero, err, err)
		}
		if fe.File != name || fe.Line < 0 || fe.Err == nil {
			t.Fatalf("problem %d of %T: %+v, want file %q, a line and a cause", i, zero, fe, name)
		}
		if !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrInvalid) {
			t.Fatalf("problem %d of %T: %v wraps neither ErrSyntax nor ErrInvalid", i, zero, err)
		}
	}
}

// FuzzContinueToken feeds arbitrary continue tokens to the parser: it must
// not panic, must refuse anything but a token of a snapshot (a positive
// resourceVersion) with a BadRequest, and must read back what it wrote.
func FuzzContinueToken(f *testing.F) {
	f.Add(token{RV: 7, After: cache.Key{Namespace: "a", Name: "p"}}.String())
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := parseToken(s)
		if err != nil {
			if tok != (token{}) {
				t.Fatalf("parseToken(%q) = %+v with error %v", s, tok, err)
			}
			return
		}
		if tok.RV <= 0 {
			t.Fatalf("parseToken(%q) accepted resourceVersion %d", s, tok.RV)
		}
		again, err := parseToken(tok.String())
		if err != nil || again != tok {
			t.Fatalf("token %+v does not survive a round trip: %+v, %v", tok, again, err)
		}
	})
}
