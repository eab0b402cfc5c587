package source

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// TestBuiltinKindMatchesClientGoScheme checks the kind FromConfig derives
// from a built-in type's Go package against the kind client-go's scheme
// registered the type as, for every type of k8s.io/api in it.
func TestBuiltinKindMatchesClientGoScheme(t *testing.T) {
	n := 0
	for gvk, typ := range clientgoscheme.Scheme.AllKnownTypes() {
		if !strings.HasPrefix(typ.PkgPath(), "k8s.io/api/") || gvk.Version == runtime.APIVersionInternal {
			continue
		}
		kinds, _, err := clientgoscheme.Scheme.ObjectKinds(reflect.New(typ).Interface().(runtime.Object))
		if err != nil || len(kinds) != 1 {
			continue // registered under several kinds: the scheme cannot tell either
		}
		n++
		got, ok := builtinKind(reflect.PointerTo(typ))
		if !ok || got != kinds[0] {
			t.Errorf("builtinKind(%v) = %v, %v; the scheme says %v", typ, got, ok, kinds[0])
		}
	}
	if n < 300 {
		t.Fatalf("compared %d types; client-go's scheme has over 300 kinds of one registration", n)
	}
}

func TestBuiltinKindRefusesOthers(t *testing.T) {
	type widget struct{ corev1.Pod }
	for _, typ := range []reflect.Type{reflect.TypeFor[*widget](), reflect.TypeFor[corev1.Pod](), reflect.TypeFor[*schema.GroupVersion](), nil} {
		if gvk, ok := builtinKind(typ); ok {
			t.Errorf("builtinKind(%v) = %v, want none", typ, gvk)
		}
	}
}
