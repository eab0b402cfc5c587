package source

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// This file decodes a built-in type's protobuf message into a projection
// (see Projection): each field the projection holds is found by the
// number the type's `protobuf` struct tag gives it, and decoded with the
// type's generated Unmarshal where the projection keeps the type's own
// struct (ObjectMeta, a PodCondition), or field by field into a struct of
// the projection's own; every other field is skipped in the bytes.

// protoStruct decodes a message into a struct of a projection.
type protoStruct struct {
	fields []*protoField // by field number; nil: skipped
	// sized are the repeated fields whose slices decode sizes first, by
	// counting their occurrences: at most maxSized of them.
	sized []*protoField
}

// maxSized bounds protoStruct.sized, so that the counts fit an array.
const maxSized = 8

// protoField is one field of the projection in the message.
type protoField struct {
	index []int
	dec   protoValue
	rep   bool // repeated: each occurrence is one element, or one map entry
	typ   reflect.Type
	sized int // the position in protoStruct.sized, or -1
	// meta: the object's metadata, whose managedFields a source that
	// drops them cuts out of the bytes first.
	meta bool
}

// protoValue decodes one occurrence of a field (wire type wire; u for a
// varint or fixed value, b for a length-delimited one) into v, settable.
type protoValue func(v reflect.Value, wire uint64, u uint64, b []byte) error

// protoTag is the part of a `protobuf:"bytes,1,opt,name=metadata"` tag the
// decoder trusts: the field's number.
type protoTag struct {
	num int
}

func parseProtoTag(tag string) (protoTag, bool) {
	parts := strings.Split(tag, ",")
	if len(parts) < 3 {
		return protoTag{}, false
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n <= 0 || n > maxProtoField {
		return protoTag{}, false
	}
	return protoTag{num: n}, true
}

// maxProtoField bounds the field numbers a projection decodes by: the
// API's types number their fields from 1 up, by ones.
const maxProtoField = 1 << 12

// newProtoStruct builds the decoder of struct p, a projection of the
// protobuf message of struct full.
func newProtoStruct(p, full reflect.Type, path string) (*protoStruct, error) {
	s := &protoStruct{}
	ff := jsonFields(full)
	for _, f := range jsonFields(p) {
		if f.typ == typeMetaType || (path == "" && (f.name == "apiVersion" || f.name == "kind")) {
			continue
		}
		at := join(path, f.name)
		g, _ := fieldNamed(ff, f.name) // checkProjection found it
		tag, ok := parseProtoTag(g.proto)
		if !ok {
			return nil, fmt.Errorf("%w: %s: the field has no protobuf number in %v: use JSON", ErrBadProjection, at, full)
		}
		// Repeated by the Go type: the tags of the API's types say "rep"
		// of some single fields (PodStatus's qosClass).
		gt := deref(g.typ)
		rep := gt.Kind() == reflect.Map || (gt.Kind() == reflect.Slice && gt.Elem().Kind() != reflect.Uint8)
		pf := &protoField{index: f.index, rep: rep, typ: f.typ, sized: -1, meta: path == "" && f.name == "metadata"}
		if rep && f.typ.Kind() == reflect.Slice && len(s.sized) < maxSized {
			pf.sized = len(s.sized)
			s.sized = append(s.sized, pf)
		}
		var err error
		switch {
		case gt.Kind() == reflect.Map:
			pf.dec, err = mapDecoder(f.typ, g.typ, at)
		case rep:
			pf.dec, err = elemDecoder(f.typ, g.typ, at)
		default:
			pf.dec, err = valueDecoder(f.typ, g.typ, at)
		}
		if err != nil {
			return nil, err
		}
		if tag.num >= len(s.fields) {
			s.fields = slices.Grow(s.fields, tag.num+1-len(s.fields))[:tag.num+1]
		}
		s.fields[tag.num] = pf
	}
	return s, nil
}

// elemDecoder decodes an occurrence of a repeated field into a slice of
// the projection: one element appended, or a packed run of varints.
func elemDecoder(p, full reflect.Type, at string) (protoValue, error) {
	if p.Kind() != reflect.Slice || deref(full).Kind() != reflect.Slice {
		return nil, fmt.Errorf("%w: %s: a repeated field needs a slice, not %v", ErrBadProjection, at, p)
	}
	elem, err := valueDecoder(p.Elem(), deref(full).Elem(), at+"[]")
	if err != nil {
		return nil, err
	}
	packable := wireOf(deref(full).Elem()) != "bytes"
	return func(v reflect.Value, w uint64, u uint64, b []byte) error {
		if packable && w == protoWireBytes {
			for len(b) > 0 {
				x, n := binary.Uvarint(b)
				if n <= 0 {
					return fmt.Errorf("%w: %s: bad packed varint", errProtoMessage, at)
				}
				b = b[n:]
				if err := elem(extend(v), 0, x, nil); err != nil {
					return err
				}
			}
			return nil
		}
		return elem(extend(v), w, u, b)
	}, nil
}

// extend adds a zero element to the slice v, settable, and returns it;
// in place when there is room (decode sized the slice), as append does
// when there is not.
func extend(v reflect.Value) reflect.Value {
	n := v.Len()
	if n == v.Cap() {
		v.Grow(1)
	}
	v.SetLen(n + 1)
	return v.Index(n)
}

// mapDecoder decodes one map entry (a message: key 1, value 2) into a map
// of the projection.
func mapDecoder(p, full reflect.Type, at string) (protoValue, error) {
	ft := deref(full)
	if p.Kind() != reflect.Map {
		return nil, fmt.Errorf("%w: %s: a map needs a map, not %v", ErrBadProjection, at, p)
	}
	key, err := valueDecoder(p.Key(), ft.Key(), at+"[key]")
	if err != nil {
		return nil, err
	}
	val, err := valueDecoder(p.Elem(), ft.Elem(), at+"[]")
	if err != nil {
		return nil, err
	}
	return func(v reflect.Value, w uint64, _ uint64, b []byte) error {
		if w != protoWireBytes {
			return wireError(at, w)
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(p))
		}
		k, e := reflect.New(p.Key()).Elem(), reflect.New(p.Elem()).Elem()
		err := protoEach(b, func(num int, w uint64, u uint64, b []byte) error {
			switch num {
			case 1:
				return key(k, w, u, b)
			case 2:
				return val(e, w, u, b)
			}
			return nil
		})
		if err != nil {
			return err
		}
		v.SetMapIndex(k, e)
		return nil
	}, nil
}

