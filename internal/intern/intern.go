// Package intern shares equal strings between decoded objects: a cache of
// thousands of pods holds the same namespace, label keys and values, image
// names, container names and condition types thousands of times, because a
// JSON or protobuf decoder allocates every string it reads. [Interner.Strings]
// replaces each string field of an object with one canonical copy, which
// the table of canonical copies holds weakly: a string no object uses any
// more is freed, and its entry is forgotten.
//
// Strings are immutable, so an object whose strings are shared behaves
// exactly as before, and a caller may still modify its maps and slices in
// place. With Options.Maps, equal maps (map[string]string and
// ResourceList) are shared whole as well (maps.go): the objects are then
// read-only, as the objects of an informer's cache are. Slices are never
// shared.
//
// What is walked is compiled once per Go type (see [New]): string fields,
// pointers to strings, nested and embedded structs, pointers to structs,
// slices of strings, structs and pointers to structs, and map[string]string
// keys and values. Byte slices, interfaces, arrays, unexported fields,
// other maps and types without strings are left alone, as are the strings
// that are unique to one object (metadata name, uid, resourceVersion,
// selfLink; a pod's IP and its containers' IDs): each would cost an entry
// in the canonical map and save nothing.
package intern

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
)

// ErrWrongType is returned by [New] for a type that is not a pointer to a
// struct.
var ErrWrongType = errors.New("intern: not a pointer to a struct")

// ErrPanic is wrapped by the error of [Interner.Strings] if walking an
// object panicked; the object is left valid, with some strings shared.
var ErrPanic = errors.New("intern: panic")

// DefaultMaxLen is the default of Options.MaxLen.
const DefaultMaxLen = 1024

// Options configure [New]. The zero value shares strings of up to
// DefaultMaxLen bytes.
type Options struct {
	// MaxLen is the length of the longest string shared: a longer one
	// (a ConfigMap's data, a last-applied-configuration annotation) is
	// seldom equal in two objects, and sharing it would copy it once
	// more. Default (0): DefaultMaxLen; negative: no limit.
	MaxLen int
	// Maps shares equal maps as well (see maps.go): a map[string]string
	// (labels, annotations), once its strings are shared, and a
	// ResourceList, each replaced by one canonical copy for all objects
	// holding an equal map of at most 32 entries. The objects' maps must
	// then never be modified in place.
	Maps bool
}

// Interner shares the strings of objects of type T, a pointer to a
// struct. It is safe for concurrent use on different objects.
type Interner[T any] struct {
	plan   *plan
	maxLen int
	maps   bool
	locals sync.Pool // *local, one per walk in progress
}

// New returns an Interner for T, compiling the walk of T's type once per
// process (later calls for the same type reuse it). It fails for a T that
// is not a pointer to a struct.
func New[T any](opts Options) (*Interner[T], error) {
	rt := reflect.TypeFor[T]()
	if rt.Kind() != reflect.Pointer || rt.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: %v", ErrWrongType, rt)
	}
	maxLen := opts.MaxLen
	switch {
	case maxLen == 0:
		maxLen = DefaultMaxLen
	case maxLen < 0:
		maxLen = int(^uint(0) >> 1)
	}
	return &Interner[T]{plan: planFor(rt.Elem()), maxLen: maxLen, maps: opts.Maps}, nil
}

// Strings replaces every string of obj that the plan covers with its
// canonical copy, in place; a nil obj is left alone. obj must not be in
// use by another goroutine: call it on an object just decoded, before it
// is handed out. It allocates nothing but the canonical copies of strings
// not seen before.
func (in *Interner[T]) Strings(obj T) (err error) {
	p := reflect.ValueOf(obj).UnsafePointer()
	if p == nil || len(in.plan.ops) == 0 {
		return nil
	}
	l, _ := in.locals.Get().(*local)
	if l == nil {
		l = new(local)
	}
	defer func() {
		in.locals.Put(l)
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %T: %v", ErrPanic, obj, r)
		}
	}()
	in.walk(in.plan, p, l)
	return nil
}

