package reflector

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
	"github.com/typedinformer/informer/source"
)

// watchCase is a run of the LIST+watch path after one initial LIST at RV 10.
type watchCase struct {
	name     string
	opts     Options
	lists    []step // nil: NoWatchList and one page at RV 10; empty: streaming
	watchs   []step
	want     []req
	wantOps  []string // nil: not checked
	wantErrs []func(error) bool
	// afterBackoff: want[i] comes at least DefaultBackoffInit after
	// want[i-1]; immediate: right after it.
	afterBackoff, immediate []int
	wantBookmarks           int
}

func (tt watchCase) run(t *testing.T) *harness {
	t.Helper()
	opts := tt.opts
	if tt.lists == nil {
		opts.NoWatchList = true
		tt.lists = []step{page("10", "", pod("a", "5"))}
	}
	h := newHarness(t, opts, fifo.Options[*corev1.Pod]{})
	h.src.lists, h.src.watches = tt.lists, tt.watchs
	h.run()
	if diff := cmp.Diff(tt.want, h.src.reqs()); diff != "" {
		t.Fatalf("requests (-want +got):\n%s", diff)
	}
	if tt.wantOps != nil {
		if diff := cmp.Diff(tt.wantOps, h.q.recorded()); diff != "" {
			t.Errorf("queue writes (-want +got):\n%s", diff)
		}
	}
	errs := h.reported()
	if len(errs) != len(tt.wantErrs) {
		t.Errorf("OnError got %d errors %v, want %d", len(errs), errs, len(tt.wantErrs))
	} else {
		for i, err := range errs {
			if !tt.wantErrs[i](err) {
				t.Errorf("error %d reported: %v (%T), not the expected kind", i, err, err)
			}
		}
	}
	if got := h.r.Stats().Errors; got != len(errs) {
		t.Errorf("Stats().Errors = %d, want %d (one per reported error)", got, len(errs))
	}
	calls := h.src.recorded()
	for _, i := range tt.afterBackoff {
		if g := gap(calls, i-1, i); g < DefaultBackoffInit {
			t.Errorf("%v came %v after %v, want at least %v of backoff", calls[i].req, g, calls[i-1].req, DefaultBackoffInit)
		}
	}
	for _, i := range tt.immediate {
		if g := gap(calls, i-1, i); g != 0 {
			t.Errorf("%v came %v after %v, want it at once", calls[i].req, g, calls[i-1].req)
		}
	}
	if got := h.r.Stats().Bookmarks; got != tt.wantBookmarks {
		t.Errorf("Stats().Bookmarks = %d, want %d", got, tt.wantBookmarks)
	}
	return h
}

// noRelist checks that the run listed once (the initial list) or streamed
// once.
func noRelist(t *testing.T, h *harness) {
	t.Helper()
	st := h.r.Stats()
	if st.Lists+st.WatchLists != 1 || st.Relists != 0 {
		t.Errorf("Stats() = %+v, want exactly one initial list and no relist", st)
	}
}

// Fault 6: on a quiet type only bookmarks arrive; when the watch then ends
// normally, the re-watch starts from the last bookmark's RV, without a
// relist.
func TestBookmarksOnlyRewatchFromBookmarkRV(t *testing.T) {
	every := func(d time.Duration, evs ...podEvent) step {
		return step{w: &wspec{events: evs, gap: d}}
	}
	tests := []watchCase{
		{
			name:          "bookmarks, then the watch closes",
			watchs:        []step{closes(bookmark("11"), bookmark("12"), bookmark("13")), hangs().final()},
			want:          []req{list("0", DefaultPageSize), watchAt("10"), watchAt("13")},
			wantOps:       []string{"replace@10 [a@5]"},
			immediate:     []int{2},
			wantBookmarks: 3,
		},
		{
			name:          "a bookmark a minute, then the watch times out",
			watchs:        []step{every(time.Minute, bookmark("11"), bookmark("12"), bookmark("13"), bookmark("14")), hangs().final()},
			want:          []req{list("0", DefaultPageSize), watchAt("10"), watchAt("14")},
			wantOps:       []string{"replace@10 [a@5]"},
			wantBookmarks: 4,
		},
		{
			name: "after a streaming list",
			watchs: []step{
				closes(added("a", "5"), endBookmark("10"), bookmark("11"), bookmark("12")),
				hangs().final(),
			},
			lists:         []step{},
			want:          []req{streamAt(""), watchAt("12")},
			wantOps:       []string{"replace@10 [a@5]"},
			immediate:     []int{1},
			wantBookmarks: 2,
		},
		{
			name: "the watch closes at once with nothing: back off, no relist",
			watchs: []step{
				closes(), closes(), hangs().final(),
			},
			want:         []req{list("0", DefaultPageSize), watchAt("10"), watchAt("10"), watchAt("10")},
			wantOps:      []string{"replace@10 [a@5]"},
			afterBackoff: []int{2, 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := tt.run(t)
				noRelist(t, h)
			})
		})
	}
}

