package source_test

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// FromDynamic serves any resource as unstructured objects; the source
// names its resource exactly, for informer names and NotFound errors.
func ExampleFromDynamic() {
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "WidgetList"},
		&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"namespace": "shop", "name": "blue"},
			"spec":     map[string]any{"size": int64(3)},
		}})
	src, err := source.FromDynamic(client, gvr, source.DynamicOptions{Namespace: "shop"})
	if err != nil {
		panic(err)
	}
	r := source.ResourceOf(src)
	fmt.Println(r.GroupResource, r.Scope)

	list, err := src.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	for _, u := range list.Items { // u is an *unstructured.Unstructured
		size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size")
		fmt.Println(u.GetNamespace(), u.GetName(), size)
	}

	_, err = source.FromDynamic(client, schema.GroupVersionResource{Resource: "widgets"}, source.DynamicOptions{})
	fmt.Println(err)
	// Output:
	// widgets.example.com namespaced
	// shop blue 3
	// source: no resource: FromDynamic: resource "widgets" version "": a resource and a version are needed
}

// FromMetadata serves only the metadata of each object: a Secret's name,
// labels and owners, never its data.
func ExampleFromMetadata() {
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		panic(err)
	}
	client := metadatafake.NewSimpleMetadataClient(scheme, &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "tls", Labels: map[string]string{"app": "web"}},
	})
	src, err := source.FromMetadata(client, schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, source.DynamicOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(source.ResourceOf(src).GroupResource)

	list, err := src.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	for _, m := range list.Items { // m is a *metav1.PartialObjectMetadata
		fmt.Println(m.Kind, m.Namespace, m.Name, m.Labels)
	}
	// Output:
	// secrets
	// Secret shop tls map[app:web]
}

// Widget is a custom resource's Go type that no scheme knows.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec `json:"spec"`
}

// WidgetSpec is a Widget's spec.
type WidgetSpec struct {
	Size int64 `json:"size"`
}

// DeepCopyObject copies the widget, as controller-gen would write it.
func (w *Widget) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// Convert turns unstructured objects into a Go struct; one that does not
// fit is an error naming it, never a panic.
func ExampleConvert() {
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widget := func(name string, size any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"namespace": "shop", "name": name},
			"spec":     map[string]any{"size": size},
		}}
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "WidgetList"}, widget("blue", int64(3)))
	dyn, err := source.FromDynamic(client, gvr, source.DynamicOptions{})
	if err != nil {
		panic(err)
	}
	src, err := source.Convert[*Widget](dyn)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	list, err := src.List(ctx, metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	for _, w := range list.Items { // w is a *Widget
		fmt.Println(w.Namespace, w.Name, w.Spec.Size)
	}

	if _, err := client.Resource(gvr).Namespace("shop").Create(ctx, widget("odd", "large"), metav1.CreateOptions{}); err != nil {
		panic(err)
	}
	_, err = src.List(ctx, metav1.ListOptions{})
	fmt.Println(err)
	// Output:
	// shop blue 3
	// list: source: object of the wrong type: Widget shop/odd into *source_test.Widget: unrecognized type: int64
}

// Three ways to cache Secrets, from the most to the least memory: the full
// object, the object trimmed by a Transform, and metadata only (the data
// never reaches the process).
func Example_cacheOnlyWhatYouNeed() {
	ctx, cancel := context.WithCancel(context.Background())
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "tls", Labels: map[string]string{"app": "web"}},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: []byte("cert"), corev1.TLSPrivateKeyKey: []byte("key")},
	}
	clientset := fake.NewClientset(secret)
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		panic(err)
	}
	meta := metadatafake.NewSimpleMetadataClient(scheme, &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: secret.ObjectMeta,
	})

	// Full: every field of every Secret.
	typedSrc, err := source.FromClient[*corev1.Secret](clientset.CoreV1().Secrets(metav1.NamespaceAll))
	if err != nil {
		panic(err)
	}
	full, err := typed.NewInformer(typedSrc, typed.Options[*corev1.Secret]{})
	if err != nil {
		panic(err)
	}
	// Trimmed: the same list and watch, the data dropped before caching.
	trimmed, err := typed.NewInformer(typedSrc, typed.Options[*corev1.Secret]{
		Transform: func(s *corev1.Secret) (*corev1.Secret, error) {
			s.Data, s.StringData = nil, nil
			return s, nil
		},
	})
	if err != nil {
		panic(err)
	}
	// Metadata only: the server sends no data at all.
	metaSrc, err := source.FromMetadata(meta, schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, source.DynamicOptions{})
	if err != nil {
		panic(err)
	}
	metaOnly, err := typed.NewInformer(metaSrc, typed.Options[*metav1.PartialObjectMetadata]{})
	if err != nil {
		panic(err)
	}

	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{full.Run, trimmed.Run, metaOnly.Run} {
		wg.Go(func() { _ = run(ctx) })
	}
	if err := typed.WaitForCacheSync(ctx, full, trimmed, metaOnly); err != nil {
		panic(err)
	}
	s, _ := full.Lister().Namespace("shop").Get("tls")
	fmt.Println("full:", s.Name, s.Type, len(s.Data), "data keys")
	s, _ = trimmed.Lister().Namespace("shop").Get("tls")
	fmt.Println("trimmed:", s.Name, s.Type, len(s.Data), "data keys")
	m, _ := metaOnly.Lister().Namespace("shop").Get("tls")
	fmt.Println("metadata:", m.Name, m.Labels)
	_, err = metaOnly.Lister().Namespace("shop").Get("missing")
	fmt.Println(err)
	cancel()
	wg.Wait()
	// Output:
	// full: tls kubernetes.io/tls 2 data keys
	// trimmed: tls kubernetes.io/tls 0 data keys
	// metadata: tls map[app:web]
	// secrets "missing" not found
}