// Empty reports whether T has no string to share: Strings does nothing.
func (in *Interner[T]) Empty() bool { return len(in.plan.ops) == 0 }

// str returns the canonical copy of s, or s if it is empty or too long.
func (in *Interner[T]) str(s string, l *local) string {
	if len(s) == 0 || len(s) > in.maxLen {
		return s
	}
	return l.canonical(s)
}

// localSlots is the size of a local cache: more than the distinct strings
// of a pod that are worth sharing.
const localSlots = 512

// local is a small cache of canonical copies, owned by one walk at a time
// (Interner.locals hands them out): a string seen recently, in this object
// or an earlier one, costs a hash and a compare, with no lock taken and no
// weak pointer read. It holds its strings strongly, at most localSlots of
// them, until the pool drops it.
type local struct {
	slots [localSlots]string
}

func (l *local) canonical(s string) string {
	h := hashOf(strs, s)
	slot := &l.slots[h%localSlots]
	if *slot == s {
		return *slot
	}
	c := strs.canonicalHashed(s, h)
	*slot = c
	return c
}

// sliceHeader is the layout of every slice.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// walk shares the strings of the struct at base, as p says.
func (in *Interner[T]) walk(p *plan, base unsafe.Pointer, l *local) {
	for i := range p.ops {
		o := &p.ops[i]
		at := unsafe.Add(base, o.off)
		switch o.kind {
		case opString:
			s := (*string)(at)
			*s = in.str(*s, l)
		case opStringPtr:
			if s := *(**string)(at); s != nil {
				*s = in.str(*s, l)
			}
		case opStrings:
			for j, s := range *(*[]string)(at) {
				(*(*[]string)(at))[j] = in.str(s, l)
			}
		case opStruct:
			if q := *(*unsafe.Pointer)(at); q != nil {
				in.walk(o.sub, q, l)
			}
		case opStructs:
			h := (*sliceHeader)(at)
			for j := range h.len {
				in.walk(o.sub, unsafe.Add(h.data, uintptr(j)*o.size), l)
			}
		case opStructPtrs:
			for _, q := range *(*[]unsafe.Pointer)(at) {
				if q != nil {
					in.walk(o.sub, q, l)
				}
			}
		case opStringMap:
			m := *(*map[string]string)(at)
			for k, v := range m {
				// Assigning to a key already in the map stores the key
				// given: the map keeps the shared copy. No entry is
				// added, so the iteration is not disturbed.
				m[in.str(k, l)] = in.str(v, l)
			}
			if in.maps {
				*(*map[string]string)(at) = canonicalMap(stringMaps, m, hashStringEntry)
			}
		case opQuantityMap:
			if in.maps {
				m := (*map[string]resource.Quantity)(at)
				*m = canonicalMap(quantityMaps, *m, hashQuantityEntry)
			}
		}
	}
}

// opKind says what a field holds.
type opKind uint8

const (
	opString      opKind = iota // string
	opStringPtr                 // *string
	opStrings                   // []string
	opStruct                    // *struct, walked with sub
	opStructs                   // []struct of size bytes each, walked with sub
	opStructPtrs                // []*struct, walked with sub
	opStringMap                 // map[string]string, keys and values
	opQuantityMap               // map[string]resource.Quantity (a ResourceList), shared whole with Options.Maps
)

// op is one field of a plan, at off bytes from the struct's start
// (embedded and nested structs are flattened into their parent's plan).
type op struct {
	kind opKind
	off  uintptr
	size uintptr
	sub  *plan
}

// plan is where a struct type holds strings.
type plan struct {
	ops []op
}

// plans caches the plan of every struct type compiled: reflect.Type to
// *plan. A stored plan is never modified.
var plans sync.Map