// Fault 9: transport errors on the watch are retried after a backoff from
// the last synced RV, without a relist, and reported.
func TestTransportErrorsRewatchWithoutRelist(t *testing.T) {
	isConnRefused := utilnet.IsConnectionRefused
	is429 := apierrors.IsTooManyRequests
	is500 := apierrors.IsInternalError
	tests := []watchCase{
		{
			name: "connection refused on watch start x3",
			watchs: []step{
				fail(startErr(connRefused())), fail(startErr(connRefused())), fail(startErr(connRefused())),
				hangs().final(),
			},
			want:         []req{list("0", DefaultPageSize), watchAt("10"), watchAt("10"), watchAt("10"), watchAt("10")},
			wantErrs:     []func(error) bool{isConnRefused, isConnRefused, isConnRefused},
			afterBackoff: []int{2, 3, 4},
		},
		{
			name: "connection refused after events: from the last event's RV",
			watchs: []step{
				closes(added("b", "11"), modified("b", "12")),
				fail(startErr(connRefused())), fail(startErr(connRefused())),
				hangs().final(),
			},
			want:         []req{list("0", DefaultPageSize), watchAt("10"), watchAt("12"), watchAt("12"), watchAt("12")},
			wantOps:      []string{"replace@10 [a@5]", "add b@11", "update b@12"},
			wantErrs:     []func(error) bool{isConnRefused, isConnRefused},
			afterBackoff: []int{3, 4},
		},
		{
			name:         "429 on watch start x2",
			watchs:       []step{fail(startErr(tooMany())), fail(startErr(tooMany())), hangs().final()},
			want:         []req{list("0", DefaultPageSize), watchAt("10"), watchAt("10"), watchAt("10")},
			wantErrs:     []func(error) bool{is429, is429},
			afterBackoff: []int{2, 3},
		},
		{
			name:         "429 as a watch ERROR event",
			watchs:       []step{closes(added("b", "11"), errorEvent(tooMany())), hangs().final()},
			want:         []req{list("0", DefaultPageSize), watchAt("10"), watchAt("11")},
			wantOps:      []string{"replace@10 [a@5]", "add b@11"},
			wantErrs:     []func(error) bool{is429},
			afterBackoff: []int{2},
		},
		{
			name:         `500 "etcdserver: no leader" as a watch ERROR event`,
			watchs:       []step{closes(added("b", "11"), errorEvent(noLeader())), hangs().final()},
			want:         []req{list("0", DefaultPageSize), watchAt("10"), watchAt("11")},
			wantOps:      []string{"replace@10 [a@5]", "add b@11"},
			wantErrs:     []func(error) bool{is500},
			afterBackoff: []int{2},
		},
		{
			name:         "500 returned by Next",
			watchs:       []step{breaks(nextErr(noLeader()), added("b", "11")), hangs().final()},
			want:         []req{list("0", DefaultPageSize), watchAt("10"), watchAt("11")},
			wantOps:      []string{"replace@10 [a@5]", "add b@11"},
			wantErrs:     []func(error) bool{is500},
			afterBackoff: []int{2},
		},
		{
			name: "500 twice in a row after a streaming list",
			watchs: []step{
				closes(added("a", "5"), endBookmark("10"), added("b", "11"), errorEvent(noLeader())),
				closes(errorEvent(noLeader())),
				hangs().final(),
			},
			lists:        []step{},
			want:         []req{streamAt(""), watchAt("11"), watchAt("11")},
			wantOps:      []string{"replace@10 [a@5]", "add b@11"},
			wantErrs:     []func(error) bool{is500, is500},
			afterBackoff: []int{1, 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := tt.run(t)
				noRelist(t, h)
			})
		})
	}
}

