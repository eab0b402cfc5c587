package source_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

// TestFromConfigIsExclusive: the REST source decodes every object it
// returns, in every mode, so it says its objects are the caller's alone;
// the fake, which keeps what it returns in its history, does not.
func TestFromConfigIsExclusive(t *testing.T) {
	f := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
	srv := newPodServer(t, f)
	for _, opts := range []source.RESTOptions{{}, {DecodeWorkers: 2}, {Protobuf: true}} {
		opts.Mapper = podMapper()
		src, err := source.FromConfig[*corev1.Pod](srv.config(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if !source.IsExclusive(src) {
			t.Errorf("FromConfig(%+v): not exclusive", opts)
		}
	}
	if source.IsExclusive[*corev1.Pod](f) {
		t.Error("the fake says its objects are the caller's alone")
	}
}

// TestFromConfigListDropsManagedFields: with Hints.DropManagedFields the
// REST source's list leaves managedFields out of the objects it decoded;
// without, they are there.
func TestFromConfigListDropsManagedFields(t *testing.T) {
	p := pod("shop", "cart", nil)
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}
	f := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: []*corev1.Pod{p}})
	src, err := source.FromConfig[*corev1.Pod](newPodServer(t, f).config(), source.RESTOptions{Mapper: podMapper()})
	if err != nil {
		t.Fatal(err)
	}
	for _, drop := range []bool{false, true} {
		ctx := source.WithHints(t.Context(), source.Hints{DropManagedFields: drop})
		l, err := src.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != 1 {
			t.Fatalf("listed %d pods, want 1", len(l.Items))
		}
		if got := len(l.Items[0].ManagedFields); (got == 0) != drop {
			t.Errorf("DropManagedFields %v: %d managedFields entries", drop, got)
		}
	}
}
