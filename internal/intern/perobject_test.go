package intern

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPerObjectNamesTypes: every struct perObject names by its package
// path and name is a type, with the fields it lists.
func TestPerObjectNamesTypes(t *testing.T) {
	types := map[string]reflect.Type{}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[metav1.ObjectMeta](), reflect.TypeFor[metav1.ListMeta](), reflect.TypeFor[corev1.PodStatus](),
		reflect.TypeFor[corev1.PodIP](), reflect.TypeFor[corev1.ContainerStatus](), reflect.TypeFor[corev1.NodeSystemInfo](),
	} {
		types[typ.PkgPath()+"."+typ.Name()] = typ
	}
	for name, fields := range perObject {
		typ, ok := types[name]
		if !ok {
			t.Errorf("perObject names %s, which is not a type the test knows", name)
			continue
		}
		for f := range fields {
			if sf, ok := typ.FieldByName(f); !ok || sf.Type.Kind() != reflect.String {
				t.Errorf("perObject: %s has no string field %s", name, f)
			}
		}
	}
	if len(types) != len(perObject) {
		t.Errorf("perObject names %d types, the test %d", len(perObject), len(types))
	}
}
