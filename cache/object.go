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

// ErrNoName is returned for an object whose name is empty: it has no key.
var ErrNoName = errors.New("cache: object has no name")

// ErrBadKey is returned by [ParseKey] for a string that is not a valid key.
var ErrBadKey = errors.New("cache: malformed key")

// KeyOf returns the key of an object's metadata: its namespace and name,
// without validation. It is the one key function of this module, the typed
// twin of client-go's cache.MetaObjectToName.
func KeyOf(obj metav1.Object) Key {
	return Key{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// checkedKey is KeyOf for an object about to be stored: nil objects and
// objects without a name have no key.
func checkedKey[T Object](obj T) (Key, error) {
	var zero T
	if obj == zero {
		return Key{}, ErrNilObject
	}
	k := KeyOf(obj)
	if k.Name == "" {
		return Key{}, fmt.Errorf("%w (namespace %q)", ErrNoName, k.Namespace)
	}
	return k, nil
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
