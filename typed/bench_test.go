package typed_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// benchPod is a pre-decoded pod of about 4 KB, like a real one without
// managedFields.
func benchPod(i int) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace:       fmt.Sprintf("ns-%d", i%50),
		Name:            fmt.Sprintf("pod-%d", i),
		UID:             "0000-1111-2222",
		ResourceVersion: fmt.Sprint(1000 + i),
		Labels:          map[string]string{"app": fmt.Sprintf("app-%d", i%20), "tier": "web", "pod-template-hash": "abcdef"},
		Annotations:     map[string]string{"note": strings.Repeat("x", 2500)},
	}}
	p.Spec.NodeName = fmt.Sprintf("node-%d", i%100)
	for c := range 3 {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
			Name: fmt.Sprintf("c%d", c), Image: "registry.example/team/image:v1.2.3",
			Args: []string{"--port=8080", "--verbose", "--config=/etc/app/config.yaml"},
			Env:  []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
		})
	}
	return p
}

// streamLW is a client-go ListerWatcher that lists nothing and then serves
// one watch fed from a channel; it refuses streaming lists so both
// informers take the LIST path. The same type feeds ours and client-go's.
type streamLW struct {
	list []corev1.Pod
	w    *watch.FakeWatcher
}

func (s *streamLW) List(metav1.ListOptions) (runtime.Object, error) {
	return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: s.list}, nil
}

func (s *streamLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		return nil, apierrors.NewBadRequest("streaming lists are off in this benchmark")
	}
	return s.w, nil
}

// benchInformer is NewInformer over lw, failing the benchmark on error.
func benchInformer(b *testing.B, lw clientcache.ListerWatcher, opts typed.Options[*corev1.Pod]) *typed.Informer[*corev1.Pod] {
	src, err := source.FromListerWatcher[*corev1.Pod](lw)
	if err != nil {
		b.Fatal(err)
	}
	inf, err := typed.NewInformer(src, opts)
	if err != nil {
		b.Fatal(err)
	}
	return inf
}
