// Package objsize estimates the heap bytes an object references, for an
// informer that reports the size of its cache.
package objsize

import (
	"reflect"
	"sync"
)

// Of estimates the bytes of heap that the pointer p references: the value
// it points to and everything reachable from it through exported fields
// (pointers, slices, maps, strings, interfaces). A string or map that
// several objects share is counted in each of them, so a sum over objects
// is an upper bound of what they hold together; unexported fields count
// their own bytes only (a time.Time's shared location is not followed).
// A map's slots are estimated from its number of entries.
func Of(p any) int64 {
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return 0
	}
	return int64(v.Type().Elem().Size()) + walkerOf(v.Type().Elem())(v.Elem())
}

// walker returns the bytes v references beyond its own.
type walker func(v reflect.Value) int64

var (
	walkers  sync.Map   // reflect.Type -> walker
	building sync.Mutex // held while walkers are built
)

func walkerOf(t reflect.Type) walker {
	if w, ok := walkers.Load(t); ok {
		return w.(walker)
	}
	building.Lock()
	defer building.Unlock()
	return build(t, map[reflect.Type]*walker{})
}

func none(reflect.Value) int64 { return 0 }

// build returns t's walker, building it and those of the types in it;
// pending holds the ones being built, for recursive types.
func build(t reflect.Type, pending map[reflect.Type]*walker) walker {
	if w, ok := walkers.Load(t); ok {
		return w.(walker)
	}
	if p, ok := pending[t]; ok {
		return func(v reflect.Value) int64 { return (*p)(v) }
	}
	p := new(walker)
	pending[t] = p
	*p = newWalker(t, pending)
	walkers.Store(t, *p)
	return *p
}

// mapBytes estimates the bytes of a Go map of n entries of slot bytes
// each: its header, and groups of 8 slots with a control byte each, one
// group up to 8 entries, then a power of two of them filled to at most
// 7/8.
func mapBytes(n, slot int64) int64 {
	const header, group = 48, 8
	slots := int64(group)
	for slots*7/8 < n {
		slots *= 2
	}
	return header + slots*(slot+1)
}

func newWalker(t reflect.Type, pending map[reflect.Type]*walker) walker {
	switch t.Kind() {
	case reflect.String:
		return func(v reflect.Value) int64 { return int64(v.Len()) }
	case reflect.Pointer:
		elem, size := build(t.Elem(), pending), int64(t.Elem().Size())
		return func(v reflect.Value) int64 {
			if v.IsNil() {
				return 0
			}
			return size + elem(v.Elem())
		}
	case reflect.Slice:
		elem, size, flat := build(t.Elem(), pending), int64(t.Elem().Size()), isFlat(t.Elem())
		return func(v reflect.Value) int64 {
			if v.IsNil() {
				return 0
			}
			n := int64(v.Cap()) * size
			if !flat {
				for i := range v.Len() {
					n += elem(v.Index(i))
				}
			}
			return n
		}
	case reflect.Map:
		key, elem := build(t.Key(), pending), build(t.Elem(), pending)
		slot := int64(t.Key().Size() + t.Elem().Size())
		flat := isFlat(t.Key()) && isFlat(t.Elem())
		return func(v reflect.Value) int64 {
			if v.IsNil() {
				return 0
			}
			n := mapBytes(int64(v.Len()), slot)
			if !flat {
				for it := v.MapRange(); it.Next(); {
					n += key(it.Key()) + elem(it.Value())
				}
			}
			return n
		}
	case reflect.Interface:
		return func(v reflect.Value) int64 {
			if v.IsNil() {
				return 0
			}
			e := v.Elem()
			n := walkerOf(e.Type())(e)
			if e.Kind() != reflect.Pointer {
				n += int64(e.Type().Size()) // boxed
			}
			return n
		}
	case reflect.Array:
		if isFlat(t.Elem()) {
			return none
		}
		elem := build(t.Elem(), pending)
		return func(v reflect.Value) int64 {
			var n int64
			for i := range v.Len() {
				n += elem(v.Index(i))
			}
			return n
		}
	case reflect.Struct:
		type field struct {
			i int
			w walker
		}
		var fs []field
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && !isFlat(f.Type) {
				fs = append(fs, field{i, build(f.Type, pending)})
			}
		}
		if len(fs) == 0 {
			return none
		}
		return func(v reflect.Value) int64 {
			var n int64
			for _, f := range fs {
				n += f.w(v.Field(f.i))
			}
			return n
		}
	}
	return none
}

// isFlat reports a type whose values reference nothing the estimate
// follows.
func isFlat(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return false
	case reflect.Array:
		return isFlat(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && !isFlat(f.Type) {
				return false
			}
		}
	}
	return true
}