// Fault 9 and invariant I8: a LIST failing with 503 for five (virtual)
// minutes is reported every time and retried with the exponential backoff
// (800ms doubling to 30s, jitter up to +100%, reset every 2 minutes), never
// in a tight loop.
func TestListFailureBackoffIsBounded(t *testing.T) {
	// With no jitter at all (the shortest delays), the attempts in 5
	// minutes are at 0, 0.8, 2.4, 5.6, 12, 24.8, 50.4, 80.4, 110.4 s, then
	// the backoff resets (2 minutes since the last reset) at 140.4 s and
	// again at 280.8 s: 23 attempts at most.
	const maxAttempts = 23
	for _, tt := range []struct {
		name string
		opts Options
	}{
		{"LIST only", Options{NoWatchList: true}},
		{"streaming list failing too", Options{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, tt.opts, fifo.Options[*corev1.Pod]{})
				h.src.alwaysList = &step{err: listErr(unavailable())}
				h.src.alwaysWatch = &step{err: startErr(unavailable())}
				h.runFor(5 * time.Minute)
				var lists []call
				for _, c := range h.src.recorded() {
					if c.Op == "list" {
						lists = append(lists, c)
						if c.RV != "0" || c.Limit != DefaultPageSize {
							t.Errorf("request %v, want every attempt to be a first LIST", c.req)
						}
					}
				}
				if n := len(lists); n > maxAttempts || n < 5 {
					t.Errorf("%d LISTs in 5 minutes, want between 5 and %d", n, maxAttempts)
				}
				for i := 1; i < len(lists); i++ {
					if g := lists[i].at - lists[i-1].at; g < DefaultBackoffInit {
						t.Errorf("LIST %d came %v after the one before, want at least %v", i, g, DefaultBackoffInit)
					}
				}
				errs := h.reported()
				wantErrs := len(lists)
				if !tt.opts.NoWatchList {
					wantErrs *= 2 // the failed streaming list is reported too
				}
				if len(errs) != wantErrs {
					t.Errorf("%d errors reported for %d failed LISTs, want %d", len(errs), len(lists), wantErrs)
				}
				for _, err := range errs {
					if !apierrors.IsServiceUnavailable(err) {
						t.Errorf("reported %v, want the 503", err)
					}
				}
				if got := h.q.recorded(); len(got) != 0 {
					t.Errorf("queue writes %v, want none", got)
				}
			})
		})
	}
}

// asErr is the error source.As gives for obj.
func asErr(obj runtime.Object) error {
	_, err := source.As[*corev1.Pod](obj)
	if err == nil {
		panic(fmt.Sprintf("source.As accepted %T", obj))
	}
	return err
}

