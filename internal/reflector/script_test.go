package reflector

// The scripted source and the harness the reflector tests share. Every test
// runs inside a synctest bubble: backoff sleeps take no real time, and the
// virtual clock makes "no backoff between these two calls" an exact check.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/fifo"
	"github.com/typedinformer/informer/source"
)

type podEvent = source.Event[*corev1.Pod]

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

// call is one recorded request: its projection, the full options, and the
// virtual time since the source was made.
type call struct {
	req
	opts metav1.ListOptions
	at   time.Duration
}

// step is the answer to one request.
type step struct {
	page  *source.List[*corev1.Pod] // a LIST page
	err   error                     // the request fails
	w     *wspec                    // a Watch returns this watcher
	block bool                      // the request blocks until ctx ends
	last  bool                      // the run's last expected request: cancel the run once it is served
}

// wspec scripts a watcher: its events (or a channel of them), optionally one
// every gap of virtual time, then how it ends.
type wspec struct {
	events []podEvent
	ch     <-chan podEvent // after events; closing it closes the watch
	gap    time.Duration
	end    error // nil: ErrWatchClosed; errHang: block until ctx ends or Stop
}

var errHang = errors.New("hang")

func page(rv, cont string, items ...*corev1.Pod) step {
	return step{page: &source.List[*corev1.Pod]{Items: items, ResourceVersion: rv, Continue: cont}}
}
func fail(err error) step                    { return step{err: err} }
func hangs(evs ...podEvent) step             { return step{w: &wspec{events: evs, end: errHang}} }
func closes(evs ...podEvent) step            { return step{w: &wspec{events: evs}} }
func breaks(err error, evs ...podEvent) step { return step{w: &wspec{events: evs, end: err}} }
func blocks() step                           { return step{block: true} }
func (s step) final() step                   { s.last = true; return s }

// scriptSource is a source.Source that answers from per-operation scripts
// and records every request.
type scriptSource struct {
	t      *testing.T
	start  time.Time
	cancel context.CancelFunc

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
	s.mu.Lock()
	defer s.mu.Unlock()
	r := req{Op: op, RV: opts.ResourceVersion, Limit: opts.Limit, Continue: opts.Continue}
	if op == "watch" && opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		r.Op = "stream"
	}
	s.calls = append(s.calls, call{req: r, opts: opts, at: time.Since(s.start)})
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
	s.watchers = append(s.watchers, w)
	s.mu.Unlock()
	return w, nil
}

func (s *scriptSource) reqs() []req {
	s.mu.Lock()
	defer s.mu.Unlock()
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

	mu      sync.Mutex
	i       int
	stopped chan struct{}
	once    sync.Once
}

func (w *scriptWatcher) Stop() { w.once.Do(func() { close(w.stopped) }) }

func (w *scriptWatcher) Next(ctx context.Context) (podEvent, error) {
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
	if w.spec.ch != nil {
		select {
		case <-ctx.Done():
			return podEvent{}, ctx.Err()
		case <-w.stopped:
			return podEvent{}, source.ErrWatchClosed
		case ev, ok := <-w.spec.ch:
			if !ok {
				return podEvent{}, source.ErrWatchClosed
			}
			return ev, nil
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

// recQueue is a fifo.Queue (InOrder) that records every write, including the
// failed ones (prefixed with "!").
type recQueue struct {
	q *fifo.Queue[*corev1.Pod]

	mu  sync.Mutex
	ops []string
}

func newRecQueue(opts fifo.Options[*corev1.Pod]) *recQueue {
	return &recQueue{q: fifo.New(opts)}
}

func (r *recQueue) rec(op string, err error) {
	if err != nil {
		op = "! " + op
	}
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

func (r *recQueue) Add(obj *corev1.Pod) error {
	err := r.q.Add(obj)
	r.rec("add "+name(obj), err)
	return err
}

func (r *recQueue) Update(obj *corev1.Pod) error {
	err := r.q.Update(obj)
	r.rec("update "+name(obj), err)
	return err
}

func (r *recQueue) Delete(obj *corev1.Pod) error {
	err := r.q.Delete(obj)
	r.rec("delete "+name(obj), err)
	return err
}

func (r *recQueue) Replace(list []*corev1.Pod, rv string) error {
	err := r.q.Replace(list, rv)
	names := make([]string, len(list))
	for i, p := range list {
		names[i] = name(p)
	}
	r.rec(fmt.Sprintf("replace@%s [%s]", rv, strings.Join(names, " ")), err)
	return err
}

func (r *recQueue) recorded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}

func name(p *corev1.Pod) string {
	if p == nil {
		return "<nil>"
	}
	return p.Name + "@" + p.ResourceVersion
}

// harness runs one reflector against a scripted source.
type harness struct {
	t      *testing.T
	src    *scriptSource
	q      *recQueue
	r      *Reflector[*corev1.Pod]
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	errs   []error
	errRVs []string // LastSyncResourceVersion when each error was reported
}

// newHarness must be called inside the synctest bubble.
func newHarness(t *testing.T, opts Options, qopts fifo.Options[*corev1.Pod]) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	h := &harness{t: t, ctx: ctx, cancel: cancel, q: newRecQueue(qopts)}
	h.src = &scriptSource{t: t, start: time.Now(), cancel: cancel}
	opts.OnError = func(err error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.errs = append(h.errs, err)
		h.errRVs = append(h.errRVs, h.r.LastSyncResourceVersion())
	}
	h.r = New[*corev1.Pod](h.src, h.q, opts)
	return h
}

// run runs the reflector until the script cancels it, and checks that Run
// returned nil and stopped every watcher.
func (h *harness) run() {
	h.t.Helper()
	if err := h.r.Run(h.ctx); err != nil {
		h.t.Errorf("Run = %v, want nil", err)
	}
	h.checkStopped()
}

func (h *harness) checkStopped() {
	h.t.Helper()
	if n := h.src.unstopped(); n != 0 {
		h.t.Errorf("%d watchers never stopped", n)
	}
}

func (h *harness) reported() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.errs)
}

// gap is the virtual time between recorded requests i and j.
func gap(calls []call, i, j int) time.Duration { return calls[j].at - calls[i].at }

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

// errorEvent is an ERROR event as source.FromClient delivers it.
func errorEvent(err error) podEvent {
	return podEvent{Type: watch.Error, Err: &source.Error{Phase: source.PhaseWatch, Err: err}}
}

// Errors, wrapped as a Source wraps them.

func listErr(err error) error  { return &source.Error{Phase: source.PhaseList, Err: err} }
func startErr(err error) error { return &source.Error{Phase: source.PhaseWatchStart, Err: err} }

// nextErr is an error Watcher.Next returns instead of an event.
func nextErr(err error) error { return &source.Error{Phase: source.PhaseWatch, Err: err} }

var podsGR = schema.GroupResource{Resource: "pods"}

func expired() error { return apierrors.NewResourceExpired("too old resource version: 5 (10)") }
func gone() error    { return apierrors.NewGone("too old resource version: 5 (10)") }

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

func connRefused() error {
	return &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/api/v1/pods?watch=true", Err: &net.OpError{
		Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED),
	}}
}

func tooMany() error  { return apierrors.NewTooManyRequests("too many requests", 1) }
func noLeader() error { return apierrors.NewInternalError(errors.New("etcdserver: no leader")) }
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
	h.checkStopped()
}
