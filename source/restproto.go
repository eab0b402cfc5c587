package source

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
)

// protoUnmarshaler is what the generated protobuf code of the built-in
// types gives every object: it decodes the object's own message.
type protoUnmarshaler interface{ Unmarshal([]byte) error }

// protoSource lists and watches in protobuf with its own decoder, item by
// item and event by event: each list item, and the object of each
// length-prefixed watch frame (a metav1.WatchEvent), is a message inside
// the "k8s\x00" envelope (runtime.Unknown), unmarshalled straight into a
// new T, without the copies and the scheme lookups of the general codec,
// and without a scheme at all.
type protoSource[T cache.Object] struct {
	rest *restSource[T]
	newT func() T
	proj *protoStruct // T is a projection: decoded field by field
}

// Info is the REST source's.
func (p *protoSource[T]) Info() Info { return p.rest.info }

// List reads one page and decodes it item by item (decodeListItems); a
// server that answered in JSON is decoded as JSON.
func (p *protoSource[T]) List(ctx context.Context, opts metav1.ListOptions) (List[T], error) {
	var items []T
	l, err := p.ListItems(ctx, opts, func(t T) error {
		items = append(items, t)
		return nil
	})
	if err != nil {
		return List[T]{}, err
	}
	l.Items = items
	return l, nil
}

// ListItems reads one page as it arrives and hands over each item as soon
// as it is decoded: one item's bytes and one decoded item at a time. A
// server that answered in JSON is decoded as JSON, item by item too.
func (p *protoSource[T]) ListItems(ctx context.Context, opts metav1.ListOptions, yield func(T) error) (List[T], error) {
	rc, err := p.rest.request(opts, p.rest.namespace).Stream(ctx)
	if err != nil {
		return List[T]{}, &Error{Phase: PhaseList, Err: err}
	}
	defer rc.Close()
	read := &recordingReader{r: rc}
	s := &protoReader{in: newBufReader(read), read: read, left: -1}
	if b, err := s.in.Peek(1); err == nil && (b[0] == '{' || skipSpace(b, 0) > 0) {
		return p.rest.decodeListItems(s.in, yield)
	}
	return p.decodeStream(s, yield)
}

// unmarshal decodes obj into a new T, without its managedFields' bytes
// when the source drops them, with cut as room for the cut copy. If the
// cut copy does not decode, obj is decoded whole: the generated decoders
// bound some nested reads (a map entry's key, for one) by the enclosing
// message rather than by the field, so malformed bytes can decode whole,
// reading across the cut, and not cut. The cut must never be what turns
// an object into an error.
func (p *protoSource[T]) unmarshal(obj []byte, cut *[]byte) (T, error) {
	t := p.newT()
	mc := p.rest.metaCut()
	defer func() {
		if cap(*cut) > maxKeptLine {
			*cut = nil
		}
	}()
	if p.proj != nil {
		err := p.proj.decode(reflect.ValueOf(t).Elem(), obj, cut, mc)
		p.rest.dropAnnotations(t)
		return t, err
	}
	u, _ := any(t).(protoUnmarshaler)
	if !mc.any() {
		return t, u.Unmarshal(obj)
	}
	c, _ := mc.cutProtoMeta(obj, cut)
	err := u.Unmarshal(c)
	if err != nil && len(c) != len(obj) {
		t = p.newT()
		u, _ = any(t).(protoUnmarshaler)
		err = u.Unmarshal(obj)
	}
	// Whatever the bytes held (cutProtoMeta leaves a message it cannot
	// parse alone): an object nobody else has seen yet.
	if p.rest.cutMF {
		t.SetManagedFields(nil)
	}
	p.rest.dropAnnotations(t)
	return t, err
}

func (p *protoSource[T]) Watch(ctx context.Context, opts metav1.ListOptions) (Watcher[T], error) {
	opts.Watch = true
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	body, err := p.rest.watchBody(ctx, opts)
	if err != nil {
		cancel()
		return nil, &Error{Phase: PhaseWatchStart, Err: err}
	}
	read := &recordingReader{r: body}
	return &protoWatcher[T]{src: p, ctx: ctx, parent: parent, cancel: cancel, body: body, read: read, in: newBufReader(read)}, nil
}

