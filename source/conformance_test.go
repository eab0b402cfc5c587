package source_test

import (
	"context"
	"fmt"
	"path"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

const conformanceNS = "conformance"

// podClient makes a Fake look like clientset.CoreV1().Pods(ns): lists are
// *corev1.PodList, watches are watch.Interface, both through the fake's
// client-go ListerWatcher.
type podClient struct{ lw sourcetest.ListerWatcher }

var _ source.Client[*corev1.PodList] = (*podClient)(nil)

func (c *podClient) List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	obj, err := c.lw.ListWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	l, ok := obj.(*metav1.List)
	if !ok {
		return nil, fmt.Errorf("list is a %T, want *metav1.List", obj)
	}
	out := &corev1.PodList{ListMeta: l.ListMeta, Items: make([]corev1.Pod, 0, len(l.Items))}
	for _, it := range l.Items {
		p, ok := it.Object.(*corev1.Pod)
		if !ok {
			return nil, fmt.Errorf("list item is a %T, want *corev1.Pod", it.Object)
		}
		out.Items = append(out.Items, *p)
	}
	return out, nil
}

func (c *podClient) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return c.lw.WatchWithContext(ctx, opts)
}

// fakeCase is a case whose source is made by adapt from a fresh Fake of
// pods; the fake's verbs change it.
func fakeCase(noWatchList bool, adapt func(*sourcetest.Fake[*corev1.Pod]) (source.Source[*corev1.Pod], error)) func(*testing.T) sourcetest.Case[*corev1.Pod] {
	return func(t *testing.T) sourcetest.Case[*corev1.Pod] {
		f := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{
			Resource:    schema.GroupResource{Resource: "pods"},
			NoWatchList: noWatchList,
			// Another namespace's pods must not disturb the checks.
			Objects: []*corev1.Pod{pod("other", "list-a", nil), pod("other", "sel-a", map[string]string{"app": "web"})},
		})
		src, err := adapt(f)
		if err != nil {
			t.Fatal(err)
		}
		return sourcetest.Case[*corev1.Pod]{
			Source:    src,
			Namespace: conformanceNS,
			New: func(name string, labels map[string]string) *corev1.Pod {
				return pod(conformanceNS, name, labels)
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
			NoWatchList: noWatchList,
		}
	}
}

func TestConformanceFromListerWatcher(t *testing.T) {
	for _, noWatchList := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoWatchList=%v", noWatchList), func(t *testing.T) {
			sourcetest.Run(t, fakeCase(noWatchList, func(f *sourcetest.Fake[*corev1.Pod]) (source.Source[*corev1.Pod], error) {
				return source.FromListerWatcher[*corev1.Pod](f.ListerWatcher())
			}))
		})
	}
}

func TestConformanceFromClient(t *testing.T) {
	for _, noWatchList := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoWatchList=%v", noWatchList), func(t *testing.T) {
			sourcetest.Run(t, fakeCase(noWatchList, func(f *sourcetest.Fake[*corev1.Pod]) (source.Source[*corev1.Pod], error) {
				return source.FromClient[*corev1.Pod](&podClient{lw: f.ListerWatcher()})
			}))
		})
	}
}

// clientsetUnlike names the checks a FromClient over client-go's fake
// clientset fails, and why: its object tracker is not an API server.
var clientsetUnlike = map[string]string{
	"ListPages": "the tracker ignores Limit and Continue: a list is never paginated",
	"WatchFromResourceVersion": "a watch from a resourceVersion replays no history: the tracker sends an ADDED " +
		"for each object now stored with a newer version, so MODIFIED and DELETED events are lost",
	"StreamingList": "the tracker ignores sendInitialEvents and resourceVersionMatch: a streaming list is " +
		"neither served nor refused (the clientset only reports IsWatchListSemanticsUnSupported to client-go's reflector)",
	"LabelSelector": "the tracker does not filter watch events by label selector (only the generated List " +
		"does), so a watch sees objects that never match and no DELETED when one stops matching",
}

// TestConformanceFromClientClientset runs the suite on FromClient over
// client-go's fake clientset, with NoWatchList and without Compact (the
// tracker keeps no history to compact). The checks in clientsetUnlike
// cannot pass there and are skipped with their reason; the others (List,
// Stop, and WatchExpired, which only logs that it cannot compact) run.
func TestConformanceFromClientClientset(t *testing.T) {
	sourcetest.Run(t, func(t *testing.T) sourcetest.Case[*corev1.Pod] {
		if reason, ok := clientsetUnlike[path.Base(t.Name())]; ok {
			t.Skip("client-go's fake clientset: " + reason)
		}
		cs := fake.NewClientset(pod("other", "list-a", nil))
		pods := cs.CoreV1().Pods(conformanceNS)
		src, err := source.FromClient[*corev1.Pod](pods)
		if err != nil {
			t.Fatal(err)
		}
		return sourcetest.Case[*corev1.Pod]{
			Source:    src,
			Namespace: conformanceNS,
			New: func(name string, labels map[string]string) *corev1.Pod {
				return pod(conformanceNS, name, labels)
			},
			Create: func(ctx context.Context, p *corev1.Pod) (*corev1.Pod, error) {
				return pods.Create(ctx, p, metav1.CreateOptions{})
			},
			Update: func(ctx context.Context, p *corev1.Pod) (*corev1.Pod, error) {
				return pods.Update(ctx, p, metav1.UpdateOptions{})
			},
			Delete: func(ctx context.Context, k cache.Key) error {
				return pods.Delete(ctx, k.Name, metav1.DeleteOptions{})
			},
			NoWatchList: true,
		}
	})
}
