package source

import (
	"bytes"
	"context"
	gojson "encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/json"

	"github.com/typedinformer/informer/cache"
)

// restSource lists and watches over a REST client and decodes the JSON
// bodies itself, each value once, straight into T.
type restSource[T cache.Object] struct {
	request   func(opts metav1.ListOptions, namespace string) *rest.Request
	namespace string
	gvk       schema.GroupVersionKind
	workers   int  // RESTOptions.DecodeWorkers
	cutMF     bool // drop managedFields (not RESTOptions.KeepManagedFields)
	// gzip: watches ask for gzip and decompress it themselves (gunzip.go);
	// false when the config disables compression.
	gzip bool
	// dropAnn are the annotation keys dropped (RESTOptions.DropAnnotations);
	// nil if none.
	dropAnn map[string]bool
	info    Info
}

// Info tells the mapped resource and its scope; an API server streams
// lists (or refuses them with an error the informer falls back on); every
// object is decoded for the caller alone, without managedFields unless
// RESTOptions.KeepManagedFields.
func (s *restSource[T]) Info() Info { return s.info }

// restList is a list body: its metadata and items, decoded in one pass.
type restList[T cache.Object] struct {
	Metadata metav1.ListMeta `json:"metadata"`
	Items    []T             `json:"items"`
}

func (s *restSource[T]) List(ctx context.Context, opts metav1.ListOptions) (List[T], error) {
	rc, err := s.request(opts, s.namespace).Stream(ctx)
	if err != nil {
		return List[T]{}, &Error{Phase: PhaseList, Err: err}
	}
	defer rc.Close()
	return s.decodeList(rc)
}

// ListItems decodes the body as it is read (decodeListItems): one item's
// bytes and one decoded item at a time.
func (s *restSource[T]) ListItems(ctx context.Context, opts metav1.ListOptions, yield func(T) error) (List[T], error) {
	rc, err := s.request(opts, s.namespace).Stream(ctx)
	if err != nil {
		return List[T]{}, &Error{Phase: PhaseList, Err: err}
	}
	defer rc.Close()
	return s.decodeListItems(rc, yield)
}

// decodeList decodes a JSON list body read from r. The body is decoded in
// one pass; only one that is JSON but does not decode into the list of T
// as a whole is decoded again, item by item (decodeItems), to find the
// items that do not.
func (s *restSource[T]) decodeList(r io.Reader) (List[T], error) {
	body, err := io.ReadAll(r)
	if err != nil { // the connection failed, not the body
		return List[T]{}, &Error{Phase: PhaseList, Err: err}
	}
	var l restList[T]
	if err := json.UnmarshalCaseSensitivePreserveInts(body, &l); err != nil {
		if syntax, _ := json.SyntaxErrorOffset(err); syntax {
			return List[T]{}, s.listError(err)
		}
		return s.decodeItems(body)
	}
	for i, obj := range l.Items {
		if err := s.listed(i, obj); err != nil {
			return List[T]{}, err
		}
	}
	return List[T]{Items: l.Items, ResourceVersion: l.Metadata.ResourceVersion, Continue: l.Metadata.Continue, ShardInfo: l.Metadata.ShardInfo}, nil
}

// decodeItems decodes a list body that is JSON item by item: an item that
// does not decode into T, if its metadata names it, goes into
// List.Undecodable; one without a readable name is the error of the list.
func (s *restSource[T]) decodeItems(body []byte) (List[T], error) {
	var l struct {
		Metadata metav1.ListMeta     `json:"metadata"`
		Items    []gojson.RawMessage `json:"items"`
	}
	if err := json.UnmarshalCaseSensitivePreserveInts(body, &l); err != nil {
		return List[T]{}, s.listError(err) // the list itself, not an item
	}
	out := List[T]{Items: make([]T, 0, len(l.Items)), ResourceVersion: l.Metadata.ResourceVersion, Continue: l.Metadata.Continue, ShardInfo: l.Metadata.ShardInfo}
	for i, raw := range l.Items {
		var obj T
		if err := json.UnmarshalCaseSensitivePreserveInts(raw, &obj); err != nil {
			u := undecodableJSON(raw, err)
			u.Index = i
			if u.Name == "" {
				return List[T]{}, &Error{Phase: PhaseList, Err: fmt.Errorf("decode %v list: %w", s.info.Resource, u)}
			}
			out.Undecodable = append(out.Undecodable, u)
			continue
		}
		if err := s.listed(i, obj); err != nil {
			return List[T]{}, err
		}
		out.Items = append(out.Items, obj)
	}
	return out, nil
}

