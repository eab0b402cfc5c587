package objects

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/typedinformer/informer/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

var fields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}

func TestWithoutManagedFieldsTyped(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"x": "1"}, ManagedFields: fields}}
	out, ok := WithoutManagedFields(p)
	if !ok || out == p || len(out.ManagedFields) != 0 || out.Name != "a" || out.Labels["x"] != "1" {
		t.Fatalf("WithoutManagedFields = %+v, %v; want a trimmed copy", out, ok)
	}
	if len(p.ManagedFields) != 1 {
		t.Error("the original lost its managedFields")
	}
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	if out, ok := WithoutManagedFields(plain); !ok || out != plain {
		t.Error("an object without managedFields was copied")
	}
	pm := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "c", ManagedFields: fields}}
	if out, ok := WithoutManagedFields(pm); !ok || out == pm || len(out.ManagedFields) != 0 || len(pm.ManagedFields) != 1 {
		t.Error("PartialObjectMetadata not trimmed on a copy")
	}
}

func TestWithoutManagedFieldsUnstructured(t *testing.T) {
	u := &unstructured.Unstructured{}
	u.SetName("a")
	u.SetLabels(map[string]string{"x": "1"})
	u.SetManagedFields(fields)
	out, ok := WithoutManagedFields(u)
	if !ok || out == u || len(out.GetManagedFields()) != 0 || out.GetName() != "a" || out.GetLabels()["x"] != "1" {
		t.Fatalf("WithoutManagedFields = %v, %v; want a trimmed copy", out.Object, ok)
	}
	if len(u.GetManagedFields()) != 1 {
		t.Error("the original lost its managedFields (its metadata map was shared)")
	}
}
