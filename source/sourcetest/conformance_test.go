package sourcetest_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source/sourcetest"
)

// fakeCase is a fresh Fake of pods, with its REST verbs and Compact.
func fakeCase(opts podOptions) func(t *testing.T) sourcetest.Case[*corev1.Pod] {
	return func(t *testing.T) sourcetest.Case[*corev1.Pod] {
		const ns = "conformance"
		f := sourcetest.NewFake(opts)
		return sourcetest.Case[*corev1.Pod]{
			Source:    f,
			Namespace: ns,
			New: func(name string, labels map[string]string) *corev1.Pod {
				return pod(ns, name, labels)
			},
			Create: func(_ context.Context, p *corev1.Pod) (*corev1.Pod, error) { return f.Create(p) },
			Update: func(_ context.Context, p *corev1.Pod) (*corev1.Pod, error) { return f.Update(p) },
			Delete: func(_ context.Context, k cache.Key) error {
				_, err := f.Delete(k)
				return err
			},
			Compact: func(context.Context) error {
				f.Compact()
				return nil
			},
			NoWatchList: opts.NoWatchList,
		}
	}
}

func TestConformance(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	t.Run("Fake", func(t *testing.T) {
		sourcetest.Run(t, fakeCase(podOptions{Resource: pods, Scope: cache.ScopeNamespaced}))
	})
	t.Run("FakeNoWatchList", func(t *testing.T) {
		sourcetest.Run(t, fakeCase(podOptions{Resource: pods, NoWatchList: true}))
	})
	// Other objects in the fake, in other namespaces and before the case's
	// own, must not disturb the checks.
	t.Run("FakeShared", func(t *testing.T) {
		sourcetest.Run(t, fakeCase(podOptions{Resource: pods, StartResourceVersion: 5000, Objects: []*corev1.Pod{
			pod("other", "list-a", nil), pod("other", "watch-b", map[string]string{"app": "web"}), pod("", "sel-a", map[string]string{"app": "web"}),
		}}))
	})
}
