package warm

import (
	"encoding/binary"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// The Unmarshal that k8s.io/api generates grows every repeated field one
// append at a time: a pod's five conditions cost four arrays, three of
// them garbage as soon as the next is made. Loading a saved cache of
// 100,000 pods made hundreds of megabytes of such garbage, and every byte
// of it brings the next garbage collection closer, while the cache being
// loaded is what each collection must mark.
//
// A sizer counts, before Unmarshal, the elements of the repeated fields of
// T's struct and of the structs it holds by value (a pod's metadata, spec
// and status), and makes each of those slices that will hold more than
// one element at its final capacity, empty: Unmarshal appends into it as
// it would have, without growing it. The decoded object is the same; only
// the slices' capacities differ. Deeper slices (a container's env) stay
// Unmarshal's: it makes each element afresh, over anything made before.

// slot is one repeated field a sizer makes.
type slot struct {
	index []int        // the field, from T's struct
	typ   reflect.Type // its slice type
}

// level is what a sizer counts in one message: the fields of its
// repeated slots by number, and the messages it looks into.
type level struct {
	slots  map[uint64]int
	nested map[uint64]*level
}

// sizer makes the repeated fields of T at their final size; see above.
type sizer struct {
	top   level
	slots []slot
}

var sizers sync.Map // reflect.Type -> *sizer, nil for a type with nothing to size

// sizerOf returns the sizer of st, a struct type, or nil if none of its
// repeated fields is within its reach.
func sizerOf(st reflect.Type) *sizer {
	if s, ok := sizers.Load(st); ok {
		return s.(*sizer)
	}
	s := &sizer{}
	s.top = s.level(st, nil, true)
	if len(s.slots) == 0 {
		s = nil
	}
	sizers.Store(st, s)
	return s
}

// level describes st's message, at index from T's struct; deeper says
// whether the structs it holds by value are looked into.
func (s *sizer) level(st reflect.Type, index []int, deeper bool) level {
	lv := level{slots: map[uint64]int{}, nested: map[uint64]*level{}}
	for i := range st.NumField() {
		f := st.Field(i)
		num, rep, ok := protoTag(f.Tag.Get("protobuf"))
		if !ok || !f.IsExported() {
			continue
		}
		at := append(append([]int(nil), index...), i)
		switch {
		case rep && f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() != reflect.Uint8:
			lv.slots[num] = len(s.slots)
			s.slots = append(s.slots, slot{index: at, typ: f.Type})
		case !rep && deeper && f.Type.Kind() == reflect.Struct:
			if sub := s.level(f.Type, at, false); len(sub.slots) > 0 {
				lv.nested[num] = &sub
			}
		}
	}
	return lv
}

// protoTag reads a field's number from its protobuf tag
// ("bytes,2,rep,name=containers"), and whether it is repeated; only
// length-delimited fields are of interest.
func protoTag(tag string) (num uint64, rep, ok bool) {
	parts := strings.Split(tag, ",")
	if len(parts) < 3 || parts[0] != "bytes" {
		return 0, false, false
	}
	n, err := strconv.ParseUint(parts[1], 10, 32)
	if err != nil {
		return 0, false, false
	}
	return n, parts[2] == "rep", true
}

// presize counts the repeated fields of b, the encoding of the struct at
// obj, and makes those with more than one element. A message it cannot
// read is left to Unmarshal, which says what is wrong with it.
func (s *sizer) presize(obj reflect.Value, b []byte, counts []int) []int {
	counts = append(counts[:0], make([]int, len(s.slots))...)
	if !count(b, &s.top, counts) {
		return counts
	}
	for i, n := range counts {
		if n > 1 {
			sl := &s.slots[i]
			obj.FieldByIndex(sl.index).Set(reflect.MakeSlice(sl.typ, 0, n))
		}
	}
	return counts
}

// count adds the elements of lv's repeated fields in b to counts; false
// if b is not a message it can read.
func count(b []byte, lv *level, counts []int) bool {
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			return false
		}
		b = b[n:]
		switch tag & 7 {
		case 0: // varint
			if _, n = binary.Uvarint(b); n <= 0 {
				return false
			}
			b = b[n:]
		case 1: // fixed64
			if len(b) < 8 {
				return false
			}
			b = b[8:]
		case 5: // fixed32
			if len(b) < 4 {
				return false
			}
			b = b[4:]
		case 2: // length-delimited
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return false
			}
			field := b[n : n+int(l)]
			b = b[n+int(l):]
			if i, ok := lv.slots[tag>>3]; ok {
				counts[i]++
			} else if sub := lv.nested[tag>>3]; sub != nil && !count(field, sub, counts) {
				return false
			}
		default: // groups: not in these messages
			return false
		}
	}
	return true
}