// protoWatcher decodes a protobuf watch stream on the caller's goroutine;
// if the server answered in JSON instead, it hands over to the JSON
// watcher.
type protoWatcher[T cache.Object] struct {
	src     *protoSource[T]
	ctx     context.Context
	parent  context.Context // as restWatcher's
	cancel  context.CancelFunc
	body    io.ReadCloser
	read    *recordingReader
	in      *bufio.Reader
	json    *restWatcher[T] // set if the stream is JSON
	sniffed bool
	frame   []byte
	cut     []byte // an object's bytes without its managedFields
	stopped atomic.Bool
	once    sync.Once
}

func (w *protoWatcher[T]) Stop() {
	w.once.Do(func() {
		w.stopped.Store(true)
		w.cancel()
		_ = w.body.Close()
	})
}

func (w *protoWatcher[T]) Next(ctx context.Context) (Event[T], error) {
	if err := ctx.Err(); err != nil {
		return Event[T]{}, err
	}
	if w.stopped.Load() {
		return Event[T]{}, ErrWatchClosed
	}
	if ctx != w.ctx && ctx != w.parent {
		defer context.AfterFunc(ctx, w.Stop)()
	}
	if !w.sniffed {
		w.sniffed = true
		// A frame starts with its length, whose first byte is 0 for any
		// frame under 16 MiB; JSON starts with a brace or a space.
		if b, err := w.in.Peek(1); err == nil && (b[0] == '{' || skipSpace(b, 0) > 0) {
			w.json = &restWatcher[T]{src: w.src.rest, ctx: w.ctx, cancel: w.cancel, body: w.body, read: w.read, cutMF: w.src.rest.cutMF}
			w.json.lines = newLineReader(w.in)
		}
	}
	var ev Event[T]
	var err error
	if w.json != nil {
		ev, err = w.json.decode()
	} else {
		ev, err = w.decode()
	}
	if err != nil {
		return Event[T]{}, streamError(ctx, err, w.stopped.Load(), w.read, w.src.rest.info.Resource)
	}
	return ev, nil
}

// maxFrame bounds a frame's length: what the API server can send is far
// less (etcd's request limit); a larger length is a broken stream.
const maxFrame = 256 << 20

// decode reads one frame and decodes its event.
func (w *protoWatcher[T]) decode() (Event[T], error) {
	var n [4]byte
	if _, err := io.ReadFull(w.in, n[:]); err != nil {
		return Event[T]{}, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxFrame {
		return Event[T]{}, fmt.Errorf("frame of %d bytes", size)
	}
	if cap(w.frame) < int(size) {
		w.frame = make([]byte, size)
	}
	frame := w.frame[:size]
	if _, err := io.ReadFull(w.in, frame); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Event[T]{}, err
	}
	if cap(w.frame) > maxKeptLine {
		defer func() { w.frame = nil }()
	}
	typ, raw, err := watchEventFields(frame)
	if err != nil {
		return Event[T]{}, err
	}
	apiVersion, kind, obj, err := unknownFields(raw)
	if err != nil {
		return Event[T]{}, err
	}
	s := w.src.rest
	if watch.EventType(typ) == watch.Error {
		status := &metav1.Status{}
		if kind != "Status" {
			return s.event(watch.Error, *new(T), nil, true) // no status: malformed
		}
		if err := status.Unmarshal(obj); err != nil {
			return Event[T]{}, err
		}
		return s.event(watch.Error, *new(T), status, true)
	}
	if gv := s.gvk.GroupVersion().String(); kind != s.gvk.Kind || apiVersion != gv {
		return Event[T]{}, &Error{Phase: PhaseWatch, Err: fmt.Errorf("%s event: %w: want %v, got %s %s", typ, ErrWrongType, s.gvk, apiVersion, kind)}
	}
	t, err := w.src.unmarshal(obj, &w.cut)
	if err != nil {
		return Event[T]{}, s.undecodableEvent(watch.EventType(typ), undecodableProto(obj, err))
	}
	return s.event(watch.EventType(typ), t, nil, true)
}

