package httpinfo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/metrics"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// Errors of the registry.
var (
	// ErrNilRegistry is returned for a nil *Registry.
	ErrNilRegistry = errors.New("httpinfo: nil registry")
	// ErrNilInformer is returned by Add for a nil informer.
	ErrNilInformer = errors.New("httpinfo: nil informer")
	// ErrNilHandler is returned by Entry.AddHandler for a nil handler.
	ErrNilHandler = errors.New("httpinfo: nil handler")
	// ErrDuplicate is returned for a second informer, or a second handler
	// of one informer, under a name already registered.
	ErrDuplicate = errors.New("httpinfo: name already registered")
	// ErrNoName is returned by Entry.AddHandler for an empty handler name.
	ErrNoName = errors.New("httpinfo: empty name")
	// ErrUnknown is returned by Remove for an entry of another registry, or
	// one already removed.
	ErrUnknown = errors.New("httpinfo: unknown entry")
	// ErrInvalidOptions is returned by the constructors for options out of
	// range.
	ErrInvalidOptions = errors.New("httpinfo: invalid options")
)

// DefaultMaxErrorBytes is the default of Options.MaxErrorBytes.
const DefaultMaxErrorBytes = 256

// Options configures NewRegistry. The zero value is ready to use.
type Options struct {
	// ErrorText turns an informer's last error into the text the page, the
	// JSON and the health body show; its result is still cut to
	// MaxErrorBytes. Default: the redaction the package documentation
	// describes under "Error text" (API server errors by reason and code,
	// with the message only where it is the server's own text; connection
	// errors; not errors that may quote an object).
	ErrorText func(error) string
	// MaxErrorBytes bounds every error text, which is also stripped of
	// control and format characters and made valid UTF-8. Default (0):
	// DefaultMaxErrorBytes. Negative is an error.
	MaxErrorBytes int
}

// Handler is what the registry reads of a handler's registration:
// *typed.Registration implements it. A Handler that also has a Merged() int64
// method (a buffer that coalesces notifications by key) has its merged count
// shown too.
type Handler interface {
	HasSynced() bool
	Pending() int64
	Panics() int64
}

// merger is the optional part of a Handler.
type merger interface{ Merged() int64 }

// Registry is the set of informers, and of their handlers, that a
// Readiness check and a Page report on. Its methods are safe for concurrent
// use. Create it with NewRegistry.
type Registry struct {
	errorText func(error) string
	maxError  int

	mu          sync.Mutex
	entries     []*Entry     // in the order added
	controllers []Controller // in the order added
}

// NewRegistry returns an empty registry. It fails for a negative
// MaxErrorBytes.
func NewRegistry(opts Options) (*Registry, error) {
	if opts.MaxErrorBytes < 0 {
		return nil, fmt.Errorf("%w: MaxErrorBytes %d is negative", ErrInvalidOptions, opts.MaxErrorBytes)
	}
	r := &Registry{errorText: opts.ErrorText, maxError: opts.MaxErrorBytes}
	if r.errorText == nil {
		r.errorText = redact
	}
	if r.maxError == 0 {
		r.maxError = DefaultMaxErrorBytes
	}
	return r, nil
}

// informer is what an Entry reads of a *typed.Informer[T], whatever T.
type informer interface {
	Name() string
	HasSynced() bool
	Status() typed.Status
	LastSyncResourceVersion() string
	Stopped() <-chan struct{}
	objects() int
}

type typedInformer[T cache.Object] struct{ *typed.Informer[T] }

func (t typedInformer[T]) objects() int { return t.Store().Len() }

// Entry is one informer of a Registry. Add returns it.
type Entry struct {
	reg   *Registry
	inf   informer
	name  string
	added time.Time

	mu       sync.Mutex
	handlers []namedHandler
}

type namedHandler struct {
	name string
	h    Handler
}

