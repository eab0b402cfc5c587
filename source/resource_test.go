package source_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

// resourceOf is ResourceOf of a constructor's result.
func resourceOf[T cache.Object](src source.Source[T], err error) (source.Resource, error) {
	if err != nil {
		return source.Resource{}, err
	}
	return source.ResourceOf(src), nil
}

func TestResourceOf(t *testing.T) {
	cs := fake.NewClientset()
	// A real clientset: making one and its clients does not connect.
	real, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	pods := schema.GroupResource{Resource: "pods"}
	deployments := schema.GroupResource{Group: "apps", Resource: "deployments"}
	tests := []struct {
		name string
		got  func() (source.Resource, error)
		want source.Resource
	}{
		{name: "fake clientset, namespace", got: func() (source.Resource, error) {
			return resourceOf(source.FromClient[*corev1.Pod](cs.CoreV1().Pods("ns")))
		}, want: source.Resource{GroupResource: pods, Scope: cache.ScopeNamespaced}},
		{name: "fake clientset, all namespaces", got: func() (source.Resource, error) {
			return resourceOf(source.FromClient[*corev1.Pod](cs.CoreV1().Pods(metav1.NamespaceAll)))
		}, want: source.Resource{GroupResource: pods}},
		{name: "fake clientset, apps group", got: func() (source.Resource, error) {
			return resourceOf(source.FromClient[*appsv1.Deployment](cs.AppsV1().Deployments("ns")))
		}, want: source.Resource{GroupResource: deployments, Scope: cache.ScopeNamespaced}},
		{name: "fake clientset, cluster-scoped", got: func() (source.Resource, error) {
			return resourceOf(source.FromClient[*corev1.Node](cs.CoreV1().Nodes()))
		}, want: source.Resource{GroupResource: schema.GroupResource{Resource: "nodes"}}},
		{name: "real clientset, namespace", got: func() (source.Resource, error) {
			return resourceOf(source.FromClient[*corev1.Pod](real.CoreV1().Pods("ns")))
		}, want: source.Resource{GroupResource: pods, Scope: cache.ScopeNamespaced}},
		{name: "real clientset, apps group", got: func() (source.Resource, error) {
			return resourceOf(source.FromClient[*appsv1.Deployment](real.AppsV1().Deployments("")))
		}, want: source.Resource{GroupResource: deployments}},
		{name: "fake", got: func() (source.Resource, error) {
			return source.ResourceOf[*corev1.Pod](sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Resource: deployments, Scope: cache.ScopeCluster})), nil
		}, want: source.Resource{GroupResource: deployments, Scope: cache.ScopeCluster}},
		{name: "plain source: guessed from the type", got: func() (source.Resource, error) {
			return source.ResourceOf[*corev1.Pod](plainSource[*corev1.Pod]{}), nil
		}, want: source.Resource{GroupResource: pods}},
		{name: "plain source: irregular plural", got: func() (source.Resource, error) {
			//lint:ignore SA1019 Endpoints is the irregular plural the guess must get right
			return source.ResourceOf[*corev1.Endpoints](plainSource[*corev1.Endpoints]{}), nil
		}, want: source.Resource{GroupResource: schema.GroupResource{Resource: "endpoints"}}},
		{name: "plain source: no guess for unstructured", got: func() (source.Resource, error) {
			return source.ResourceOf[*unstructured.Unstructured](plainSource[*unstructured.Unstructured]{}), nil
		}},
		{name: "plain source: no guess for metadata", got: func() (source.Resource, error) {
			return source.ResourceOf[*metav1.PartialObjectMetadata](plainSource[*metav1.PartialObjectMetadata]{}), nil
		}},
		{name: "lister-watcher: guessed from the type", got: func() (source.Resource, error) {
			return resourceOf(source.FromListerWatcher[*corev1.Pod](&clientcache.ListWatch{}))
		}, want: source.Resource{GroupResource: pods}},
		{name: "lister-watcher of unstructured", got: func() (source.Resource, error) {
			return resourceOf(source.FromListerWatcher[*unstructured.Unstructured](&clientcache.ListWatch{}))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.got()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ResourceOf (-want +got)\n%s", diff)
			}
		})
	}
}

// Streaming lists are tried unless the source says it cannot stream:
// client-go's fake typed clients and anything declaring
// IsWatchListSemanticsUnSupported cannot.
func TestInfoWatchList(t *testing.T) {
	cs := fake.NewClientset()
	fromFake, err := source.FromClient[*corev1.Pod](cs.CoreV1().Pods(""))
	if err != nil {
		t.Fatal(err)
	}
	lw := clientcache.ToListWatcherWithWatchListSemantics(&clientcache.ListWatch{
		ListFunc:  func(metav1.ListOptions) (runtime.Object, error) { return &corev1.PodList{}, nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}, cs)
	fromLW, err := source.FromListerWatcher[*corev1.Pod](lw)
	if err != nil {
		t.Fatal(err)
	}
	plainLW, err := source.FromListerWatcher[*corev1.Pod](&clientcache.ListWatch{
		ListFunc:  func(metav1.ListOptions) (runtime.Object, error) { return &corev1.PodList{}, nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		src  source.Source[*corev1.Pod]
		want bool
	}{
		"fake clientset client":                  {fromFake, false},
		"lister-watcher declaring no watch-list": {fromLW, false},
		"plain lister-watcher":                   {plainLW, true},
	} {
		if got := c.src.Info().WatchList; got != c.want {
			t.Errorf("%s: Info().WatchList = %v, want %v", name, got, c.want)
		}
	}
}
