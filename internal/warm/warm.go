// Package warm reads and writes the file an informer saves its cache to
// for a warm restart (typed.Options.WarmStart).
//
// The file is, in order: a magic line, a header (its length as a uvarint,
// then JSON), the objects (each its length as a uvarint, then its
// encoding: protobuf for types generated with Marshal and Unmarshal, as
// those of k8s.io/api are, JSON otherwise), and the SHA-256 of everything
// before it. A header that is not the reader's (another format version,
// resource, type, cluster or selector) is refused before any object is
// read; a wrong checksum, a truncated file or bytes after the checksum are
// found at the end of Load, and the caller must then drop whatever Load
// handed it. Save writes a temporary file beside the destination, with mode
// 0600, syncs it and renames it over the destination: a reader sees the
// old file or the new one, never half of one.
package warm

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sync"
	"time"
)

// Version is the format version this package writes and reads.
const Version = 1

// magic starts every file.
const magic = "typedinformer saved cache\n"

// maxHeader and maxObject bound what a length prefix may claim, so that a
// damaged length fails as corruption instead of allocating without end.
const (
	maxHeader = 1 << 20
	maxObject = 64 << 20
)

// Errors of Open and Load.
var (
	// ErrForeign: the file was saved by another informer (another
	// resource, type, cluster, selector or format version).
	ErrForeign = errors.New("saved cache is another informer's")
	// ErrCorrupt: the file is truncated, edited or not a saved cache.
	ErrCorrupt = errors.New("saved cache is corrupt")
)

// Identity is what a file must match to be loaded.
type Identity struct {
	// Resource is the group and resource, as schema.GroupResource
	// prints it.
	Resource string `json:"resource"`
	// Type is the Go type of the objects, with its package path.
	Type string `json:"type"`
	// Cluster names the cluster; empty if the user named none.
	Cluster string `json:"cluster,omitempty"`
	// Selector is the label and field selectors of the informer's
	// requests: a cache of another selection is another cache.
	Selector string `json:"selector,omitempty"`
	// ManagedFields is whether the objects keep their managedFields.
	ManagedFields bool `json:"managedFields,omitempty"`
}

// Header is a file's header.
type Header struct {
	Version int `json:"version"`
	Identity
	// Encoding is "protobuf" or "json".
	Encoding string `json:"encoding"`
	// ResourceVersion is the version the saved objects are the state at.
	ResourceVersion string `json:"resourceVersion"`
	// Objects is how many objects follow.
	Objects int `json:"objects"`
	// Saved is when the file was written.
	Saved time.Time `json:"saved"`
}

// TypeName is the name Identity.Type has for T: its package path and
// name, the pointer star included.
func TypeName[T any]() string {
	t := reflect.TypeFor[T]()
	star := ""
	if t.Kind() == reflect.Pointer {
		t, star = t.Elem(), "*"
	}
	return star + t.PkgPath() + "." + t.Name()
}

// protoMessage is what a generated protobuf type has.
type protoMessage interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
	Unmarshal([]byte) error
}

// encodingOf is the encoding files of T use.
func encodingOf[T any]() string {
	var zero T
	if _, ok := any(zero).(protoMessage); ok {
		return "protobuf"
	}
	return "json"
}