// planFor returns the plan of struct type t, compiling it (and the plans
// of the types it points to) once.
func planFor(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	c := &compiler{seen: map[reflect.Type]*plan{}}
	p := c.structPlan(t)
	c.prune()
	for t, p := range c.seen {
		plans.LoadOrStore(t, p)
	}
	return p
}

// compiler compiles the plans of a struct type and those it refers to;
// seen holds them, including those still being compiled (a recursive
// type refers to itself).
type compiler struct {
	seen map[reflect.Type]*plan
}

func (c *compiler) structPlan(t reflect.Type) *plan {
	if p, ok := c.seen[t]; ok {
		return p
	}
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	p := &plan{}
	c.seen[t] = p
	p.ops = c.fields(t, 0, nil)
	return p
}

// fields appends the ops of struct type t, placed at base, to ops.
func (c *compiler) fields(t reflect.Type, base uintptr, ops []op) []op {
	skip := perObject[t.PkgPath()+"."+t.Name()]
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || skip[f.Name] {
			continue
		}
		ops = c.field(f.Type, base+f.Offset, ops)
	}
	return ops
}

// field appends the ops of a field of type ft at off.
func (c *compiler) field(ft reflect.Type, off uintptr, ops []op) []op {
	switch ft.Kind() {
	case reflect.String:
		return append(ops, op{kind: opString, off: off})
	case reflect.Struct:
		return c.fields(ft, off, ops)
	case reflect.Pointer:
		switch e := ft.Elem(); e.Kind() {
		case reflect.String:
			return append(ops, op{kind: opStringPtr, off: off})
		case reflect.Struct:
			return append(ops, op{kind: opStruct, off: off, sub: c.structPlan(e)})
		}
	case reflect.Slice:
		switch e := ft.Elem(); e.Kind() {
		case reflect.String:
			return append(ops, op{kind: opStrings, off: off})
		case reflect.Struct:
			return append(ops, op{kind: opStructs, off: off, size: e.Size(), sub: c.structPlan(e)})
		case reflect.Pointer:
			if e.Elem().Kind() == reflect.Struct {
				return append(ops, op{kind: opStructPtrs, off: off, sub: c.structPlan(e.Elem())})
			}
		}
	case reflect.Map:
		if ft.Key().Kind() == reflect.String && ft.Elem().Kind() == reflect.String {
			return append(ops, op{kind: opStringMap, off: off})
		}
		if ft.Key().Kind() == reflect.String && ft.Elem() == reflect.TypeFor[resource.Quantity]() {
			return append(ops, op{kind: opQuantityMap, off: off})
		}
	}
	return ops
}

// prune drops the ops that walk into a plan with no ops, until none is
// left: a type is only walked if it holds strings.
func (c *compiler) prune() {
	for changed := true; changed; {
		changed = false
		for _, p := range c.seen {
			kept := p.ops[:0]
			for _, o := range p.ops {
				if o.sub != nil && len(o.sub.ops) == 0 {
					changed = true
					continue
				}
				kept = append(kept, o)
			}
			p.ops = kept
		}
	}
}

// perObject names, by struct type (package path and name, so that no API
// group is linked for it), the string fields whose value is unique to one
// object, so not shared: interning one would add an entry to the canonical
// map, copy the string once more and save nothing.
var perObject = map[string]map[string]bool{
	"k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta": {"Name": true, "UID": true, "ResourceVersion": true, "SelfLink": true},
	"k8s.io/apimachinery/pkg/apis/meta/v1.ListMeta":   {"ResourceVersion": true, "SelfLink": true, "Continue": true},
	"k8s.io/api/core/v1.PodStatus":                    {"PodIP": true},
	"k8s.io/api/core/v1.PodIP":                        {"IP": true},
	"k8s.io/api/core/v1.ContainerStatus":              {"ContainerID": true},
	"k8s.io/api/core/v1.NodeSystemInfo":               {"MachineID": true, "SystemUUID": true, "BootID": true},
}
