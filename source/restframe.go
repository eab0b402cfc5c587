package source

import (
	"bytes"
	gojson "encoding/json"
	"errors"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/json"
)

// The API server writes a JSON watch stream one event per line. The REST
// watcher reads it line by line, finds the event's type and object with a
// scan that decodes nothing (jsonscan.go), cuts the object's managedFields
// out when the caller drops them anyway, and decodes the object once,
// straight into T. A stream that does not look like that (an event over
// several lines, members in another order) is decoded from then on by the
// general streaming decoder, which takes any JSON.

// maxKeptLine is the largest line buffer a reader keeps between events; a
// larger one (a huge object) is dropped after its event.
const maxKeptLine = 1 << 20

// A line reader's buffer starts at minLineBuf and doubles while reads
// fill it, up to burstLineBuf (or further, for a line that does not fit):
// a burst of events, such as a streaming list, is read in large reads.
// Once a read brings less than an eighth of the buffer and little of it
// is left unread, the stream has caught up, and the buffer goes back to
// minLineBuf: an idle watch holds 4 KiB, not 64.
const (
	minLineBuf   = 4 << 10
	burstLineBuf = 64 << 10
)

// lineReader reads newline-terminated lines.
type lineReader struct {
	r      io.Reader
	buf    []byte
	head   int  // start of the unread bytes
	tail   int  // end of the read bytes
	last   int  // bytes of the last read
	filled bool // the last read filled the buffer's free space
	err    error
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: r, buf: make([]byte, minLineBuf)}
}

// next returns the next line without its newline, valid until the next
// call. At the end of the stream it returns io.EOF, or
// io.ErrUnexpectedEOF if the stream ended within a line.
func (l *lineReader) next() ([]byte, error) {
	from := 0 // bytes after head already searched
	for {
		if i := bytes.IndexByte(l.buf[l.head+from:l.tail], '\n'); i >= 0 {
			end := l.head + from + i
			line := l.buf[l.head:end]
			l.head = end + 1
			return line, nil
		}
		from = l.tail - l.head
		if l.err != nil {
			if len(bytes.TrimSpace(l.buf[l.head:l.tail])) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, l.err
		}
		l.fill() // moves the unread bytes to the front: from stays right
	}
}

// fill reads more, first moving the unread bytes to the front of the
// buffer, growing it if they fill it or the last read filled it, or
// shrinking it if the stream has caught up.
func (l *lineReader) fill() {
	switch unread := l.tail - l.head; {
	case len(l.buf) > minLineBuf && l.last < len(l.buf)/8 && unread <= minLineBuf/2:
		// Caught up: drop the burst's buffer.
		b := make([]byte, minLineBuf)
		l.head, l.tail, l.buf = 0, copy(b, l.buf[l.head:l.tail]), b
	case l.head > 0:
		n := copy(l.buf, l.buf[l.head:l.tail])
		l.head, l.tail = 0, n
	}
	if l.tail == len(l.buf) || (l.filled && len(l.buf) < burstLineBuf) {
		b := make([]byte, 2*len(l.buf))
		copy(b, l.buf[:l.tail])
		l.buf = b
	}
	n, err := l.r.Read(l.buf[l.tail:])
	l.last, l.filled = n, n == len(l.buf)-l.tail
	l.tail += n
	if err != nil {
		l.err = err
	}
}

// shrink drops a buffer a huge line left behind.
func (l *lineReader) shrink() {
	if len(l.buf) > maxKeptLine && l.tail-l.head <= maxKeptLine/2 {
		b := make([]byte, maxKeptLine/2)
		l.tail = copy(b, l.buf[l.head:l.tail])
		l.head, l.buf = 0, b
	}
}

// unread returns what the reader holds from the start of the line next
// returned last, and the rest of the stream: the general decoder goes on
// from there.
func (l *lineReader) unread(line []byte) io.Reader {
	start := l.head - len(line) - 1
	held := bytes.Clone(l.buf[start:l.tail])
	return io.MultiReader(bytes.NewReader(held), &errReader{r: l.r, err: l.err})
}

// errReader reads r, or returns err if the stream already failed.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return e.r.Read(p)
}

// errNotAFrame: a line is not one event as the API server writes it.
var errNotAFrame = errors.New("source: not a one-line watch event")

// decodeFrame decodes one line holding one watch event, with scratch as
// room to cut managedFields out. It returns errNotAFrame, leaving line as
// it was, for a line it does not recognise.
func (s *restSource[T]) decodeFrame(line []byte, cutMF bool, scratch *[]byte) (Event[T], error) {
	typ, obj, ok := envelope(line)
	if !ok {
		return Event[T]{}, errNotAFrame
	}
	if watch.EventType(typ) == watch.Error {
		var status *metav1.Status
		if err := json.UnmarshalCaseSensitivePreserveInts(obj, &status); err != nil {
			return Event[T]{}, notAFrame(err)
		}
		return s.event(watch.Error, *new(T), status, true)
	}
	switch {
	case s.dropAnn != nil:
		if cut := cutMetadata(*scratch, obj, cutMF, s.dropAnn); len(cut) < len(obj) {
			obj, *scratch = cut, cut
		}
	case cutMF:
		if cut := cutManagedFields(*scratch, obj); len(cut) < len(obj) {
			obj, *scratch = cut, cut
		}
	}
	var t T
	err := json.UnmarshalCaseSensitivePreserveInts(obj, &t)
	if err != nil {
		if notAFrame(err) == errNotAFrame {
			return Event[T]{}, errNotAFrame
		}
		err = s.undecodableEvent(watch.EventType(typ), undecodableJSON(obj, err))
	}
	if cap(*scratch) > maxKeptLine {
		*scratch = nil
	}
	if err != nil {
		return Event[T]{}, err
	}
	return s.event(watch.EventType(typ), t, nil, true)
}

// notAFrame turns a syntax error into errNotAFrame: envelope did not check
// the object's end, so the line may be one event written another way. Any
// other error is the object's.
func notAFrame(err error) error {
	if syntax, _ := json.SyntaxErrorOffset(err); syntax {
		return errNotAFrame
	}
	return err
}

// decodeAnyFrame decodes a line holding one watch event with its members
// in any order, the general way.
func (s *restSource[T]) decodeAnyFrame(line []byte) (Event[T], error) {
	var ev struct {
		Type   watch.EventType   `json:"type"`
		Object gojson.RawMessage `json:"object"`
	}
	if err := json.UnmarshalCaseSensitivePreserveInts(line, &ev); err != nil {
		return Event[T]{}, err
	}
	if ev.Object == nil {
		return s.event(ev.Type, *new(T), nil, false)
	}
	if ev.Type == watch.Error {
		var status *metav1.Status
		if err := json.UnmarshalCaseSensitivePreserveInts(ev.Object, &status); err != nil {
			return Event[T]{}, err
		}
		return s.event(watch.Error, *new(T), status, true)
	}
	var t T
	if err := json.UnmarshalCaseSensitivePreserveInts(ev.Object, &t); err != nil {
		return Event[T]{}, s.undecodableEvent(ev.Type, undecodableJSON(ev.Object, err))
	}
	return s.event(ev.Type, t, nil, true)
}
