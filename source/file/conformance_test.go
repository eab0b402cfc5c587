package file_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source/file"
	"github.com/typedinformer/informer/source/sourcetest"
)

const conformanceNS = "conformance"

// TestConformance runs the source conformance suite on a directory: each
// verb writes or removes the object's file, then rescans, as a program
// that writes manifests and needs them served at once would.
func TestConformance(t *testing.T) {
	sourcetest.Run(t, func(t *testing.T) sourcetest.Case[*corev1.Pod] {
		dir := t.TempDir()
		// Another namespace's pods, in a multi-document file, must not
		// disturb the checks.
		writeFile(t, dir, "other.yaml", docs(podYAML("other", "list-a"), podYAML("other", "sel-a", "app=web")))
		src, sink := newPods(t, dir, file.Options{})
		t.Cleanup(func() {
			if errs := sink.all(); len(errs) > 0 {
				t.Errorf("problems reported: %v", errs)
			}
		})
		get := func(ctx context.Context, name string) (*corev1.Pod, error) {
			l, err := src.List(ctx, metav1.ListOptions{FieldSelector: "metadata.namespace=" + conformanceNS + ",metadata.name=" + name})
			if err != nil {
				return nil, err
			}
			if len(l.Items) != 1 {
				return nil, fmt.Errorf("%s: %d objects listed after writing it", name, len(l.Items))
			}
			return l.Items[0], nil
		}
		put := func(ctx context.Context, p *corev1.Pod) (*corev1.Pod, error) {
			if err := os.WriteFile(filepath.Join(dir, p.Name+".json"), []byte(podJSON(t, p)), 0o644); err != nil {
				return nil, err
			}
			if err := src.Rescan(ctx); err != nil {
				return nil, err
			}
			return get(ctx, p.Name)
		}
		return sourcetest.Case[*corev1.Pod]{
			Source:    src,
			Namespace: conformanceNS,
			New: func(name string, labels map[string]string) *corev1.Pod {
				return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: conformanceNS, Name: name, Labels: labels}}
			},
			Create: put,
			Update: put,
			Delete: func(ctx context.Context, k cache.Key) error {
				if err := os.Remove(filepath.Join(dir, k.Name+".json")); err != nil {
					return err
				}
				return src.Rescan(ctx)
			},
			Compact: func(context.Context) error {
				src.Compact()
				return nil
			},
		}
	})
}
