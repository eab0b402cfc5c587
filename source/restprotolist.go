package source

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// This file decodes a protobuf list body as it is read, as restlist.go
// does for JSON: the envelope's fields and the list message inside it are
// read tag by tag from the connection, each item's bytes are read into a
// buffer the next item reuses, decoded, and handed over before the next
// one is read. A list kube-apiserver's watch cache sends whole, hundreds
// of megabytes for a large cluster, is never held whole, in bytes or in
// decoded items.

// maxProtoMeta bounds the envelope's small fields (its type, the list's
// metadata, its content encoding): none is near it, and a length past it
// is a broken body, not a reason to allocate.
const maxProtoMeta = 1 << 20

// protoReader reads protobuf fields from a body as it arrives. left is
// what is left of the message being read, or -1 at the envelope's level,
// which ends with the body.
type protoReader struct {
	in   *bufio.Reader
	read *recordingReader // under in: tells a failing connection from a broken body
	left int64
}

// tag reads the next field's number and wire type; io.EOF if the message
// (or, at the envelope's level, the body) ends cleanly before it.
func (s *protoReader) tag() (num int, wire uint64, err error) {
	if s.left == 0 {
		return 0, 0, io.EOF
	}
	t, err := s.uvarint()
	if err != nil {
		return 0, 0, err
	}
	return int(t >> 3), t & 7, nil
}

// uvarint reads a varint; a body that ends in one is broken.
func (s *protoReader) uvarint() (uint64, error) {
	var v uint64
	for i := uint(0); i < 10; i++ {
		if s.left == 0 {
			return 0, fmt.Errorf("%w: bad varint", errProto)
		}
		b, err := s.in.ReadByte()
		if err != nil {
			if i == 0 && s.left < 0 && errors.Is(err, io.EOF) {
				return 0, io.EOF
			}
			return 0, s.short(err)
		}
		if s.left > 0 {
			s.left--
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, fmt.Errorf("%w: bad varint", errProto)
}

// length reads a length-delimited field's length and checks that the
// message holds it.
func (s *protoReader) length() (int64, error) {
	l, err := s.uvarint()
	if err != nil {
		return 0, err
	}
	if l > 1<<62 || s.left >= 0 && int64(l) > s.left {
		return 0, fmt.Errorf("%w: bad length", errProto)
	}
	return int64(l), nil
}

// bytes reads n bytes into buf's room, growing it only as the bytes
// arrive: a length a broken body claims allocates nothing it does not
// send.
func (s *protoReader) bytes(n int64, buf []byte) ([]byte, error) {
	buf = buf[:0]
	for int64(len(buf)) < n {
		at := len(buf)
		chunk := int(min(n-int64(at), 1<<20))
		buf = slices.Grow(buf, chunk)[:at+chunk]
		if _, err := io.ReadFull(s.in, buf[at:]); err != nil {
			return nil, s.short(err)
		}
	}
	if s.left > 0 {
		s.left -= n
	}
	return buf, nil
}

// skip reads past a field's value of wire type wire.
func (s *protoReader) skip(wire uint64) error {
	var n int64
	switch wire {
	case 0:
		_, err := s.uvarint()
		return err
	case 1:
		n = 8
	case 5:
		n = 4
	case protoWireBytes:
		l, err := s.length()
		if err != nil {
			return err
		}
		n = l
	default:
		return fmt.Errorf("%w: wire type %d", errProto, wire)
	}
	if s.left >= 0 && n > s.left {
		return fmt.Errorf("%w: short field", errProto)
	}
	if _, err := s.in.Discard(int(n)); err != nil {
		return s.short(err)
	}
	if s.left > 0 {
		s.left -= n
	}
	return nil
}

// short is the error of a body that ended, or a connection that failed,
// inside a field.
func (s *protoReader) short(err error) error {
	if s.read.err != nil {
		return &connError{s.read.err}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: the body ends inside a field", errProto)
	}
	return err
}

// connError is a read of the body that failed: the connection's error, not
// the body's.
type connError struct{ err error }

func (e *connError) Error() string { return e.err.Error() }
func (e *connError) Unwrap() error { return e.err }

// decodeListItems decodes the protobuf list body read from r as it is
// read: the "k8s\x00" envelope (runtime.Unknown), its type, then the list
// message in its raw field, whose field 1 is the ListMeta and field 2 each
// item. yield gets each item as soon as it is decoded, and the list comes
// back without its Items. An item that does not decode into T goes into
// List.Undecodable if its metadata names it; one that does not name
// itself fails the list, though the rest of the body is still read, and
// no other item is handed over, as the JSON list decoder does. yield's
// error is returned as it is, at once. The envelope's type comes before
// its raw object, as every encoder of runtime.Unknown writes them: a body
// that has them the other way round, or two objects, is refused rather
// than decoded without knowing its kind.
func (p *protoSource[T]) decodeListItems(r io.Reader, yield func(T) error) (List[T], error) {
	read := &recordingReader{r: r}
	return p.decodeStream(&protoReader{in: newBufReader(read), read: read, left: -1}, yield)
}

// decodeStream is decodeListItems on a stream already opened.
func (p *protoSource[T]) decodeStream(s *protoReader, yield func(T) error) (List[T], error) {
	out, err := p.streamList(s, yield)
	var (
		ce *connError
		u  *UndecodableError
		ye *yieldError
	)
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &ye):
		return List[T]{}, ye.err
	case errors.As(err, &ce):
		return List[T]{}, &Error{Phase: PhaseList, Err: ce.err}
	case errors.As(err, &u): // an item without a name
		return List[T]{}, &Error{Phase: PhaseList, Err: fmt.Errorf("decode %v list: %w", p.rest.info.Resource, err)}
	}
	return List[T]{}, p.rest.listError(err)
}

