package typed

import (
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/typedinformer/informer/cache"
)

// guessResource names T's resource for NotFound errors: from the client-go
// scheme when T is one of its types (pods for *corev1.Pod), else the
// lower-case plural of the Go type name.
func guessResource[T cache.Object]() schema.GroupResource {
	rt := reflect.TypeFor[T]()
	if rt.Kind() != reflect.Pointer {
		return schema.GroupResource{Resource: strings.ToLower(rt.Name())}
	}
	if obj, ok := reflect.New(rt.Elem()).Interface().(runtime.Object); ok {
		if gvks, _, err := scheme.Scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
			plural, _ := meta.UnsafeGuessKindToResource(gvks[0])
			return plural.GroupResource()
		}
	}
	plural, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Kind: rt.Elem().Name()})
	return plural.GroupResource()
}
