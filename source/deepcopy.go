package source

import (
	"reflect"
	"sync"
)

// DeepCopy returns a deep copy of *in, for the DeepCopyObject of a
// projection (see Projection) or any struct without generated deep-copy
// code: pointers, slices and maps are copied all the way down; a type
// with a generated DeepCopyInto (metav1.ObjectMeta, corev1.PodCondition,
// every API type) is copied by it. Unexported fields are copied as
// values (a time.Time's location is shared, as its own copies share it),
// and so are interfaces.
// DeepCopy(nil) is nil.
func DeepCopy[T any](in *T) *T {
	if in == nil {
		return nil
	}
	out := new(T)
	copierOf(reflect.TypeFor[T]())(reflect.ValueOf(out).Elem(), reflect.ValueOf(in).Elem())
	return out
}

// copier sets dst, settable, to a deep copy of src, of dst's type.
type copier func(dst, src reflect.Value)

var (
	copiers  sync.Map   // reflect.Type -> copier
	building sync.Mutex // held while copiers are built
)

func copierOf(t reflect.Type) copier {
	if c, ok := copiers.Load(t); ok {
		return c.(copier)
	}
	building.Lock()
	defer building.Unlock()
	return buildingCopier(t, map[reflect.Type]*copier{})
}

// buildingCopier returns t's copier, building it (and those of the types
// in it) if need be; pending holds the ones being built, so that a
// recursive type finds its own.
func buildingCopier(t reflect.Type, pending map[reflect.Type]*copier) copier {
	if c, ok := copiers.Load(t); ok {
		return c.(copier)
	}
	if p, ok := pending[t]; ok {
		return func(dst, src reflect.Value) { (*p)(dst, src) }
	}
	p := new(copier)
	pending[t] = p
	*p = buildCopier(t, pending)
	copiers.Store(t, *p)
	return *p
}

func buildCopier(t reflect.Type, pending map[reflect.Type]*copier) copier {
	if m, ok := reflect.PointerTo(t).MethodByName("DeepCopyInto"); ok &&
		m.Type.NumIn() == 2 && m.Type.In(1) == reflect.PointerTo(t) && m.Type.NumOut() == 0 {
		return func(dst, src reflect.Value) {
			m.Func.Call([]reflect.Value{src.Addr(), dst.Addr()})
		}
	}
	switch t.Kind() {
	case reflect.Pointer:
		elem := buildingCopier(t.Elem(), pending)
		return func(dst, src reflect.Value) {
			if src.IsNil() {
				dst.SetZero()
				return
			}
			n := reflect.New(t.Elem())
			elem(n.Elem(), src.Elem())
			dst.Set(n)
		}
	case reflect.Slice:
		elem := buildingCopier(t.Elem(), pending)
		return func(dst, src reflect.Value) {
			if src.IsNil() {
				dst.SetZero()
				return
			}
			n := reflect.MakeSlice(t, src.Len(), src.Len())
			for i := range src.Len() {
				elem(n.Index(i), src.Index(i))
			}
			dst.Set(n)
		}
	case reflect.Map:
		key, elem := buildingCopier(t.Key(), pending), buildingCopier(t.Elem(), pending)
		return func(dst, src reflect.Value) {
			if src.IsNil() {
				dst.SetZero()
				return
			}
			n := reflect.MakeMapWithSize(t, src.Len())
			for it := src.MapRange(); it.Next(); {
				k, v := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
				key(k, it.Key())
				elem(v, it.Value())
				n.SetMapIndex(k, v)
			}
			dst.Set(n)
		}
	case reflect.Array:
		elem := buildingCopier(t.Elem(), pending)
		return func(dst, src reflect.Value) {
			for i := range src.Len() {
				elem(dst.Index(i), src.Index(i))
			}
		}
	case reflect.Struct:
		type field struct {
			i int
			c copier
		}
		var deep []field
		for i := range t.NumField() {
			f := t.Field(i)
			if f.IsExported() && !flat(f.Type) {
				deep = append(deep, field{i, buildingCopier(f.Type, pending)})
			}
		}
		return func(dst, src reflect.Value) {
			dst.Set(src) // every field as a value, unexported ones too
			for _, f := range deep {
				f.c(dst.Field(f.i), src.Field(f.i))
			}
		}
	}
	return func(dst, src reflect.Value) { dst.Set(src) }
}

// flat reports a type whose value copy is a deep copy.
func flat(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return false
	case reflect.Array:
		return flat(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && !flat(f.Type) {
				return false
			}
		}
		if _, ok := reflect.PointerTo(t).MethodByName("DeepCopyInto"); ok {
			return false
		}
	}
	return true
}
