package source_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/internal/bench"
	"github.com/typedinformer/informer/source"
)

// TestDeepCopy: a copy equals the original, and changing anything the
// copy reaches (maps, slices, pointers, nested structs) leaves the
// original as it was; a recursive type and nil work.
func TestDeepCopy(t *testing.T) {
	orig := viewOf(t, bench.Pod(3, bench.PodOptions{ManagedFields: true}), true)
	if orig.Status.PodIP == nil || len(orig.Status.Conditions) == 0 || len(orig.Labels) == 0 || len(orig.Spec.Containers) == 0 {
		t.Fatal("the fixture lacks a field the test changes")
	}
	before := viewOf(t, bench.Pod(3, bench.PodOptions{ManagedFields: true}), true)
	c := source.DeepCopy(orig)
	if diff := cmp.Diff(orig, c); diff != "" {
		t.Fatalf("copy differs (-orig +copy):\n%s", diff)
	}
	c.Labels["app"] = "changed"
	c.Status.Conditions[0].Status = corev1.ConditionUnknown
	*c.Status.PodIP = "10.9.9.9"
	c.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = c.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]
	c.ManagedFields[0].Manager = "changed"
	c.OwnerReferences[0].Controller = new(bool)
	if diff := cmp.Diff(before, orig); diff != "" {
		t.Errorf("changing the copy changed the original (-before +after):\n%s", diff)
	}

	type node struct {
		Name string
		Next *node
		Kids []node
	}
	n := &node{Name: "a", Next: &node{Name: "b"}, Kids: []node{{Name: "c"}}}
	m := source.DeepCopy(n)
	m.Next.Name, m.Kids[0].Name = "x", "y"
	if n.Next.Name != "b" || n.Kids[0].Name != "c" {
		t.Errorf("recursive type: the original changed: %+v", n)
	}
	if source.DeepCopy[node](nil) != nil {
		t.Error("DeepCopy(nil) is not nil")
	}
}
