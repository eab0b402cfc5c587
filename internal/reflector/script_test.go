package reflector

// The scripted source, the recording sink and the harness the reflector
// tests share. Every test runs inside a synctest bubble: backoff sleeps take
// no real time, and the virtual clock makes "no backoff between these two
// calls" an exact check.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
	"github.com/typedinformer/informer/source"
)

type (
	podEvent = source.Event[*corev1.Pod]
	podDelta = fifo.Delta[*corev1.Pod]
	opts     = Options[*corev1.Pod]
)

// maxCalls bounds the requests of one run: a reflector that loops without
// backing off hits it (synctest time does not move in a busy loop, so the
// test would otherwise hang).
const maxCalls = 200

// req is what a test compares of one recorded request.
type req struct {
	Op       string // "list", "watch", or "stream" (a watch with sendInitialEvents)
	RV       string
	Limit    int64
	Continue string
}

func (r req) String() string {
	s := r.Op + " rv=" + fmt.Sprintf("%q", r.RV)
	if r.Limit != 0 {
		s += fmt.Sprintf(" limit=%d", r.Limit)
	}
	if r.Continue != "" {
		s += " continue=" + r.Continue
	}
	return s
}

func list(rv string, limit int64) req { return req{Op: "list", RV: rv, Limit: limit} }
func next(cont string, limit int64) req {
	return req{Op: "list", Limit: limit, Continue: cont}
}
func watchAt(rv string) req  { return req{Op: "watch", RV: rv} }
func streamAt(rv string) req { return req{Op: "stream", RV: rv} }

// call is one recorded request: its projection, the full options, the
// virtual time since the source was made, and how many deltas the sink had
// taken when it was made.
type call struct {
	req
	opts   metav1.ListOptions
	at     time.Duration
	pushed int
}

// step is the answer to one request.
type step struct {
	page  *source.List[*corev1.Pod] // a LIST page
	err   error                     // the request fails
	w     *wspec                    // a Watch returns this watcher
	block bool                      // the request blocks until ctx ends
	last  bool                      // the run's last expected request: cancel the run once it is served
	gate  <-chan struct{}           // if set, the request is answered only once gate is closed
}

// item is what a fed watcher's Next returns: an event or an error.
type item struct {
	ev  podEvent
	err error
}

// wspec scripts a watcher: its events (then those of feed), optionally one
// every gap of virtual time, then how it ends.
type wspec struct {
	events []podEvent
	feed   <-chan item // after events; closing it closes the watch
	gap    time.Duration
	end    error // nil: ErrWatchClosed; errHang: block until ctx ends or Stop
}

var errHang = errors.New("hang")

func page(rv, cont string, items ...*corev1.Pod) step {
	return step{page: &source.List[*corev1.Pod]{Items: items, ResourceVersion: rv, Continue: cont}}
}
func fail(err error) step        { return step{err: err} }
func hangs(evs ...podEvent) step { return step{w: &wspec{events: evs, end: errHang}} }

// closes: the watch delivers evs, then ends normally.
func closes(evs ...podEvent) step { return step{w: &wspec{events: evs}} }

// breaks: the watch delivers evs, then Next returns err.
func breaks(err error, evs ...podEvent) step { return step{w: &wspec{events: evs, end: err}} }
func fed(ch <-chan item) step                { return step{w: &wspec{feed: ch}} }
func blocks() step                           { return step{block: true} }
func (s step) final() step                   { s.last = true; return s }
func (s step) after(g <-chan struct{}) step  { s.gate = g; return s }

// scriptSource is a source.Source that answers from per-operation scripts
// and records every request.
type scriptSource struct {
	t      *testing.T
	start  time.Time
	cancel context.CancelFunc
	sink   *recSink

	mu      sync.Mutex
	lists   []step // answers to List, in order
	watches []step // answers to Watch (streaming or not), in order
	// Answers once lists or watches are used up (nil: the request is
	// unexpected, the test fails).
	alwaysList, alwaysWatch *step
	calls                   []call
	watchers                []*scriptWatcher
}

func (s *scriptSource) take(ctx context.Context, op string, opts metav1.ListOptions) step {
	st := s.take1(ctx, op, opts)
	if st.gate != nil {
		select {
		case <-st.gate:
		case <-ctx.Done():
			return blocks()
		}
	}
	return st
}