// Save writes objs, the state at resourceVersion rv, to path for id, and
// returns the file's size. T must be a pointer type.
func Save[T any](path string, id Identity, rv string, objs []T) (int64, error) {
	enc := encodingOf[T]()
	hdr, err := json.Marshal(Header{Version: Version, Identity: id, Encoding: enc, ResourceVersion: rv, Objects: len(objs), Saved: time.Now().UTC()})
	if err != nil {
		return 0, fmt.Errorf("save %s: header: %w", path, err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return 0, fmt.Errorf("save %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(0o600); err != nil {
		return 0, fmt.Errorf("save %s: %w", path, err)
	}
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)
	w := &writer{w: bw}
	w.write([]byte(magic))
	w.record(hdr)
	var buf []byte
	for _, obj := range objs {
		if buf, err = encode(obj, buf[:0]); err != nil {
			return 0, fmt.Errorf("save %s: %w", path, err)
		}
		w.record(buf)
	}
	if err = w.err; err == nil {
		err = bw.Flush()
	}
	if err == nil {
		_, err = f.Write(h.Sum(nil))
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		return 0, fmt.Errorf("save %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return 0, fmt.Errorf("save %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return 0, fmt.Errorf("save %s: %w", path, err)
	}
	if d, derr := os.Open(filepath.Dir(path)); derr == nil {
		d.Sync() // the rename survives a crash; best effort where directories cannot sync
		d.Close()
	}
	return w.n + sha256.Size, nil
}

// writer writes length-prefixed records, keeping the first error.
type writer struct {
	w   *bufio.Writer
	n   int64
	err error
	len [binary.MaxVarintLen64]byte
}

func (w *writer) write(b []byte) {
	if w.err != nil {
		return
	}
	var n int
	n, w.err = w.w.Write(b)
	w.n += int64(n)
}

func (w *writer) record(b []byte) {
	w.write(w.len[:binary.PutUvarint(w.len[:], uint64(len(b)))])
	w.write(b)
}

// encode appends obj's encoding to buf.
func encode[T any](obj T, buf []byte) ([]byte, error) {
	if m, ok := any(obj).(protoMessage); ok {
		n := m.Size()
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := m.MarshalToSizedBuffer(buf); err != nil {
			return nil, fmt.Errorf("encode %T: %w", obj, err)
		}
		return buf, nil
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", obj, err)
	}
	return b, nil
}

// File is a saved cache opened for loading.
type File[T any] struct {
	Header Header
	// Decoded, if set, is called with each object right after it is
	// decoded, on the goroutine that decoded it, before Load hands it
	// over: work on the objects that spreads over the decoders (a large
	// file's are several at once, so Decoded must be safe for concurrent
	// use on different objects).
	Decoded func(T)

	f    *os.File
	r    *bufio.Reader
	h    hash.Hash
	path string
}

// Open opens the file at path and reads its header; it fails if the file
// is not a saved cache of id (ErrForeign) or not a saved cache at all
// (ErrCorrupt). A missing file is an error for which os.IsNotExist holds.
// The caller must Close the file.
func Open[T any](path string, id Identity) (*File[T], error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	file := &File[T]{f: f, r: bufio.NewReaderSize(f, 1<<20), h: h, path: path}
	hdr, err := file.readHeader()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := check(hdr, id, encodingOf[T]()); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	file.Header = hdr
	return file, nil
}

func (f *File[T]) readHeader() (Header, error) {
	m := make([]byte, len(magic))
	if _, err := io.ReadFull(f.r, m); err != nil || string(m) != magic {
		return Header{}, fmt.Errorf("%w: not a saved cache", ErrCorrupt)
	}
	f.h.Write(m)
	b, err := f.record(nil, maxHeader)
	if err != nil {
		return Header{}, err
	}
	var hdr Header
	if err := json.Unmarshal(b, &hdr); err != nil {
		return Header{}, fmt.Errorf("%w: header: %w", ErrCorrupt, err)
	}
	if hdr.Objects < 0 {
		return Header{}, fmt.Errorf("%w: header: %d objects", ErrCorrupt, hdr.Objects)
	}
	return hdr, nil
}

// check compares a header with what the reader expects.
func check(h Header, id Identity, enc string) error {
	switch {
	case h.Version != Version:
		return fmt.Errorf("%w: format version %d, this reader's is %d", ErrForeign, h.Version, Version)
	case h.Resource != id.Resource:
		return fmt.Errorf("%w: resource %q, want %q", ErrForeign, h.Resource, id.Resource)
	case h.Type != id.Type:
		return fmt.Errorf("%w: type %q, want %q", ErrForeign, h.Type, id.Type)
	case h.Cluster != id.Cluster:
		return fmt.Errorf("%w: cluster %q, want %q", ErrForeign, h.Cluster, id.Cluster)
	case h.Selector != id.Selector:
		return fmt.Errorf("%w: selector %q, want %q", ErrForeign, h.Selector, id.Selector)
	case h.ManagedFields != id.ManagedFields:
		return fmt.Errorf("%w: managedFields kept %v, want %v", ErrForeign, h.ManagedFields, id.ManagedFields)
	case h.Encoding != enc:
		return fmt.Errorf("%w: encoding %q, want %q", ErrForeign, h.Encoding, enc)
	case h.ResourceVersion == "":
		return fmt.Errorf("%w: no resourceVersion", ErrCorrupt)
	}
	return nil
}

// record reads one length-prefixed record into buf, hashing it.
func (f *File[T]) record(buf []byte, limit uint64) ([]byte, error) {
	var lb [binary.MaxVarintLen64]byte
	n := 0
	for {
		c, err := f.r.ReadByte()
		if err != nil {
			return nil, fmt.Errorf("%w: truncated", ErrCorrupt)
		}
		if n == len(lb) {
			return nil, fmt.Errorf("%w: bad length", ErrCorrupt)
		}
		lb[n] = c
		n++
		if c < 0x80 {
			break
		}
	}
	l, k := binary.Uvarint(lb[:n])
	if k <= 0 || l > limit {
		return nil, fmt.Errorf("%w: bad length", ErrCorrupt)
	}
	f.h.Write(lb[:n])
	if uint64(cap(buf)) < l {
		buf = make([]byte, l)
	}
	buf = buf[:l]
	if _, err := io.ReadFull(f.r, buf); err != nil {
		return nil, fmt.Errorf("%w: truncated", ErrCorrupt)
	}
	f.h.Write(buf)
	return buf, nil
}

// Load decodes the objects and hands each to each, in the order they were
// saved, then checks the checksum. An error of each ends it with that
// error; any other error wraps ErrCorrupt, and may come after objects
// were handed over: the caller must then drop them.
func (f *File[T]) Load(each func(T) error) error {
	if workers := min(runtime.GOMAXPROCS(0), maxDecoders); workers > 1 && f.Header.Objects >= 2*chunkObjects {
		return f.loadParallel(each, workers)
	}
	var buf []byte
	d := decoder[T]{decoded: f.Decoded}
	for i := range f.Header.Objects {
		var err error
		if buf, err = f.record(buf, maxObject); err != nil {
			return fmt.Errorf("%s: object %d: %w", f.path, i, err)
		}
		obj, err := d.decode(buf)
		if err != nil {
			return fmt.Errorf("%s: object %d: %w: %w", f.path, i, ErrCorrupt, err)
		}
		if err := each(obj); err != nil {
			return err
		}
	}
	return f.checkSum()
}

// checkSum reads the checksum after the objects and compares it with what
// was read.
func (f *File[T]) checkSum() error {
	var sum [sha256.Size]byte
	if _, err := io.ReadFull(f.r, sum[:]); err != nil {
		return fmt.Errorf("%s: %w: truncated checksum", f.path, ErrCorrupt)
	}
	if !bytes.Equal(sum[:], f.h.Sum(nil)) {
		return fmt.Errorf("%s: %w: checksum mismatch", f.path, ErrCorrupt)
	}
	if _, err := f.r.ReadByte(); err != io.EOF {
		return fmt.Errorf("%s: %w: bytes after the checksum", f.path, ErrCorrupt)
	}
	return nil
}

const (
	// maxDecoders bounds the goroutines that decode a large file.
	maxDecoders = 4
	// chunkObjects is how many records a decoder takes at a time.
	chunkObjects = 256
)

// chunk is records read in a row, decoded by one decoder.
type chunk[T any] struct {
	first int    // the index of its first record
	data  []byte // the records, back to back
	ends  []int  // where each record ends in data
	objs  []T    // decoded
	err   error  // of the reading (the last chunk) or the decoding
	done  chan struct{}
}

// loadParallel is Load with the decoding spread over workers goroutines:
// one reads the records (the checksum runs over them in order), workers
// decode chunks of them, and the caller hands the objects to each in the
// saved order. At most 2*workers chunks are in flight.
func (f *File[T]) loadParallel(each func(T) error, workers int) error {
	quit := make(chan struct{})
	work := make(chan *chunk[T], workers)
	ordered := make(chan *chunk[T], 2*workers)
	// The records' bytes of chunks handed over are read into again: the
	// decoded objects hold copies, none of these bytes.
	free := make(chan []byte, 3*workers+2)
	var decoders sync.WaitGroup
	for range workers {
		decoders.Go(func() {
			d := decoder[T]{decoded: f.Decoded}
			for c := range work {
				c.objs = make([]T, 0, len(c.ends))
				start := 0
				for i, end := range c.ends {
					obj, err := d.decode(c.data[start:end])
					if err != nil {
						c.err = fmt.Errorf("%s: object %d: %w: %w", f.path, c.first+i, ErrCorrupt, err)
						break
					}
					c.objs = append(c.objs, obj)
					start = end
				}
				close(c.done)
			}
		})
	}
	readerDone := make(chan struct{})
	go func() { // the reader
		defer close(readerDone)
		defer close(ordered)
		defer close(work)
		var buf []byte
		send := func(c *chunk[T]) bool {
			select {
			case ordered <- c:
			case <-quit:
				return false
			}
			if c.err != nil {
				close(c.done)
				return true
			}
			select {
			case work <- c:
				return true
			case <-quit:
				close(c.done)
				return false
			}
		}
		for i := 0; i < f.Header.Objects; {
			c := &chunk[T]{first: i, done: make(chan struct{})}
			select {
			case c.data = <-free:
			default:
			}
			for ; i < f.Header.Objects && len(c.ends) < chunkObjects; i++ {
				var err error
				if buf, err = f.record(buf, maxObject); err != nil {
					c.err = fmt.Errorf("%s: object %d: %w", f.path, i, err)
					break
				}
				c.data = append(c.data, buf...)
				c.ends = append(c.ends, len(c.data))
			}
			if c.err != nil {
				// What was read before the error is handed over first.
				bad := &chunk[T]{first: i, err: c.err, done: make(chan struct{})}
				c.err = nil
				if len(c.ends) > 0 && !send(c) {
					return
				}
				send(bad)
				return
			}
			if !send(c) {
				return
			}
		}
		if err := f.checkSum(); err != nil {
			send(&chunk[T]{err: err, done: make(chan struct{})})
		}
	}()
	stop := func() {
		close(quit)
		for c := range ordered { // let the reader end
			<-c.done
		}
		<-readerDone
		decoders.Wait()
	}
	for c := range ordered {
		<-c.done
		for _, obj := range c.objs {
			if err := each(obj); err != nil {
				stop()
				return err
			}
		}
		if c.err != nil {
			stop()
			return c.err
		}
		select {
		case free <- c.data[:0]:
		default:
		}
	}
	<-readerDone
	decoders.Wait()
	return nil
}

// Close closes the file.
func (f *File[T]) Close() error { return f.f.Close() }

// decoder decodes objects of T, a pointer type, on one goroutine.
type decoder[T any] struct {
	decoded func(T)      // File.Decoded
	elem    reflect.Type // what T points to; nil before the first object
	sizer   *sizer       // for a protobuf T whose slices it can size
	counts  []int        // the sizer's, reused
}

// decode decodes one object.
func (d *decoder[T]) decode(b []byte) (T, error) {
	var zero T
	if d.elem == nil {
		rt := reflect.TypeFor[T]()
		if rt.Kind() != reflect.Pointer {
			return zero, fmt.Errorf("decode: %v is not a pointer type", rt)
		}
		d.elem = rt.Elem()
		if _, ok := reflect.Zero(rt).Interface().(protoMessage); ok && d.elem.Kind() == reflect.Struct {
			d.sizer = sizerOf(d.elem)
		}
	}
	v := reflect.New(d.elem)
	obj, ok := v.Interface().(T)
	if !ok {
		return zero, fmt.Errorf("decode: cannot make a %v", d.elem)
	}
	if m, ok := any(obj).(protoMessage); ok {
		if d.sizer != nil {
			d.counts = d.sizer.presize(v.Elem(), b, d.counts)
		}
		if err := m.Unmarshal(b); err != nil {
			return zero, err
		}
	} else if err := json.Unmarshal(b, obj); err != nil {
		return zero, err
	}
	if d.decoded != nil {
		d.decoded(obj)
	}
	return obj, nil
}
