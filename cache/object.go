package cache

import (
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is the constraint satisfied by every type the cache can hold: a
// comparable type (in practice a pointer) that carries object metadata and is
// a runtime.Object. *corev1.Pod, *appsv1.Deployment,
// *unstructured.Unstructured and *metav1.PartialObjectMetadata all satisfy it.
type Object interface {
	comparable
	metav1.Object
	runtime.Object
}

// Key identifies an object in a cache: its namespace (empty for
// cluster-scoped objects) and its name. Key is comparable and cheap to copy;
// use it as a map key or as a workqueue item.
type Key struct {
	// Namespace is empty for cluster-scoped objects.
	Namespace string
	// Name is the object's name.
	Name string
}

// String returns client-go's key form: "namespace/name", or "name" when the
// namespace is empty. It matches cache.MetaNamespaceKeyFunc.
func (k Key) String() string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

// ErrNilObject is returned when a nil object is given where an object is
// required.
var ErrNilObject = errors.New("cache: nil object")

// ErrNoName is returned by [MetaKey] for an object whose name is empty.
var ErrNoName = errors.New("cache: object has no name")

// ErrBadKey is returned by [ParseKey] for a string that is not a valid key.
var ErrBadKey = errors.New("cache: malformed key")

// KeyFunc computes the key of an object. It must be deterministic.
type KeyFunc[T Object] func(obj T) (Key, error)

// MetaKey is the default [KeyFunc]: the object's namespace and name. It
// returns [ErrNilObject] for a nil object and [ErrNoName] for an object
// without a name.
func MetaKey[T Object](obj T) (Key, error) {
	var zero T
	if obj == zero {
		return Key{}, ErrNilObject
	}
	name := obj.GetName()
	if name == "" {
		return Key{}, fmt.Errorf("%w (namespace %q)", ErrNoName, obj.GetNamespace())
	}
	return Key{Namespace: obj.GetNamespace(), Name: name}, nil
}

// KeyOf returns the key of any object's metadata, without validation. It is
// the typed twin of client-go's cache.MetaObjectToName.
func KeyOf(obj metav1.Object) Key {
	return Key{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// ParseKey reads a key in client-go's "namespace/name" or "name" form, as
// cache.SplitMetaNamespaceKey does.
func ParseKey(s string) (Key, error) {
	ns, name, found := strings.Cut(s, "/")
	if !found {
		if s == "" {
			return Key{}, fmt.Errorf("%w: empty", ErrBadKey)
		}
		return Key{Name: s}, nil
	}
	if name == "" || strings.Contains(name, "/") {
		return Key{}, fmt.Errorf("%w: %q", ErrBadKey, s)
	}
	return Key{Namespace: ns, Name: name}, nil
}