func (s *scriptSource) take1(ctx context.Context, op string, opts metav1.ListOptions) step {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := req{Op: op, RV: opts.ResourceVersion, Limit: opts.Limit, Continue: opts.Continue}
	if op == "watch" && opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		r.Op = "stream"
	}
	s.calls = append(s.calls, call{req: r, opts: opts, at: time.Since(s.start), pushed: s.sink.len()})
	if len(s.calls) > maxCalls {
		if len(s.calls) == maxCalls+1 {
			s.t.Errorf("more than %d requests: the reflector loops (last: %v)", maxCalls, r)
		}
		s.cancel()
		return blocks()
	}
	if ctx.Err() != nil {
		return blocks()
	}
	script, always := &s.lists, s.alwaysList
	if op == "watch" {
		script, always = &s.watches, s.alwaysWatch
	}
	if len(*script) == 0 {
		if always != nil {
			return *always
		}
		s.t.Errorf("unexpected request %d: %v", len(s.calls), r)
		s.cancel()
		return blocks()
	}
	st := (*script)[0]
	*script = (*script)[1:]
	return st
}

func (s *scriptSource) Info() source.Info { return source.Info{WatchList: true} }

func (s *scriptSource) List(ctx context.Context, opts metav1.ListOptions) (source.List[*corev1.Pod], error) {
	st := s.take(ctx, "list", opts)
	if st.w != nil {
		s.t.Errorf("script error: a watcher answers a LIST")
	}
	if st.last {
		s.cancel()
	}
	switch {
	case st.block:
		<-ctx.Done()
		return source.List[*corev1.Pod]{}, &source.Error{Phase: source.PhaseList, Err: ctx.Err()}
	case st.err != nil:
		return source.List[*corev1.Pod]{}, st.err
	case st.page == nil:
		s.t.Errorf("script error: a LIST without an answer")
		return source.List[*corev1.Pod]{}, errors.New("script error")
	}
	p := *st.page
	p.Items = slices.Clone(p.Items)
	return p, nil
}

func (s *scriptSource) Watch(ctx context.Context, opts metav1.ListOptions) (source.Watcher[*corev1.Pod], error) {
	st := s.take(ctx, "watch", opts)
	switch {
	case st.block:
		<-ctx.Done()
		return nil, &source.Error{Phase: source.PhaseWatchStart, Err: ctx.Err()}
	case st.err != nil:
		if st.last {
			s.cancel()
		}
		return nil, st.err
	case st.w == nil:
		s.t.Errorf("script error: a Watch without a watcher")
		return nil, errors.New("script error")
	}
	w := &scriptWatcher{spec: *st.w, last: st.last, src: s, stopped: make(chan struct{})}
	s.mu.Lock()
	w.call = len(s.calls) - 1
	s.watchers = append(s.watchers, w)
	s.mu.Unlock()
	return w, nil
}

// doneAt is when request i was over: for a watch, when its stream ended
// (Next returned an error or Stop was called); else when it was made.
func (s *scriptSource) doneAt(i int) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.watchers {
		if w.call == i {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.ended {
				return w.endedAt
			}
		}
	}
	return s.calls[i].at
}

func (s *scriptSource) reqs() []req {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) == 0 {
		return nil
	}
	out := make([]req, len(s.calls))
	for i, c := range s.calls {
		out[i] = c.req
	}
	return out
}

func (s *scriptSource) recorded() []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// unstopped counts the watchers handed out and never stopped.
func (s *scriptSource) unstopped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, w := range s.watchers {
		select {
		case <-w.stopped:
		default:
			n++
		}
	}
	return n
}

type scriptWatcher struct {
	spec wspec
	last bool
	src  *scriptSource
	call int // index of the Watch request in src.calls

	mu      sync.Mutex
	i       int
	ended   bool
	endedAt time.Duration
	stopped chan struct{}
	once    sync.Once
}

func (w *scriptWatcher) Stop() {
	w.once.Do(func() { close(w.stopped) })
	w.end()
}

func (w *scriptWatcher) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ended {
		w.ended, w.endedAt = true, time.Since(w.src.start)
	}
}

func (w *scriptWatcher) Next(ctx context.Context) (podEvent, error) {
	ev, err := w.next(ctx)
	if err != nil {
		w.end()
	}
	return ev, err
}