// listError is the error of a list body that makes no sense as a list.
func (s *restSource[T]) listError(err error) error {
	return &Error{Phase: PhaseList, Err: fmt.Errorf("%w: decode %v list: %w", ErrMalformed, s.info.Resource, err)}
}

// listed checks item i of a list and drops its managedFields.
func (s *restSource[T]) listed(i int, obj T) error {
	if err := s.check(obj); err != nil {
		return &Error{Phase: PhaseList, Err: fmt.Errorf("item %d: %w", i, err)}
	}
	if s.cutMF {
		obj.SetManagedFields(nil) // nobody else has seen it yet
	}
	return nil
}

// check refuses a nil object or one of another kind, and clears the kind
// the body carried, as client-go's typed clients do.
func (s *restSource[T]) check(obj T) error {
	var zero T
	if obj == zero {
		return fmt.Errorf("%w: want %T, got null", ErrNilObject, zero)
	}
	ok := obj.GetObjectKind()
	if gvk := ok.GroupVersionKind(); gvk.Kind != "" && gvk != s.gvk {
		return fmt.Errorf("%w: want %v, got %v", ErrWrongType, s.gvk, gvk)
	}
	ok.SetGroupVersionKind(schema.GroupVersionKind{})
	s.dropAnnotations(obj)
	return nil
}

// metaCut is what the source cuts from every object's metadata bytes.
func (s *restSource[T]) metaCut() metaCut {
	return metaCut{managedFields: s.cutMF, annotations: s.dropAnn}
}

// dropAnnotations deletes the dropped annotations from obj, which nobody
// else has seen yet. The bytes usually had them cut already; this also
// catches what the cut does not recognise (an escaped key, a whole LIST
// decoded at once), so that no path keeps one.
func (s *restSource[T]) dropAnnotations(obj T) {
	if s.dropAnn == nil {
		return
	}
	a := obj.GetAnnotations()
	if a == nil {
		return
	}
	for k := range s.dropAnn {
		delete(a, k)
	}
	if len(a) == 0 {
		obj.SetAnnotations(nil) // as if the object had none, whichever path decoded it
	}
}

// watchBody starts a watch and returns its body, decompressed by
// gunzipBody when the source takes gzip. Like client-go's, watches are
// not rate limited: a watch is one long request, and a restart must not
// queue behind lists.
func (s *restSource[T]) watchBody(ctx context.Context, opts metav1.ListOptions) (io.ReadCloser, error) {
	req := s.request(opts, s.namespace).Throttle(nil)
	if !s.gzip {
		return req.Stream(ctx)
	}
	body, err := req.SetHeader("Accept-Encoding", "gzip").Stream(ctx)
	if err != nil {
		return nil, err
	}
	return newGunzipBody(body), nil
}

func (s *restSource[T]) Watch(ctx context.Context, opts metav1.ListOptions) (Watcher[T], error) {
	opts.Watch = true
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	body, err := s.watchBody(ctx, opts)
	if err != nil {
		cancel()
		return nil, &Error{Phase: PhaseWatchStart, Err: err}
	}
	if s.workers > 1 {
		return newParallelWatcher(s, ctx, cancel, body, s.cutMF), nil
	}
	w := &restWatcher[T]{src: s, ctx: ctx, parent: parent, cancel: cancel, body: body, read: &recordingReader{r: body},
		cutMF: s.cutMF}
	w.lines = newLineReader(w.read)
	return w, nil
}

// restWatcher decodes a JSON watch stream on the caller's goroutine: each
// line's event, its object straight into T (or into a Status for an ERROR
// event); from the first line that is not one event, the general
// streaming decoder.
type restWatcher[T cache.Object] struct {
	src *restSource[T]
	ctx context.Context
	// parent is the context Watch was given: ctx ends with it, so a Next
	// given it needs no watch of its own on it.
	parent  context.Context
	cancel  context.CancelFunc
	body    io.ReadCloser
	read    *recordingReader
	lines   *lineReader  // nil once dec took over
	dec     json.Decoder // the general decoder, once needed
	cutMF   bool         // drop managedFields before decoding
	scratch []byte       // room for an object without its managedFields
	stopped atomic.Bool
	once    sync.Once
}

func (w *restWatcher[T]) Stop() {
	w.once.Do(func() {
		w.stopped.Store(true)
		w.cancel()
		_ = w.body.Close()
	})
}

func (w *restWatcher[T]) Next(ctx context.Context) (Event[T], error) {
	if err := ctx.Err(); err != nil {
		return Event[T]{}, err
	}
	if w.stopped.Load() {
		return Event[T]{}, ErrWatchClosed
	}
	if ctx != w.ctx && ctx != w.parent {
		// A read blocks in the body; ending ctx ends the stream.
		defer context.AfterFunc(ctx, w.Stop)()
	}
	ev, err := w.decode()
	if err != nil {
		return Event[T]{}, streamError(ctx, err, w.stopped.Load(), w.read, w.src.info.Resource)
	}
	return ev, nil
}