// Fault 12: malformed frames never panic; they are reported and counted, and
// the watch restarts from the last good RV without a relist.
func TestMalformedFramesRewatchFromLastGoodRV(t *testing.T) {
	isMal := func(err error) bool { return isMalformed(err) }
	isWrongType := func(err error) bool { return errors.Is(err, source.ErrWrongType) }
	isNil := func(err error) bool { return errors.Is(err, cache.ErrNilObject) }
	bad := []struct {
		name string
		w    step
		want func(error) bool
	}{
		{"unknown event type", closes(added("b", "11"), podEvent{Type: "WEIRD", Object: pod("c", "12")}), isMal},
		{"ERROR event with a nil error", closes(added("b", "11"), podEvent{Type: watch.Error}), isMal},
		{"ERROR event with a wrong-type error from source.As", closes(added("b", "11"), errorEvent(asErr(&corev1.Service{}))), isWrongType},
		{"ERROR event with a nil-object error from source.As", closes(added("b", "11"), errorEvent(asErr(nil))), isNil},
		{"Next returns a wrong-type error", breaks(nextErr(asErr(&corev1.ConfigMap{})), added("b", "11")), isWrongType},
		{"Next returns an unknown-event-type error", breaks(nextErr(fmt.Errorf("%w: unknown watch event type %q", source.ErrMalformed, "WEIRD")), added("b", "11")), isMal},
		{"ERROR event carrying a non-Status object", closes(added("b", "11"), errorEvent(fmt.Errorf("%w: error event carrying %T", source.ErrMalformed, &metav1.List{}))), isMal},
		{"ADDED without an object", closes(added("b", "11"), podEvent{Type: watch.Added}), isNil},
		{"MODIFIED with a typed nil", closes(added("b", "11"), podEvent{Type: watch.Modified, Object: (*corev1.Pod)(nil)}), isNil},
		{"DELETED without an object", closes(added("b", "11"), podEvent{Type: watch.Deleted}), isNil},
		{"BOOKMARK without an object", closes(added("b", "11"), podEvent{Type: watch.Bookmark}), isNil},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tt := watchCase{
					watchs:       []step{b.w, hangs(added("c", "12")).final()},
					want:         []req{list("0", DefaultPageSize), watchAt("10"), watchAt("11")},
					wantOps:      []string{"replace@10 [a@5]", "add b@11", "add c@12"},
					wantErrs:     []func(error) bool{b.want},
					afterBackoff: []int{2},
				}
				h := tt.run(t)
				noRelist(t, h)
				if got := h.r.LastSyncResourceVersion(); got != "12" {
					t.Errorf("LastSyncResourceVersion = %q, want 12", got)
				}
			})
		})
	}
}

// Watch requests ask for bookmarks and carry a randomised timeout within
// [MinWatchTimeout, 2*MinWatchTimeout]; streaming requests also ask for the
// initial events, "not older than" their RV.
func TestWatchRequestOptions(t *testing.T) {
	for _, min := range []time.Duration{0, time.Minute, 90 * time.Second} {
		t.Run(fmt.Sprint(min), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 40
				watchs := []step{closes(added("a", "5"), endBookmark("10"), bookmark("11"))}
				want := []req{streamAt("")}
				for i := range n {
					rv := fmt.Sprint(11 + i)
					want = append(want, watchAt(rv))
					watchs = append(watchs, closes(bookmark(fmt.Sprint(12+i))))
				}
				watchs[len(watchs)-1] = hangs().final()
				h := newHarness(t, Options{MinWatchTimeout: min}, fifo.Options[*corev1.Pod]{})
				h.src.watches = watchs
				h.run()
				if diff := cmp.Diff(want, h.src.reqs()); diff != "" {
					t.Fatalf("requests (-want +got):\n%s", diff)
				}
				lo := int64(min.Seconds())
				if min == 0 {
					lo = int64(DefaultMinWatchTimeout.Seconds())
				}
				seen := map[int64]bool{}
				for _, c := range h.src.recorded() {
					o := c.opts
					if !o.AllowWatchBookmarks {
						t.Errorf("%v without AllowWatchBookmarks", c.req)
					}
					if o.TimeoutSeconds == nil {
						t.Errorf("%v without TimeoutSeconds", c.req)
						continue
					}
					if s := *o.TimeoutSeconds; s < lo || s > 2*lo {
						t.Errorf("%v: TimeoutSeconds = %d, want within [%d, %d]", c.req, s, lo, 2*lo)
					}
					seen[*o.TimeoutSeconds] = true
					stream := c.Op == "stream"
					if got := o.SendInitialEvents != nil && *o.SendInitialEvents; got != stream {
						t.Errorf("%v: SendInitialEvents = %v", c.req, got)
					}
					wantMatch := metav1.ResourceVersionMatch("")
					if stream {
						wantMatch = metav1.ResourceVersionMatchNotOlderThan
					}
					if o.ResourceVersionMatch != wantMatch {
						t.Errorf("%v: ResourceVersionMatch = %q, want %q", c.req, o.ResourceVersionMatch, wantMatch)
					}
					if o.Limit != 0 || o.Continue != "" || o.Watch || o.LabelSelector != "" || o.FieldSelector != "" {
						t.Errorf("%v: unexpected options %+v", c.req, o)
					}
				}
				if len(seen) < 2 {
					t.Errorf("all %d watch timeouts are %v: not randomised", n+1, seen)
				}
			})
		})
	}
}
