package source_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/source"
)

// restPods is FromConfig over s for pods in ns, with the test mapper.
func restPods(t *testing.T, s *podserver.Server, ns string) source.Source[*corev1.Pod] {
	t.Helper()
	src, err := source.FromConfig[*corev1.Pod](s.Config(), source.RESTOptions{Namespace: ns, Mapper: podserver.Mapper()})
	if err != nil {
		t.Fatal(err)
	}
	return src
}
