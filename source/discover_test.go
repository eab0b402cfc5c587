package source_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

// TestFromConfigDiscovers: without a Mapper, FromConfig asks the server
// for the kind's group version once and maps the kind to its resource and
// scope; a kind the group version does not serve, or a group version the
// server does not serve, is a NoKindMatchError, as a REST mapper says it.
// With Protobuf too: the discovery document is read as JSON whatever the
// source's wire format, since the server answers in the first format the
// client accepts.
func TestFromConfigDiscovers(t *testing.T) {
	for _, proto := range []bool{false, true} {
		t.Run(map[bool]string{false: "JSON", true: "Protobuf"}[proto], func(t *testing.T) { testDiscovers(t, proto) })
	}
}

func testDiscovers(t *testing.T, proto bool) {
	srv := podserver.New(t, sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{}))
	for _, tc := range []struct {
		make func() (source.Resource, error)
		want source.Resource
	}{
		{func() (source.Resource, error) {
			src, err := source.FromConfig[*corev1.Pod](srv.Config(), source.RESTOptions{Protobuf: proto})
			if err != nil {
				return source.Resource{}, err
			}
			return src.Info().Resource, nil
		}, source.Resource{GroupResource: corev1.Resource("pods"), Scope: cache.ScopeNamespaced}},
		{func() (source.Resource, error) {
			src, err := source.FromConfig[*corev1.Node](srv.Config(), source.RESTOptions{Protobuf: proto})
			if err != nil {
				return source.Resource{}, err
			}
			return src.Info().Resource, nil
		}, source.Resource{GroupResource: corev1.Resource("nodes"), Scope: cache.ScopeCluster}},
	} {
		got, err := tc.make()
		if err != nil || got != tc.want {
			t.Errorf("FromConfig: %v, %v; want %v", got, err, tc.want)
		}
	}
	before := srv.Requests.Load()
	if _, err := source.FromConfig[*corev1.Service](srv.Config(), source.RESTOptions{Protobuf: proto}); !meta.IsNoMatchError(err) {
		t.Errorf("a kind the group version does not serve: %v, want a NoKindMatchError", err)
	}
	if n := srv.Requests.Load() - before; n != 1 {
		t.Errorf("FromConfig made %d requests to map a kind, want 1", n)
	}
	if _, err := source.FromConfig[*widget](srv.Config(), source.RESTOptions{GroupVersionKind: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}}); !meta.IsNoMatchError(err) {
		t.Errorf("a group version the server does not serve: %v, want a NoKindMatchError", err)
	}
}
