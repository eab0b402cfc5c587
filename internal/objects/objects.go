// Package objects changes objects without touching the originals: the
// informer trims what it caches, but the object a source handed over may be
// shared with other readers, so it trims a copy. It also says whether a
// value handed to a constructor is nil inside its interface.
package objects

import (
	"maps"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/typedinformer/informer/cache"
)

// WithoutManagedFields returns obj without metadata.managedFields, as a
// copy that shares everything else with obj: obj itself is not modified.
// An object without managedFields is returned as is. ok is false for a T
// the function cannot copy (not a pointer to a struct); obj is then
// returned unchanged.
func WithoutManagedFields[T cache.Object](obj T) (out T, ok bool) {
	if len(obj.GetManagedFields()) == 0 {
		return obj, true
	}
	if u, isU := any(obj).(*unstructured.Unstructured); isU {
		c := &unstructured.Unstructured{Object: maps.Clone(u.Object)}
		if md, isMap := u.Object["metadata"].(map[string]any); isMap {
			md = maps.Clone(md)
			delete(md, "managedFields")
			c.Object["metadata"] = md
		}
		out, ok = any(c).(T)
		return out, ok
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return obj, false
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	out, ok = c.Interface().(T)
	if !ok {
		return obj, false
	}
	out.SetManagedFields(nil)
	return out, true
}

// IsNil reports a nil interface, or a nil pointer, map, slice, func or
// channel in one: a value whose methods would panic.
func IsNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
