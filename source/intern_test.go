package source_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

// TestFromConfigInfo: the REST source decodes every object it returns, in
// every mode, so it says its objects are the caller's alone, and it says
// whether it drops managedFields; the fake, which keeps what it returns in
// its history, says neither.
func TestFromConfigInfo(t *testing.T) {
	f := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
	srv := podserver.New(t, f)
	for _, opts := range []source.RESTOptions{{}, {DecodeWorkers: 2}, {Protobuf: true}, {KeepManagedFields: true}, {Protobuf: true, KeepManagedFields: true}} {
		opts.Mapper = podserver.Mapper()
		src, err := source.FromConfig[*corev1.Pod](srv.Config(), opts)
		if err != nil {
			t.Fatal(err)
		}
		want := source.Info{Resource: source.Resource{GroupResource: corev1.Resource("pods"), Scope: cache.ScopeNamespaced},
			WatchList: true, Exclusive: true, NoManagedFields: !opts.KeepManagedFields}
		if got := src.Info(); got != want {
			t.Errorf("FromConfig(%+v).Info() = %+v, want %+v", opts, got, want)
		}
	}
	if info := f.Info(); info.Exclusive || info.NoManagedFields {
		t.Errorf("the fake's Info = %+v: its objects are not the caller's alone, and have their managedFields", info)
	}
}

// TestFromConfigListDropsManagedFields: by default the REST source's list
// leaves managedFields out of the objects it decoded; with
// KeepManagedFields, they are there. JSON and protobuf alike.
func TestFromConfigListDropsManagedFields(t *testing.T) {
	p := pod("shop", "cart", nil)
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}
	f := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: []*corev1.Pod{p}})
	srv := podserver.New(t, f)
	for _, proto := range []bool{false, true} {
		for _, keep := range []bool{false, true} {
			src, err := source.FromConfig[*corev1.Pod](srv.Config(), source.RESTOptions{Mapper: podserver.Mapper(), Protobuf: proto, KeepManagedFields: keep})
			if err != nil {
				t.Fatal(err)
			}
			l, err := src.List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Items) != 1 {
				t.Fatalf("listed %d pods, want 1", len(l.Items))
			}
			if got := len(l.Items[0].ManagedFields); (got != 0) != keep {
				t.Errorf("Protobuf %v, KeepManagedFields %v: %d managedFields entries", proto, keep, got)
			}
		}
	}
}