// Add registers inf under its Name. It fails for a nil registry or
// informer, and with ErrDuplicate for a name already registered (give
// informers of one type distinct typed.Options.Name values).
func Add[T cache.Object](r *Registry, inf *typed.Informer[T]) (*Entry, error) {
	if r == nil {
		return nil, ErrNilRegistry
	}
	if inf == nil {
		return nil, fmt.Errorf("%w (%T)", ErrNilInformer, inf)
	}
	e := &Entry{reg: r, inf: typedInformer[T]{inf}, name: inf.Name(), added: time.Now()}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.entries {
		if o.name == e.name {
			return nil, fmt.Errorf("%w: informer %q", ErrDuplicate, e.name)
		}
	}
	r.entries = append(r.entries, e)
	return e, nil
}

// Remove drops e from its registry, for an informer that was released on
// purpose: a stopped informer that is still registered keeps the readiness
// check failing.
func (r *Registry) Remove(e *Entry) error {
	if r == nil {
		return ErrNilRegistry
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.Index(r.entries, e)
	if i < 0 {
		return ErrUnknown
	}
	r.entries = slices.Delete(r.entries, i, i+1)
	return nil
}

// Name returns the informer's name.
func (e *Entry) Name() string { return e.name }

// AddHandler registers a handler of the entry's informer under name, so
// that its depth, panics and sync state are shown and the readiness check
// waits for it to sync. The informer does not tell which handlers it has:
// pass the *typed.Registration its AddHandler returned.
func (e *Entry) AddHandler(name string, h Handler) error {
	if h == nil || isNilPointer(h) {
		return fmt.Errorf("%w: handler %q of informer %q", ErrNilHandler, name, e.name)
	}
	if name == "" {
		return fmt.Errorf("%w: a handler of informer %q needs a name", ErrNoName, e.name)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, o := range e.handlers {
		if o.name == name {
			return fmt.Errorf("%w: handler %q of informer %q", ErrDuplicate, name, e.name)
		}
	}
	e.handlers = append(e.handlers, namedHandler{name, h})
	return nil
}

// isNilPointer reports a typed nil *typed.Registration in the interface.
func isNilPointer(h Handler) bool {
	r, ok := h.(*typed.Registration)
	return ok && r == nil
}

// Snapshot is what a registry knows at one moment. The page renders it and
// serves it as JSON.
type Snapshot struct {
	// Time is when the snapshot was taken.
	Time time.Time `json:"time"`
	// Informers are in the order they were added.
	Informers []InformerStatus `json:"informers"`
	// Controllers are in the order they were added (AddController).
	Controllers []ControllerStatus `json:"controllers,omitempty"`
}

// InformerStatus is the state of one informer: names, counts and status,
// never the content of an object.
type InformerStatus struct {
	// Name is the informer's name.
	Name string `json:"name"`
	// Synced is whether the initial list is in the cache.
	Synced bool `json:"synced"`
	// Stopped is whether the informer's Run has returned.
	Stopped bool `json:"stopped"`
	// ResourceVersion is the last resourceVersion the informer took.
	ResourceVersion string `json:"resourceVersion"`
	// Objects is the number of cached objects.
	Objects int `json:"objects"`
	// EstimatedBytes is what the cached objects hold, by the informer's
	// estimate (typed.Status.Size), and BytesPerObject an object's share.
	EstimatedBytes int64 `json:"estimatedBytes"`
	BytesPerObject int64 `json:"bytesPerObject"`
	// BudgetBytes is the informer's memory budget, 0 without one;
	// OverBudget whether the estimate is past it.
	BudgetBytes int64 `json:"budgetBytes,omitempty"`
	OverBudget  bool  `json:"overBudget,omitempty"`
	// Error is the last error since the source last answered well; nil
	// when healthy.
	Error *ErrorStatus `json:"error,omitempty"`
	// Registered is when the informer was added to the registry.
	Registered time.Time `json:"registered"`
	// LastEvent is when the informer last applied a watch event, a
	// bookmark or a list (typed.Status.LastEventTime); zero before the
	// first.
	LastEvent time.Time `json:"lastEvent,omitzero"`
	// LastEventAgeSeconds is Time - LastEvent: how stale a quiet cache may
	// be; nil when LastEvent is zero.
	LastEventAgeSeconds *float64 `json:"lastEventAgeSeconds,omitempty"`
	// Counts are what the informer did with its source (typed.Status's
	// Stats).
	Counts metrics.Stats `json:"counts"`
	// Handlers are the registered handlers, in the order added.
	Handlers []HandlerStatus `json:"handlers"`
	// Quarantined are the objects left out of the cache
	// (typed.Status.Quarantined), by key, at most MaxQuarantinedShown of
	// them; QuarantinedCount counts them all.
	Quarantined      []QuarantinedStatus `json:"quarantined,omitempty"`
	QuarantinedCount int                 `json:"quarantinedCount,omitempty"`
}

// MaxQuarantinedShown bounds InformerStatus.Quarantined.
const MaxQuarantinedShown = 20

// QuarantinedStatus is an object left out of an informer's cache: its
// key, never its content.
type QuarantinedStatus struct {
	// Key is the object's key ("namespace/name").
	Key string `json:"key"`
	// ResourceVersion is the refused version.
	ResourceVersion string `json:"resourceVersion"`
	// Since is when it entered quarantine.
	Since time.Time `json:"since"`
	// Stale says the cache holds an older version of it; else none.
	Stale bool `json:"stale,omitempty"`
	// Reason is why it was refused, as the page shows errors.
	Reason string `json:"reason"`
}

// ErrorStatus is an informer's last error, as text safe to show.
type ErrorStatus struct {
	// Text is the error as Options.ErrorText made it, at most
	// Options.MaxErrorBytes long.
	Text string `json:"text"`
	// Reason is the API server's reason (Forbidden, NotFound...) for an
	// error from the server, else empty: one of the reasons of
	// k8s.io/apimachinery/pkg/apis/meta/v1 ("Unknown" for the empty one),
	// or "Other" for any other.
	Reason string `json:"reason,omitempty"`
	// Code is the HTTP status code of an error from the server, else 0.
	Code int32 `json:"code,omitempty"`
	// Since is when the current run of errors began.
	Since time.Time `json:"since"`
	// Last is when the last error happened.
	Last time.Time `json:"last"`
}

// HandlerStatus is the state of one registered handler.
type HandlerStatus struct {
	// Name is the name it was registered under.
	Name string `json:"name"`
	// Synced is whether it has handled the initial list.
	Synced bool `json:"synced"`
	// Pending is how many notifications wait for it.
	Pending int64 `json:"pending"`
	// Panics is how many of its calls panicked.
	Panics int64 `json:"panics"`
	// Merged is how many notifications its buffer merged into others;
	// nil when the handler does not say (no Merged method).
	Merged *int64 `json:"merged,omitempty"`
}

// Snapshot reads every registered informer and handler.
func (r *Registry) Snapshot() Snapshot {
	r.mu.Lock()
	entries := slices.Clone(r.entries)
	controllers := slices.Clone(r.controllers)
	r.mu.Unlock()
	now := time.Now()
	s := Snapshot{Time: now, Informers: make([]InformerStatus, 0, len(entries))}
	for _, e := range entries {
		s.Informers = append(s.Informers, e.status(now))
	}
	for _, c := range controllers {
		s.Controllers = append(s.Controllers, r.controllerStatus(c))
	}
	return s
}

func (e *Entry) status(now time.Time) InformerStatus {
	inf := e.inf
	st := inf.Status()
	is := InformerStatus{
		Name:            e.name,
		Synced:          inf.HasSynced(),
		Stopped:         isClosed(inf.Stopped()),
		ResourceVersion: inf.LastSyncResourceVersion(),
		Objects:         inf.objects(),
		Registered:      e.added,
		Counts:          st.Stats,
		EstimatedBytes:  st.Size.EstimatedBytes,
		BytesPerObject:  st.Size.BytesPerObject,
		BudgetBytes:     st.Size.Budget,
		OverBudget:      st.Size.OverBudget,
	}
	is.QuarantinedCount = len(st.Quarantined)
	for _, q := range st.Quarantined[:min(len(st.Quarantined), MaxQuarantinedShown)] {
		is.Quarantined = append(is.Quarantined, QuarantinedStatus{
			Key: q.Key.String(), ResourceVersion: q.ResourceVersion, Since: q.Since, Stale: q.Stale, Reason: e.reg.text(q.Reason),
		})
	}
	if st.LastError != nil {
		is.Error = &ErrorStatus{
			Text:  e.reg.text(st.LastError),
			Since: st.StaleSince,
			Last:  st.LastErrorTime,
		}
		if as, ok := apiStatus(st.LastError); ok {
			is.Error.Reason, is.Error.Code = metrics.Reason(as.Reason), as.Code
		}
		if is.Error.Since.IsZero() {
			is.Error.Since = st.LastErrorTime
		}
	}
	if !st.LastEventTime.IsZero() {
		is.LastEvent = st.LastEventTime
		age := now.Sub(st.LastEventTime).Seconds()
		is.LastEventAgeSeconds = &age
	}
	e.mu.Lock()
	handlers := slices.Clone(e.handlers)
	e.mu.Unlock() // no lock held while a Handler's methods run
	is.Handlers = make([]HandlerStatus, 0, len(handlers))
	for _, nh := range handlers {
		hs := HandlerStatus{Name: nh.name, Synced: nh.h.HasSynced(), Pending: nh.h.Pending(), Panics: nh.h.Panics()}
		if m, ok := nh.h.(merger); ok {
			n := m.Merged()
			hs.Merged = &n
		}
		is.Handlers = append(is.Handlers, hs)
	}
	return is
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// text is the error text the registry shows: ErrorText's, sanitised and
// bounded (bound).
func (r *Registry) text(err error) string {
	return bound(r.errorText(err), r.maxError)
}

// bound replaces with a space every rune that is not graphic (control and
// format characters, line and paragraph separators) and every byte that is
// not valid UTF-8, then cuts s to at most n bytes on a rune boundary,
// ending in an ellipsis when it was cut and n has room for one.
func bound(s string, n int) string {
	s = strings.Map(func(c rune) rune {
		if !unicode.IsGraphic(c) || c == utf8.RuneError {
			return ' '
		}
		return c
	}, s)
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	end := ""
	if n >= len(ellipsis) {
		n, end = n-len(ellipsis), ellipsis
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + end
}

// withheld is the text of an error whose message may quote an object.
const withheld = "(text withheld: it may quote an object; the ErrorHandler gets it)"

// redact is the default Options.ErrorText. It shows the text of errors
// whose text this module, the Go runtime or the API server wrote about the
// request, and only the kind of the others, whose text may quote an
// object: a refused object (Transform or an index function failed: their
// message is the user's), a malformed or mistyped object from the source
// (a decoder's message can quote a value), an API status whose message is
// not the server's own text (statusText), or any other error. Of a
// connection error it shows the connection error's own text, not what
// wrapped it.
func redact(err error) string {
	phase := ""
	var se *source.Error
	if errors.As(err, &se) {
		phase = string(se.Phase) + ": "
	}
	var re *typed.RefusedError
	if errors.As(err, &re) {
		what := "refused "
		if re.Quarantined {
			what = "quarantined "
		}
		if re.Key.Name == "" {
			return what + "an object " + withheld
		}
		return what + re.Key.String() + " " + withheld
	}
	for _, s := range []error{source.ErrMalformed, source.ErrWrongType, source.ErrNilObject} {
		if errors.Is(err, s) {
			return phase + s.Error() + " " + withheld
		}
	}
	if st, ok := apiStatus(err); ok {
		return phase + statusText(st)
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return phase + ne.Error()
	}
	for _, s := range []error{context.Canceled, context.DeadlineExceeded, io.EOF, io.ErrUnexpectedEOF, source.ErrWatchClosed} {
		if errors.Is(err, s) {
			return phase + s.Error()
		}
	}
	return phase + "error " + withheld
}