// errProto: a frame is not the protobuf the API server writes.
var errProto = errors.New("not a protobuf watch event")

// protoMagic starts the protobuf envelope of every object.
var protoMagic = []byte("k8s\x00")

// watchEventFields reads a metav1.WatchEvent: type (1) and object (2, a
// RawExtension whose raw bytes are field 1).
func watchEventFields(b []byte) (typ string, raw []byte, err error) {
	var object []byte
	err = fields(b, func(num int, val []byte) error {
		switch num {
		case 1:
			typ = string(val)
		case 2:
			object = val
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	err = fields(object, func(num int, val []byte) error {
		if num == 1 {
			raw = val
		}
		return nil
	})
	if err != nil || typ == "" || raw == nil {
		return "", nil, fmt.Errorf("%w: no type or object", errProto)
	}
	return typ, raw, err
}

// unknownFields reads the "k8s\x00" envelope, a runtime.Unknown: its type
// (1: apiVersion 1, kind 2), raw object (2) and content encoding (3).
func unknownFields(b []byte) (apiVersion, kind string, obj []byte, err error) {
	if len(b) < len(protoMagic) || string(b[:len(protoMagic)]) != string(protoMagic) {
		return "", "", nil, fmt.Errorf("%w: no envelope", errProto)
	}
	var encoding string
	err = fields(b[len(protoMagic):], func(num int, val []byte) error {
		switch num {
		case 1:
			return fields(val, func(num int, val []byte) error {
				switch num {
				case 1:
					apiVersion = string(val)
				case 2:
					kind = string(val)
				}
				return nil
			})
		case 2:
			obj = val
		case 3:
			encoding = string(val)
		}
		return nil
	})
	if err == nil && encoding != "" {
		err = fmt.Errorf("%w: content encoding %q", errProto, encoding)
	}
	return apiVersion, kind, obj, err
}

// fields calls f with each length-delimited field of the message in b
// (other wire types are skipped), in order.
func fields(b []byte, f func(num int, val []byte) error) error {
	return eachField(b, func(num int, wire uint64, _, val []byte) error {
		if wire != protoWireBytes {
			return nil
		}
		return f(num, val)
	})
}

// eachField calls f with each field of the message in b, in order: its
// number, its wire type, the whole field (tag included) and, for a
// length-delimited one, its value. It stops at f's first error.
func eachField(b []byte, f func(num int, wire uint64, field, val []byte) error) error {
	for len(b) > 0 {
		rest := b
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			return fmt.Errorf("%w: bad tag", errProto)
		}
		b = b[n:]
		num, wire := int(tag>>3), tag&7
		var val []byte
		switch wire {
		case 0: // varint
			if _, n = binary.Uvarint(b); n <= 0 {
				return fmt.Errorf("%w: bad varint", errProto)
			}
			b = b[n:]
		case 1: // fixed64
			if len(b) < 8 {
				return fmt.Errorf("%w: short fixed64", errProto)
			}
			b = b[8:]
		case 5: // fixed32
			if len(b) < 4 {
				return fmt.Errorf("%w: short fixed32", errProto)
			}
			b = b[4:]
		case protoWireBytes: // length-delimited
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return fmt.Errorf("%w: bad length", errProto)
			}
			val = b[n : n+int(l)]
			b = b[n+int(l):]
		default:
			return fmt.Errorf("%w: wire type %d", errProto, wire)
		}
		if err := f(num, wire, rest[:len(rest)-len(b)], val); err != nil {
			return err
		}
	}
	return nil
}

func newBufReader(r io.Reader) *bufio.Reader { return bufio.NewReaderSize(r, 32<<10) }