// yieldError carries yield's error out of streamList untouched.
type yieldError struct{ err error }

func (e *yieldError) Error() string { return e.err.Error() }

// streamList reads the envelope's fields from s.
func (p *protoSource[T]) streamList(s *protoReader, yield func(T) error) (List[T], error) {
	magic := make([]byte, len(protoMagic))
	if _, err := io.ReadFull(s.in, magic); err != nil || string(magic) != string(protoMagic) {
		if s.read.err != nil {
			return List[T]{}, &connError{s.read.err}
		}
		return List[T]{}, fmt.Errorf("%w: no envelope", errProto)
	}
	var (
		out              List[T]
		apiVersion, kind string // the envelope's type, merged over its fields as protobuf does
		raw              bool   // the list message was read
		failed           error  // the first item that fails the list
	)
	for {
		num, wire, err := s.tag()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return List[T]{}, err
		}
		if wire != protoWireBytes || num < 1 || num > 3 {
			if err := s.skip(wire); err != nil {
				return List[T]{}, err
			}
			continue
		}
		l, err := s.length()
		if err != nil {
			return List[T]{}, err
		}
		if num == 2 { // the raw list message
			switch {
			case raw:
				return List[T]{}, fmt.Errorf("%w: two objects in one envelope", errProto)
			case kind == "" && apiVersion == "":
				return List[T]{}, fmt.Errorf("%w: the object comes before its type", errProto)
			}
			if err := p.listType(apiVersion, kind); err != nil {
				return List[T]{}, err
			}
			raw = true
			if err := p.streamItems(s, l, &out, yield, &failed); err != nil {
				return List[T]{}, err
			}
			continue
		}
		if l > maxProtoMeta {
			return List[T]{}, fmt.Errorf("%w: a field of %d bytes in the envelope", errProto, l)
		}
		val, err := s.bytes(l, nil)
		if err != nil {
			return List[T]{}, err
		}
		switch num {
		case 1:
			if raw {
				return List[T]{}, fmt.Errorf("%w: the envelope's type after its object", errProto)
			}
			err := fields(val, func(num int, val []byte) error {
				switch num {
				case 1:
					apiVersion = string(val)
				case 2:
					kind = string(val)
				}
				return nil
			})
			if err != nil {
				return List[T]{}, err
			}
		case 3:
			if len(val) > 0 {
				return List[T]{}, fmt.Errorf("%w: content encoding %q", errProto, val)
			}
		}
	}
	if err := p.listType(apiVersion, kind); err != nil {
		return List[T]{}, err
	}
	if failed != nil {
		return List[T]{}, failed
	}
	return out, nil
}

// listType checks the envelope's type: the list of T's kind in T's
// version.
func (p *protoSource[T]) listType(apiVersion, kind string) error {
	gvk := p.rest.gvk
	if kind != gvk.Kind+"List" || apiVersion != gvk.GroupVersion().String() {
		return fmt.Errorf("%w: want %sList %v, got %s %s", ErrWrongType, gvk.Kind, gvk.GroupVersion(), apiVersion, kind)
	}
	return nil
}

// streamItems reads the list message, n bytes of s: its ListMeta into
// out, each item decoded and handed to yield, or kept in out's
// Undecodable, until one fails the list (*failed); from then on items are
// read and not decoded.
func (p *protoSource[T]) streamItems(s *protoReader, n int64, out *List[T], yield func(T) error, failed *error) error {
	outer := s.left
	s.left = n
	var (
		buf, cut []byte
		meta     metav1.ListMeta // merged over its fields, as protobuf does
	)
	for i := 0; ; {
		num, wire, err := s.tag()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if wire != protoWireBytes || num != 1 && num != 2 {
			if err := s.skip(wire); err != nil {
				return err
			}
			continue
		}
		l, err := s.length()
		if err != nil {
			return err
		}
		if num == 1 && l > maxProtoMeta {
			return fmt.Errorf("%w: list metadata of %d bytes", errProto, l)
		}
		if buf, err = s.bytes(l, buf); err != nil {
			return err
		}
		if num == 1 {
			if err := meta.Unmarshal(buf); err != nil {
				return err
			}
			out.ResourceVersion, out.Continue, out.ShardInfo = meta.ResourceVersion, meta.Continue, meta.ShardInfo
			continue
		}
		index := i
		i++
		if *failed != nil {
			continue
		}
		t, err := p.unmarshal(buf, &cut)
		if err != nil {
			u := undecodableProto(buf, err)
			u.Index = index
			if u.Name == "" {
				*failed = u
				continue
			}
			out.Undecodable = append(out.Undecodable, u)
			continue
		}
		if err := yield(t); err != nil {
			return &yieldError{err}
		}
		if cap(buf) > maxKeptLine {
			buf = nil // one large item does not keep its room for the rest
		}
	}
	if outer > 0 {
		outer -= n
	}
	s.left = outer
	return nil
}