// streamError is what Next returns when reading the next event of a watch
// body failed with err.
func streamError(ctx context.Context, err error, stopped bool, read *recordingReader, res Resource) error {
	var se *Error
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case stopped:
		return ErrWatchClosed
	case errors.As(err, &se):
		return err
	case read.err != nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		// The connection ended or failed, possibly mid-event: the stream
		// is over, and a new watch resumes from the last event.
		return ErrWatchClosed
	}
	// The bytes arrived and do not decode into T: a syntax error, a value
	// of the wrong JSON type, or one a field's own decoder refuses (a bad
	// quantity or time).
	return &Error{Phase: PhaseWatch, Err: fmt.Errorf("%w: decode %v watch event: %w", ErrMalformed, res, err)}
}

// recordingReader remembers the first read error other than io.EOF, so
// that a decoding error can be told from a failing connection.
type recordingReader struct {
	r   io.Reader
	err error
}

func (r *recordingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

// decode reads the next event.
func (w *restWatcher[T]) decode() (Event[T], error) {
	for w.lines != nil {
		line, err := w.lines.next()
		if err != nil {
			return Event[T]{}, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		ev, err := w.src.decodeFrame(line, w.cutMF, &w.scratch)
		if !errors.Is(err, errNotAFrame) {
			w.lines.shrink()
			return ev, err
		}
		w.dec = json.NewDecoderCaseSensitivePreserveInts(w.lines.unread(line))
		w.lines = nil
	}
	return w.decodeStream()
}

// decodeStream reads one {"type": ..., "object": ...} value with the
// general decoder.
func (w *restWatcher[T]) decodeStream() (Event[T], error) {
	if err := w.delim('{'); err != nil {
		return Event[T]{}, err
	}
	var (
		typ    watch.EventType
		obj    T
		status *metav1.Status
		raw    gojson.RawMessage // the object, decoded once the event is read
	)
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return Event[T]{}, err
		}
		switch tok {
		case "type":
			var t string
			if err := w.dec.Decode(&t); err != nil {
				return Event[T]{}, err
			}
			typ = watch.EventType(t)
		case "object":
			if err := w.dec.Decode(&raw); err != nil {
				return Event[T]{}, err
			}
		default:
			var skip gojson.RawMessage
			if err := w.dec.Decode(&skip); err != nil {
				return Event[T]{}, err
			}
		}
	}
	if err := w.delim('}'); err != nil {
		return Event[T]{}, err
	}
	// The whole event is read: an object that does not decode leaves the
	// stream at the next one.
	if raw != nil {
		if typ == watch.Error {
			if err := json.UnmarshalCaseSensitivePreserveInts(raw, &status); err != nil {
				return Event[T]{}, err
			}
		} else if err := json.UnmarshalCaseSensitivePreserveInts(raw, &obj); err != nil {
			return Event[T]{}, w.src.undecodableEvent(typ, undecodableJSON(raw, err))
		}
	}
	return w.src.event(typ, obj, status, raw != nil)
}

// event checks a decoded event and makes it an Event or a stream error.
func (s *restSource[T]) event(typ watch.EventType, obj T, status *metav1.Status, seen bool) (Event[T], error) {
	switch typ {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		if !seen {
			return Event[T]{}, &Error{Phase: PhaseWatch, Err: fmt.Errorf("%w: %s event without an object", ErrMalformed, typ)}
		}
		if err := s.check(obj); err != nil {
			return Event[T]{}, &Error{Phase: PhaseWatch, Err: fmt.Errorf("%s event: %w", typ, err)}
		}
		return Event[T]{Type: typ, Object: obj}, nil
	case watch.Error:
		if status == nil {
			return Event[T]{}, &Error{Phase: PhaseWatch, Err: fmt.Errorf("%w: error event without a status", ErrMalformed)}
		}
		return Event[T]{}, &Error{Phase: PhaseWatch, Err: apierrors.FromObject(status)}
	}
	return Event[T]{}, &Error{Phase: PhaseWatch, Err: fmt.Errorf("%w: unknown watch event type %q", ErrMalformed, typ)}
}

// delim reads the delimiter d, or fails.
func (w *restWatcher[T]) delim(d gojson.Delim) error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return &Error{Phase: PhaseWatch, Err: fmt.Errorf("%w: want %v, got %v", ErrMalformed, d, tok)}
	}
	return nil
}
