package source

import (
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/objects"
)

// Resource says what a source lists: the resource, to name it in errors,
// and its scope, so that a lister can refuse a lookup in the wrong scope.
// Either may be unknown (empty, cache.ScopeUnknown).
type Resource struct {
	// GroupResource is the resource, such as {Resource: "pods"} or
	// {Group: "apps", Resource: "deployments"}.
	schema.GroupResource
	// Scope is cache.ScopeNamespaced or cache.ScopeCluster when known.
	Scope cache.Scope
}

// ResourceOf returns what src says about its resource (Info.Resource).
// For what the source leaves empty, it guesses the resource from T's Go
// type name the way the API machinery names resources (Pod: pods,
// Endpoints: endpoints), with no group and an unknown scope; it makes no
// guess for the generic types (Unstructured, PartialObjectMetadata), whose
// resource only the source knows.
func ResourceOf[T cache.Object](src Source[T]) Resource {
	r := src.Info().Resource
	if r.Resource == "" {
		r.GroupResource = guessResource[T]()
	}
	return r
}

// guessResource names T's resource from its Go type name.
func guessResource[T cache.Object]() schema.GroupResource {
	rt := reflect.TypeFor[T]()
	if rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	switch rt.Name() {
	case "", "Unstructured", "PartialObjectMetadata":
		return schema.GroupResource{}
	}
	plural, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Kind: rt.Name()})
	return plural.GroupResource()
}

// ErrNilSource is returned by [Check] and by constructors given a nil source,
// client or lister-watcher.
var ErrNilSource = errors.New("source: nil source")

// Check reports a nil source, including a typed nil pointer in the
// interface, which would fail only later, in another goroutine.
func Check[T cache.Object](src Source[T]) error {
	if objects.IsNil(src) {
		return fmt.Errorf("%w (Source[%s])", ErrNilSource, reflect.TypeFor[T]())
	}
	return nil
}