func (w *scriptWatcher) next(ctx context.Context) (podEvent, error) {
	if err := ctx.Err(); err != nil {
		return podEvent{}, err
	}
	select {
	case <-w.stopped:
		return podEvent{}, source.ErrWatchClosed
	default:
	}
	if w.spec.gap > 0 {
		t := time.NewTimer(w.spec.gap)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return podEvent{}, ctx.Err()
		case <-w.stopped:
			return podEvent{}, source.ErrWatchClosed
		case <-t.C:
		}
	}
	w.mu.Lock()
	if w.i < len(w.spec.events) {
		ev := w.spec.events[w.i]
		w.i++
		w.mu.Unlock()
		return ev, nil
	}
	w.mu.Unlock()
	if w.spec.feed != nil {
		select {
		case <-ctx.Done():
			return podEvent{}, ctx.Err()
		case <-w.stopped:
			return podEvent{}, source.ErrWatchClosed
		case it, ok := <-w.spec.feed:
			if !ok {
				return podEvent{}, source.ErrWatchClosed
			}
			return it.ev, it.err
		}
	}
	if w.last {
		w.src.cancel()
	}
	switch {
	case w.spec.end == errHang || w.last:
		select {
		case <-ctx.Done():
			return podEvent{}, ctx.Err()
		case <-w.stopped:
			return podEvent{}, source.ErrWatchClosed
		}
	case w.spec.end == nil:
		return podEvent{}, source.ErrWatchClosed
	}
	return podEvent{}, w.spec.end
}

// recSink is the reflector's Sink: it keeps every delta pushed (rendered
// by recorded as "start", "replaced a@5", "end@7", "add b@8", "update a@9",
// "delete a@10", "bookmark@11") and checks that each object delta's key is
// its object's.
type recSink struct {
	t *testing.T

	mu     sync.Mutex
	ds     []podDelta
	closed bool
}

func (s *recSink) Push(ds ...podDelta) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fifo.ErrClosed
	}
	for _, d := range ds {
		s.ds = append(s.ds, d)
		if d.Object != nil && d.Key != cache.KeyOf(d.Object) {
			s.t.Errorf("%s: entry key %v, want the object's %v", render(d), d.Key, cache.KeyOf(d.Object))
		}
	}
	return nil
}

func (s *recSink) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

func (s *recSink) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ds)
}

func (s *recSink) deltas() []podDelta {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ds)
}

func (s *recSink) recorded() []string {
	ds := s.deltas()
	if len(ds) == 0 {
		return nil
	}
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = render(d)
	}
	return out
}

// renderAll renders ds, a deletion by key with the version it came at.
func renderAll(ds []podDelta) []string {
	var out []string
	for _, d := range ds {
		s := render(d)
		if d.Type == fifo.Deleted && d.Object == nil {
			s += "@" + d.ResourceVersion
		}
		out = append(out, s)
	}
	return out
}

func render(d podDelta) string {
	switch d.Type {
	case fifo.ReplaceStart:
		return "start"
	case fifo.ReplaceEnd:
		return "end@" + d.ResourceVersion
	case fifo.Bookmark:
		return "bookmark@" + d.ResourceVersion
	case fifo.Moved:
		return "Moved"
	case fifo.Refused:
		return "refused " + d.Key.Name + "@" + d.ResourceVersion + ": " + d.Err.Error()
	case fifo.Added:
		return "add " + name(d.Object)
	case fifo.Updated:
		return "update " + name(d.Object)
	case fifo.Deleted:
		return "delete " + name(d.Object)
	case fifo.Replaced:
		return "replaced " + name(d.Object)
	}
	return d.Type.String() + " " + name(d.Object)
}

func name(p *corev1.Pod) string {
	if p == nil {
		return "<nil>"
	}
	return p.Name + "@" + p.ResourceVersion
}

// checkDeltas checks what any sequence of deltas must satisfy: Replaced and
// ReplaceEnd only inside a list (after a ReplaceStart), watch deltas and
// bookmarks only outside one, Deleted and Refused anywhere (a streaming list's initial events carry deletions); and no delta moves an object back to an older
// resourceVersion than one already handed over.
func checkDeltas(t *testing.T, ds []podDelta) {
	t.Helper()
	open := false
	newest := map[cache.Key]string{}
	for i, d := range ds {
		switch d.Type {
		case fifo.ReplaceStart:
			open = true
		case fifo.Replaced, fifo.ReplaceEnd:
			if !open {
				t.Errorf("delta %d %q outside a list", i, render(d))
			}
			open = open && d.Type == fifo.Replaced
		case fifo.Added, fifo.Updated, fifo.Bookmark:
			if open {
				t.Errorf("delta %d %q inside a list", i, render(d))
			}
		}
		if d.Object == nil {
			continue
		}
		rv := d.Object.ResourceVersion
		if prev, ok := newest[d.Key]; ok {
			if c, err := resourceversion.CompareResourceVersion(rv, prev); err == nil && c < 0 {
				t.Errorf("delta %d %q moves %v back from %s", i, render(d), d.Key, prev)
				continue
			}
		}
		newest[d.Key] = rv
	}
}

