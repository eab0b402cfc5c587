package source

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Projection is implemented by a struct that holds some of the fields of
// an API type, to be listed and watched as that type but decoded into
// the struct alone: the fields it leaves out are skipped in the server's
// bytes, never allocated. [FromConfig] takes the kind, and the protobuf
// field numbers, from the type ProjectionOf returns, and checks every
// field of the projection against it.
//
// A projection is a pointer to a struct with the type's metav1.ObjectMeta
// (json "metadata"), its own DeepCopyObject, and any of the type's other
// fields under the same JSON names, with the same types or, for a struct,
// a projection of it (a struct of some of its fields); a field's type may
// also be a pointer where the type's is not, or the reverse. Everything
// else of this library (listers, selectors, indexes, handlers, the
// Factory, reconcile, sharding) treats it as any other object. The server
// is asked for the whole type, with the same selectors: a projection is
// a client-side view.
//
//	type PodSummary struct {
//		metav1.TypeMeta   `json:",inline"`
//		metav1.ObjectMeta `json:"metadata"`
//		Spec              struct{ NodeName string `json:"nodeName"` } `json:"spec"`
//		Status            struct {
//			Phase      corev1.PodPhase       `json:"phase"`
//			Conditions []corev1.PodCondition `json:"conditions"`
//		} `json:"status"`
//	}
//
//	func (*PodSummary) ProjectionOf() runtime.Object { return &corev1.Pod{} }
//	func (p *PodSummary) DeepCopyObject() runtime.Object { return source.DeepCopy(p) }
type Projection interface {
	// ProjectionOf returns a value of the type projected (any value: only
	// its type is used). Nil means a type without a Go struct (a CRD
	// known only by its GroupVersionKind, RESTOptions.GroupVersionKind):
	// nothing to check the fields against, and JSON only.
	ProjectionOf() runtime.Object
}

// ErrBadProjection is wrapped by the errors of [FromConfig] for a
// projection that does not fit the type it projects.
var ErrBadProjection = errors.New("source: bad projection")

var (
	objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()
	typeMetaType   = reflect.TypeFor[metav1.TypeMeta]()
	jsonUnmarshal  = reflect.TypeFor[json.Unmarshaler]()
)

// jsonField is a field of a struct under its JSON name: its index path
// (through embedded structs whose fields JSON promotes) and, for the
// projected type, its protobuf tags.
type jsonField struct {
	name  string
	index []int
	typ   reflect.Type
	proto string // the protobuf tag: "bytes,1,opt,name=metadata"; "" if none
}

// jsonFields lists t's fields by JSON name as encoding/json sees them: a
// field tagged "-" or unexported is left out, an embedded struct without
// a name has its fields promoted. A field reached through an embedded
// pointer is left out (it cannot be set without allocating its parent).
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	var walk func(t reflect.Type, index []int, proto bool)
	walk = func(t reflect.Type, index []int, proto bool) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			idx := append(append([]int(nil), index...), i)
			if f.Anonymous && name == "" {
				ft := f.Type
				if ft.Kind() == reflect.Struct {
					// Promoted fields carry protobuf numbers only if the
					// embedded struct is itself a field of the message.
					walk(ft, idx, proto && f.Tag.Get("protobuf") != "")
				}
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			jf := jsonField{name: name, index: idx, typ: f.Type}
			if proto {
				jf.proto = f.Tag.Get("protobuf")
			}
			out = append(out, jf)
		}
	}
	walk(t, nil, true)
	return out
}

func fieldNamed(fs []jsonField, name string) (jsonField, bool) {
	for _, f := range fs {
		if f.name == name {
			return f, true
		}
	}
	return jsonField{}, false
}

// checkProjection checks the struct p (a projection) against the struct
// full, field by field, and returns the first misfit with its JSON path.
func checkProjection(p, full reflect.Type) error {
	pf := jsonFields(p)
	meta, ok := fieldNamed(pf, "metadata")
	if !ok || meta.typ != objectMetaType {
		return fmt.Errorf("%w: %v has no metadata field of type metav1.ObjectMeta (embed it with `json:\"metadata\"`)", ErrBadProjection, p)
	}
	return checkStruct(p, full, "")
}

func checkStruct(p, full reflect.Type, path string) error {
	ff := jsonFields(full)
	for _, f := range jsonFields(p) {
		if f.typ == typeMetaType || (path == "" && (f.name == "apiVersion" || f.name == "kind")) {
			continue // the envelope's, in every type
		}
		at := join(path, f.name)
		g, ok := fieldNamed(ff, f.name)
		if !ok {
			return fmt.Errorf("%w: %s: %v has no field %q", ErrBadProjection, at, full, f.name)
		}
		if err := checkType(f.typ, g.typ, at); err != nil {
			return err
		}
	}
	return nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// checkType checks that a value of the projected type full decodes into
// a projection field of type p.
func checkType(p, full reflect.Type, at string) error {
	p, full = deref(p), deref(full)
	if p == full {
		return nil
	}
	bad := func(why string) error {
		return fmt.Errorf("%w: %s: %v in the projection, %v in the type%s", ErrBadProjection, at, p, full, why)
	}
	if custom(full) || custom(p) {
		return bad(": it decodes itself, so the projection must use the same type")
	}
	switch {
	case p.Kind() != full.Kind():
		return bad("")
	case p.Kind() == reflect.Struct:
		return checkStruct(p, full, at)
	case p.Kind() == reflect.Slice:
		if p.Elem().Kind() == reflect.Uint8 || full.Elem().Kind() == reflect.Uint8 {
			if p.Elem() != full.Elem() {
				return bad("")
			}
			return nil
		}
		return checkType(p.Elem(), full.Elem(), at+"[]")
	case p.Kind() == reflect.Map:
		if p.Key().Kind() != full.Key().Kind() || custom(p.Key()) || custom(full.Key()) {
			return bad(": map keys differ")
		}
		return checkType(p.Elem(), full.Elem(), at+"[]")
	case p.Kind() == reflect.Array, p.Kind() == reflect.Interface, p.Kind() == reflect.Func, p.Kind() == reflect.Chan:
		return bad(": only the same type fits")
	}
	return nil // the same basic kind: a named string for a string, say
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// custom reports a type that decodes itself from JSON (metav1.Time,
// resource.Quantity, intstr.IntOrString): its fields are not its JSON.
func custom(t reflect.Type) bool {
	return t.Implements(jsonUnmarshal) || reflect.PointerTo(t).Implements(jsonUnmarshal)
}
