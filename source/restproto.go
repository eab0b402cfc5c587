package source

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
)

// protoUnmarshaler is what the generated protobuf code of the built-in
// types gives every object: it decodes the object's own message.
type protoUnmarshaler interface{ Unmarshal([]byte) error }

// protoSource lists through client-go's codecs and watches with its own
// protobuf decoder: each length-prefixed frame is a metav1.WatchEvent
// whose object is the "k8s\x00" envelope (runtime.Unknown) around the
// object's message, which it unmarshals straight into a new T, without the
// copies and the scheme lookups of the general codec.
type protoSource[T cache.Object] struct {
	*runtimeSource[T] // List, Resource, SupportsWatchList
	rest              *restSource[T]
	newT              func() T
}

func (p *protoSource[T]) Watch(ctx context.Context, opts metav1.ListOptions) (Watcher[T], error) {
	opts.Watch = true
	ctx, cancel := context.WithCancel(ctx)
	body, err := p.rest.request(opts, p.rest.namespace).Throttle(nil).Stream(ctx)
	if err != nil {
		cancel()
		return nil, &Error{Phase: PhaseWatchStart, Err: err}
	}
	read := &recordingReader{r: body}
	h := HintsFrom(ctx)
	return &protoWatcher[T]{src: p, ctx: ctx, cancel: cancel, body: body, read: read,
		in: newBufReader(read), cutMF: h.DropManagedFields}, nil
}

// ExclusiveObjects reports that every object is decoded for the caller
// alone ([Exclusive]): client-go's codecs decode a new object for every
// list item, and the watch decodes its own.
func (p *protoSource[T]) ExclusiveObjects() bool { return true }

// protoWatcher decodes a protobuf watch stream on the caller's goroutine;
// if the server answered in JSON instead, it hands over to the JSON
// watcher.
type protoWatcher[T cache.Object] struct {
	src     *protoSource[T]
	ctx     context.Context
	cancel  context.CancelFunc
	body    io.ReadCloser
	read    *recordingReader
	in      *bufio.Reader
	cutMF   bool
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
	if ctx != w.ctx {
		defer context.AfterFunc(ctx, w.Stop)()
	}
	if !w.sniffed {
		w.sniffed = true
		// A frame starts with its length, whose first byte is 0 for any
		// frame under 16 MiB; JSON starts with a brace or a space.
		if b, err := w.in.Peek(1); err == nil && (b[0] == '{' || skipSpace(b, 0) > 0) {
			w.json = &restWatcher[T]{src: w.src.rest, ctx: w.ctx, cancel: w.cancel, body: w.body, read: w.read, cutMF: w.cutMF}
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
		return Event[T]{}, streamError(ctx, err, w.stopped.Load(), w.read, w.src.rest.resource)
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
	t, err := w.unmarshal(obj)
	if err != nil {
		return Event[T]{}, err
	}
	if cap(w.cut) > maxKeptLine {
		w.cut = nil
	}
	if w.cutMF {
		// Whatever the bytes held (cutProtoManagedFields leaves a
		// message it cannot parse alone): an object nobody else has
		// seen yet.
		t.SetManagedFields(nil)
	}
	return s.event(watch.EventType(typ), t, nil, true)
}

// unmarshal decodes obj into a new T, without its managedFields' bytes
// when the watcher drops them. If the cut copy does not decode, obj is
// decoded whole: the generated decoders bound some nested reads (a map
// entry's key, for one) by the enclosing message rather than by the
// field, so malformed bytes can decode whole, reading across the cut,
// and not cut. The cut must never be what turns an event into an error.
func (w *protoWatcher[T]) unmarshal(obj []byte) (T, error) {
	t := w.src.newT()
	u, _ := any(t).(protoUnmarshaler)
	if !w.cutMF {
		return t, u.Unmarshal(obj)
	}
	cut, _ := cutProtoManagedFields(obj, &w.cut)
	if err := u.Unmarshal(cut); err == nil || len(cut) == len(obj) {
		return t, err
	}
	t = w.src.newT()
	u, _ = any(t).(protoUnmarshaler)
	return t, u.Unmarshal(obj)
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