// reported is one error read from Errors: when (virtual time since the
// harness started) and the LastSyncResourceVersion then.
type reported struct {
	err error
	at  time.Duration
	rv  string
}

// harness runs one reflector against a scripted source and a recording
// sink, and reads Errors all along.
type harness struct {
	t      *testing.T
	src    *scriptSource
	sink   *recSink
	r      *Reflector[*corev1.Pod]
	ctx    context.Context
	cancel context.CancelFunc

	stopOnce   sync.Once
	stop, done chan struct{}
	mu         sync.Mutex
	errs       []reported
}

// newHarness must be called inside the synctest bubble.
func newHarness(t *testing.T, o opts) *harness {
	t.Helper()
	return newHarnessOf(t, o, nil)
}

// newHarnessOf is newHarness with the reflector's source wrap(h.src), if
// wrap is not nil.
func newHarnessOf(t *testing.T, o opts, wrap func(*scriptSource) source.Source[*corev1.Pod]) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	h := &harness{t: t, ctx: ctx, cancel: cancel, sink: &recSink{t: t}, stop: make(chan struct{}), done: make(chan struct{})}
	h.src = &scriptSource{t: t, start: time.Now(), cancel: cancel, sink: h.sink}
	var src source.Source[*corev1.Pod] = h.src
	if wrap != nil {
		src = wrap(h.src)
	}
	h.r = New(src, h.sink, o)
	go h.readErrors()
	t.Cleanup(h.stopErrors)
	return h
}

// readErrors records what Errors delivers, with the time and the resume
// point: Run backs off (or returns) after reporting, and synctest time does
// not move while this goroutine can run, so both are those of the report.
func (h *harness) readErrors() {
	defer close(h.done)
	for {
		select {
		case <-h.stop:
			return
		case err := <-h.r.Errors():
			h.record(err)
		}
	}
}

func (h *harness) record(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.errs = append(h.errs, reported{err: err, at: time.Since(h.src.start), rv: h.r.LastSyncResourceVersion()})
}

// stopErrors ends readErrors and takes what is still buffered.
func (h *harness) stopErrors() {
	h.stopOnce.Do(func() {
		close(h.stop)
		<-h.done
		for {
			select {
			case err := <-h.r.Errors():
				h.record(err)
			default:
				return
			}
		}
	})
}

// run runs the reflector until the script cancels it, and checks that Run
// returned nil, stopped every watcher, and pushed well-formed deltas.
func (h *harness) run() {
	h.t.Helper()
	if err := h.r.Run(h.ctx); err != nil {
		h.t.Errorf("Run = %v, want nil", err)
	}
	h.finish()
}

// runFor runs the reflector for d of virtual time, then cancels it.
func (h *harness) runFor(d time.Duration) {
	h.t.Helper()
	done := make(chan error, 1)
	go func() { done <- h.r.Run(h.ctx) }()
	time.Sleep(d)
	h.cancel()
	if err := <-done; err != nil {
		h.t.Errorf("Run = %v, want nil", err)
	}
	h.finish()
}

func (h *harness) finish() {
	h.t.Helper()
	h.stopErrors()
	if n := h.src.unstopped(); n != 0 {
		h.t.Errorf("%d watchers never stopped", n)
	}
	checkDeltas(h.t, h.sink.deltas())
	if got, want := h.r.Status().Stats.Errors, len(h.reported()); got != want {
		h.t.Errorf("Stats.Errors = %d, want %d (one per error delivered)", got, want)
	}
}

func (h *harness) reported() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]error, len(h.errs))
	for i, r := range h.errs {
		out[i] = r.err
	}
	return out
}

// gap is the virtual time between recorded requests i and j.
func gap(calls []call, i, j int) time.Duration { return calls[j].at - calls[i].at }