// valueDecoder decodes one value of a field of type full into a value of
// p. The wire type is the one gogo's generated code writes for full's Go
// type: the tags of the API's types do not always say it (PodSpec's
// priority, an *int32, is tagged "bytes").
func valueDecoder(p, full reflect.Type, at string) (protoValue, error) {
	if p.Kind() == reflect.Pointer {
		inner, err := valueDecoder(p.Elem(), full, at)
		if err != nil {
			return nil, err
		}
		return func(v reflect.Value, w uint64, u uint64, b []byte) error {
			if v.IsNil() {
				v.Set(reflect.New(p.Elem()))
			}
			return inner(v.Elem(), w, u, b)
		}, nil
	}
	full = deref(full)
	if p == full && reflect.PointerTo(p).Implements(protoUnmarshalerType) {
		return func(v reflect.Value, w uint64, _ uint64, b []byte) error {
			if w != protoWireBytes {
				return wireError(at, w)
			}
			u, _ := v.Addr().Interface().(protoUnmarshaler)
			return u.Unmarshal(b)
		}, nil
	}
	want := map[string]uint64{"bytes": protoWireBytes, "varint": 0, "fixed64": 1, "fixed32": 5}[wireOf(full)]
	check := func(w uint64) error {
		if w != want {
			return wireError(at, w)
		}
		return nil
	}
	switch p.Kind() {
	case reflect.Struct:
		s, err := newProtoStruct(p, full, at)
		if err != nil {
			return nil, err
		}
		return func(v reflect.Value, w uint64, _ uint64, b []byte) error {
			if w != protoWireBytes {
				return wireError(at, w)
			}
			return s.decode(v, b, nil, metaCut{})
		}, nil
	case reflect.String:
		return func(v reflect.Value, w uint64, _ uint64, b []byte) error {
			if err := check(w); err != nil {
				return err
			}
			v.SetString(string(b))
			return nil
		}, nil
	case reflect.Slice: // []byte: checkType allows no other slice here
		return func(v reflect.Value, w uint64, _ uint64, b []byte) error {
			if err := check(w); err != nil {
				return err
			}
			v.SetBytes(slices.Clone(b))
			return nil
		}, nil
	case reflect.Bool:
		return func(v reflect.Value, w uint64, u uint64, _ []byte) error {
			if err := check(w); err != nil {
				return err
			}
			v.SetBool(u != 0)
			return nil
		}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(v reflect.Value, w uint64, u uint64, _ []byte) error {
			if err := check(w); err != nil {
				return err
			}
			v.SetInt(int64(u))
			return nil
		}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return func(v reflect.Value, w uint64, u uint64, _ []byte) error {
			if err := check(w); err != nil {
				return err
			}
			v.SetUint(u)
			return nil
		}, nil
	case reflect.Float64:
		return func(v reflect.Value, w uint64, u uint64, _ []byte) error {
			if err := check(w); err != nil {
				return err
			}
			v.SetFloat(math.Float64frombits(u))
			return nil
		}, nil
	case reflect.Float32:
		return func(v reflect.Value, w uint64, u uint64, _ []byte) error {
			if err := check(w); err != nil {
				return err
			}
			v.SetFloat(float64(math.Float32frombits(uint32(u))))
			return nil
		}, nil
	}
	return nil, fmt.Errorf("%w: %s: %v cannot be decoded from protobuf", ErrBadProjection, at, p)
}

