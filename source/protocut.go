package source

import "encoding/binary"

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

// cutProtoManagedFields returns obj, a protobuf message whose field 1 is an
// ObjectMeta, without that ObjectMeta's managedFields, built in *buf (which
// it grows and keeps); obj itself when it has none. ok is false, and obj is
// returned, if obj does not parse as such a message: the caller decodes it
// whole then, and the decoder reports what is wrong with it.
func cutProtoManagedFields(obj []byte, buf *[]byte) (out []byte, ok bool) {
	start, meta, end, ok := protoBytesField(obj, protoFieldMetadata)
	if !ok || meta == nil {
		return obj, ok
	}
	cut := 0 // bytes of managedFields in meta
	if !eachProtoField(meta, func(field, wire uint64, b []byte) {
		if field == protoFieldManagedFields && wire == protoWireBytes {
			cut += len(b)
		}
	}) {
		return obj, false
	}
	if cut == 0 {
		return obj, true
	}
	o := append((*buf)[:0], obj[:start]...)
	o = binary.AppendUvarint(o, protoFieldMetadata<<3|protoWireBytes)
	o = binary.AppendUvarint(o, uint64(len(meta)-cut))
	eachProtoField(meta, func(field, wire uint64, b []byte) {
		if field != protoFieldManagedFields || wire != protoWireBytes {
			o = append(o, b...)
		}
	})
	o = append(o, obj[end:]...)
	*buf = o
	return o, true
}

// protoBytesField finds the first length-delimited field number f of msg:
// its bytes msg[start:end], key and length included, and its content. A
// msg without one gives a nil content.
func protoBytesField(msg []byte, f uint64) (start int, content []byte, end int, ok bool) {
	found := false
	ok = eachProtoFieldAt(msg, func(field, wire uint64, at, contentAt, next int) bool {
		if field == f && wire == protoWireBytes {
			start, content, end, found = at, msg[contentAt:next], next, true
			return false
		}
		return true
	})
	if !found {
		return 0, nil, 0, ok
	}
	return start, content, end, true
}

// eachProtoField calls f with every field of msg: its number, wire type
// and bytes (key included). It reports whether msg parsed to its end.
func eachProtoField(msg []byte, f func(field, wire uint64, b []byte)) bool {
	return eachProtoFieldAt(msg, func(field, wire uint64, at, _, next int) bool {
		f(field, wire, msg[at:next])
		return true
	})
}

// eachProtoFieldAt walks the fields of msg, calling f with each one's
// number, wire type, offset, content offset and end, until f returns false.
// It reports whether every field it read parsed (groups, which the
// Kubernetes types never use, do not).
func eachProtoFieldAt(msg []byte, f func(field, wire uint64, at, contentAt, next int) bool) bool {
	for i := 0; i < len(msg); {
		key, n := binary.Uvarint(msg[i:])
		if n <= 0 {
			return false
		}
		at, field, wire := i, key>>3, key&7
		i += n
		contentAt := i
		switch wire {
		case 0: // varint
			_, m := binary.Uvarint(msg[i:])
			if m <= 0 {
				return false
			}
			i += m
		case 1: // 64-bit
			i += 8
		case protoWireBytes:
			l, m := binary.Uvarint(msg[i:])
			if m <= 0 || l > uint64(len(msg)-i-m) {
				return false
			}
			contentAt = i + m
			i += m + int(l)
		case 5: // 32-bit
			i += 4
		default:
			return false
		}
		if i > len(msg) || field == 0 {
			return false
		}
		if !f(field, wire, at, contentAt, i) {
			return true
		}
	}
	return true
}
