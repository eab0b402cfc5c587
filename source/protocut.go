package source

import (
	"encoding/binary"
	"errors"
)

// The protobuf messages of the built-in types all carry their ObjectMeta as
// field 1, and ObjectMeta carries managedFields as field 17 (repeated
// ManagedFieldsEntry), in k8s.io/api's and apimachinery's generated.proto.
// The generated Unmarshal cannot skip a field, so a watcher that drops
// managedFields copies the object's bytes without them first: a copy of a
// few kilobytes costs less than decoding the entries to throw them away.
const (
	protoFieldMetadata      = 1
	protoFieldManagedFields = 17
	protoWireBytes          = 2
)

// errFound stops a walk of fields at the one it looks for.
var errFound = errors.New("found")

// protoFieldAnnotations is ObjectMeta's annotations (map entries: key 1,
// value 2).
const protoFieldAnnotations = 12

// metaCut says what a source cuts from every object's ObjectMeta.
type metaCut struct {
	managedFields bool
	annotations   map[string]bool // keys; nil: none
}

func (c metaCut) any() bool { return c.managedFields || c.annotations != nil }

// drops reports whether the field of an ObjectMeta message is cut.
func (c metaCut) drops(num int, wire uint64, val []byte) bool {
	switch {
	case wire != protoWireBytes:
		return false
	case num == protoFieldManagedFields:
		return c.managedFields
	case num == protoFieldAnnotations && c.annotations != nil:
		var key []byte
		_ = eachField(val, func(n int, w uint64, _, v []byte) error {
			if n == 1 && w == protoWireBytes {
				key = v
				return errFound
			}
			return nil
		})
		return c.annotations[string(key)]
	}
	return false
}

// cutMeta returns the ObjectMeta message meta without the fields c cuts,
// copied into *buf if it has any; meta itself if not, or if it does not
// parse (the decoder reports what is wrong with it).
func (c metaCut) cutMeta(meta []byte, buf *[]byte) []byte {
	cut := 0
	if eachField(meta, func(num int, wire uint64, field, val []byte) error {
		if c.drops(num, wire, val) {
			cut += len(field)
		}
		return nil
	}) != nil || cut == 0 {
		return meta
	}
	o := (*buf)[:0]
	_ = eachField(meta, func(num int, wire uint64, field, val []byte) error {
		if !c.drops(num, wire, val) {
			o = append(o, field...)
		}
		return nil
	})
	*buf = o
	return o
}

// cutProtoMeta returns obj, a protobuf message whose field 1 is an
// ObjectMeta, without the ObjectMeta fields c cuts, built in *buf (which
// it grows and keeps); obj itself when it has none. ok is false, and obj is
// returned, if obj does not parse as such a message: the caller decodes it
// whole then, and the decoder reports what is wrong with it.
func (c metaCut) cutProtoMeta(obj []byte, buf *[]byte) (out []byte, ok bool) {
	// The first metadata field: obj[start:end], its value meta.
	start, end, at := -1, 0, 0
	var meta []byte
	err := eachField(obj, func(num int, wire uint64, field, val []byte) error {
		if num == protoFieldMetadata && wire == protoWireBytes {
			start, end, meta = at, at+len(field), val
			return errFound
		}
		at += len(field)
		return nil
	})
	if err != nil && !errors.Is(err, errFound) {
		return obj, false
	}
	if start < 0 {
		return obj, true
	}
	cut := 0 // bytes cut from meta
	if eachField(meta, func(num int, wire uint64, field, val []byte) error {
		if c.drops(num, wire, val) {
			cut += len(field)
		}
		return nil
	}) != nil {
		return obj, false
	}
	if cut == 0 {
		return obj, true
	}
	o := append((*buf)[:0], obj[:start]...)
	o = binary.AppendUvarint(o, protoFieldMetadata<<3|protoWireBytes)
	o = binary.AppendUvarint(o, uint64(len(meta)-cut))
	_ = eachField(meta, func(num int, wire uint64, field, val []byte) error {
		if !c.drops(num, wire, val) {
			o = append(o, field...)
		}
		return nil
	})
	o = append(o, obj[end:]...)
	*buf = o
	return o, true
}