// wireOf is the wire type gogo's generated code writes a value of t as.
func wireOf(t reflect.Type) string {
	switch deref(t).Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "varint"
	case reflect.Float64:
		return "fixed64"
	case reflect.Float32:
		return "fixed32"
	}
	return "bytes"
}

// errProtoMessage: an object's bytes are not the protobuf message of its
// type.
var errProtoMessage = errors.New("malformed protobuf message")

var protoUnmarshalerType = reflect.TypeFor[protoUnmarshaler]()

func wireError(at string, w uint64) error {
	return fmt.Errorf("%w: %s: unexpected wire type %d", errProtoMessage, at, w)
}

// decode decodes the message b into the struct v. For the object's own
// message, mc says what to cut from its metadata first, and cut is room
// for the cut copy.
func (s *protoStruct) decode(v reflect.Value, b []byte, cut *[]byte, mc metaCut) error {
	if len(s.sized) > 0 {
		// Count the elements of each slice, to allocate each once.
		var counts [maxSized]int
		if err := protoEach(b, func(num int, _ uint64, _ uint64, _ []byte) error {
			if num < len(s.fields) && s.fields[num] != nil && s.fields[num].sized >= 0 {
				counts[s.fields[num].sized]++
			}
			return nil
		}); err != nil {
			return err
		}
		for i, f := range s.sized {
			if counts[i] > 0 {
				if fv := v.FieldByIndex(f.index); fv.Len() == 0 && fv.Cap() < counts[i] {
					fv.Set(reflect.MakeSlice(f.typ, 0, counts[i]))
				}
			}
		}
	}
	return protoEach(b, func(num int, w uint64, u uint64, val []byte) error {
		if num >= len(s.fields) || s.fields[num] == nil {
			return nil
		}
		f := s.fields[num]
		if f.meta && mc.any() && w == protoWireBytes {
			val = mc.cutMeta(val, cut)
		}
		return f.dec(v.FieldByIndex(f.index), w, u, val)
	})
}

// protoEach calls f with each field of the message b: its number, wire
// type, and its value (u for varint and fixed, b for length-delimited).
func protoEach(b []byte, f func(num int, wire uint64, u uint64, b []byte) error) error {
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			return fmt.Errorf("%w: bad tag", errProtoMessage)
		}
		b = b[n:]
		num, wire := tag>>3, tag&7
		if num == 0 || num > math.MaxInt32 {
			return fmt.Errorf("%w: bad field number %d", errProtoMessage, num)
		}
		var (
			u   uint64
			val []byte
		)
		switch wire {
		case 0:
			if u, n = binary.Uvarint(b); n <= 0 {
				return fmt.Errorf("%w: bad varint", errProtoMessage)
			}
			b = b[n:]
		case 1:
			if len(b) < 8 {
				return fmt.Errorf("%w: short fixed64", errProtoMessage)
			}
			u, b = binary.LittleEndian.Uint64(b), b[8:]
		case 5:
			if len(b) < 4 {
				return fmt.Errorf("%w: short fixed32", errProtoMessage)
			}
			u, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
		case protoWireBytes:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return fmt.Errorf("%w: bad length", errProtoMessage)
			}
			val, b = b[n:n+int(l)], b[n+int(l):]
		case 3: // a group, long deprecated: skipped, as the generated code does
			rest, err := skipGroup(b, num)
			if err != nil {
				return err
			}
			b = rest
			continue
		default:
			return fmt.Errorf("%w: wire type %d", errProtoMessage, wire)
		}
		if err := f(int(num), wire, u, val); err != nil {
			return err
		}
	}
	return nil
}

// skipGroup returns b after the end of the group num whose start tag was
// just read, nested groups included.
func skipGroup(b []byte, num uint64) ([]byte, error) {
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, fmt.Errorf("%w: bad tag", errProtoMessage)
		}
		b = b[n:]
		switch tag & 7 {
		case 0:
			if _, n = binary.Uvarint(b); n <= 0 {
				return nil, fmt.Errorf("%w: bad varint", errProtoMessage)
			}
			b = b[n:]
		case 1:
			if len(b) < 8 {
				return nil, fmt.Errorf("%w: short fixed64", errProtoMessage)
			}
			b = b[8:]
		case 5:
			if len(b) < 4 {
				return nil, fmt.Errorf("%w: short fixed32", errProtoMessage)
			}
			b = b[4:]
		case protoWireBytes:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return nil, fmt.Errorf("%w: bad length", errProtoMessage)
			}
			b = b[n+int(l):]
		case 3:
			rest, err := skipGroup(b, tag>>3)
			if err != nil {
				return nil, err
			}
			b = rest
		case 4: // the end of a group: the generated code does not check its number either
			return b, nil
		default:
			return nil, fmt.Errorf("%w: wire type %d", errProtoMessage, tag&7)
		}
	}
	return nil, fmt.Errorf("%w: group %d not ended", errProtoMessage, num)
}