// checkGaps checks that each request in afterBackoff comes at least
// DefaultBackoffInit after the request before it was over (see doneAt), and
// each in immediate at that same instant.
func (h *harness) checkGaps(afterBackoff, immediate []int) {
	h.t.Helper()
	calls := h.src.recorded()
	for _, i := range afterBackoff {
		if g := calls[i].at - h.src.doneAt(i-1); g < DefaultBackoffInit {
			h.t.Errorf("%v came %v after %v was over, want at least %v of backoff", calls[i].req, g, calls[i-1].req, DefaultBackoffInit)
		}
	}
	for _, i := range immediate {
		if g := calls[i].at - h.src.doneAt(i-1); g != 0 {
			h.t.Errorf("%v came %v after %v was over, want it at once", calls[i].req, g, calls[i-1].req)
		}
	}
}

// Objects and events.

func pod(n, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n, ResourceVersion: rv}}
}

func added(n, rv string) podEvent    { return podEvent{Type: watch.Added, Object: pod(n, rv)} }
func modified(n, rv string) podEvent { return podEvent{Type: watch.Modified, Object: pod(n, rv)} }
func deleted(n, rv string) podEvent  { return podEvent{Type: watch.Deleted, Object: pod(n, rv)} }

// bookmark is a plain bookmark; endBookmark the end of a streaming list.
func bookmark(rv string) podEvent {
	return podEvent{Type: watch.Bookmark, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}}
}

func annotatedBookmark(rv, value string) podEvent {
	ev := bookmark(rv)
	ev.Object.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: value}
	return ev
}

func endBookmark(rv string) podEvent { return annotatedBookmark(rv, "true") }

// Errors, wrapped as a Source wraps them.

func listErr(err error) error  { return &source.Error{Phase: source.PhaseList, Err: err} }
func startErr(err error) error { return &source.Error{Phase: source.PhaseWatchStart, Err: err} }

// nextErr is an error Watcher.Next returns instead of an event: an ERROR
// event's status, or a frame that makes no sense.
func nextErr(err error) error { return &source.Error{Phase: source.PhaseWatch, Err: err} }

var podsGR = schema.GroupResource{Resource: "pods"}

func expired() error { return apierrors.NewResourceExpired("too old resource version: 5 (10)") }

//lint:ignore SA1019 the old 410 form servers still send
func gone() error { return apierrors.NewGone("too old resource version: 5 (10)") }

// The three forms of "too large resource version".
func tooLargeCause() error {
	// The current form (k8s.io/apiserver's storage.NewTooLargeResourceVersionError)
	// is a 504 carrying the ResourceVersionTooLarge cause; here only the
	// cause type says so.
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 504, Reason: metav1.StatusReasonTimeout,
		Message: "Timeout: resourceVersion 30 is not available yet",
		Details: &metav1.StatusDetails{
			Causes:            []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "requested 30, current 20"}},
			RetryAfterSeconds: 1,
		},
	}}
}

func tooLargeCauseMessage() error {
	// API servers 1.17.0-1.18.5: a timeout whose cause has only the message.
	err := apierrors.NewTimeoutError("resourceVersion 30, current 20", 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Message: "Too large resource version"}}
	return err
}

func tooLargeMessage() error {
	// API servers before 1.17: a timeout that says so in its message only.
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 504, Reason: metav1.StatusReasonTimeout,
		Message: "Timeout: Too large resource version: 30, current: 20",
	}}
}

const apiURL = "https://10.0.0.1:6443/api/v1/pods?watch=true"

func connRefused() error {
	return &url.Error{Op: "Get", URL: apiURL, Err: &net.OpError{
		Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED),
	}}
}

func connReset() error {
	return &url.Error{Op: "Get", URL: apiURL, Err: &net.OpError{
		Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET),
	}}
}

func eof() error { return &url.Error{Op: "Get", URL: apiURL, Err: io.EOF} }

func tooMany() error  { return apierrors.NewTooManyRequests("too many requests", 1) }
func noLeader() error { return apierrors.NewInternalError(errors.New("etcdserver: no leader")) }
func leaderChanged() error {
	return apierrors.NewInternalError(errors.New("etcdserver: leader changed"))
}
func unavailable() error {
	return apierrors.NewServiceUnavailable("the server is currently unable to handle the request")
}
func forbidden() error {
	return apierrors.NewForbidden(podsGR, "", errors.New(`user "u" cannot watch resource "pods"`))
}
func badRequest() error {
	return apierrors.NewBadRequest("sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled")
}
func invalid() error {
	return apierrors.NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}, "", field.ErrorList{
		field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"),
	})
}
