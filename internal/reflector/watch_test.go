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

	"github.com/typedinformer/informer/source"
)

// watchCase is a run of the LIST+watch path after one initial LIST at RV 10.
// every is a watcher that sends evs one every d, then closes; with no
// events it closes after d.
func every(d time.Duration, evs ...podEvent) step {
	return step{w: &wspec{events: evs, gap: d}}
}

type watchCase struct {
	name     string
	opts     opts
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
	o := tt.opts
	if tt.lists == nil {
		o.NoWatchList = true
		tt.lists = []step{page("10", "", pod("a", "5"))}
	}
	h := newHarness(t, o)
	h.src.lists, h.src.watches = tt.lists, tt.watchs
	h.run()
	if diff := cmp.Diff(tt.want, h.src.reqs()); diff != "" {
		t.Fatalf("requests (-want +got):\n%s", diff)
	}
	if tt.wantOps != nil {
		if diff := cmp.Diff(tt.wantOps, h.sink.recorded()); diff != "" {
			t.Errorf("deltas (-want +got):\n%s", diff)
		}
	}
	checkErrs(t, h.reported(), tt.wantErrs)
	h.checkGaps(tt.afterBackoff, tt.immediate)
	if got := h.r.Status().Stats.Bookmarks; got != tt.wantBookmarks {
		t.Errorf("Stats.Bookmarks = %d, want %d", got, tt.wantBookmarks)
	}
	return h
}

// checkErrs checks the errors delivered, one predicate each, in order.
func checkErrs(t *testing.T, errs []error, want []func(error) bool) {
	t.Helper()
	if len(errs) != len(want) {
		t.Errorf("Errors delivered %d errors %v, want %d", len(errs), errs, len(want))
		return
	}
	for i, err := range errs {
		if !want[i](err) {
			t.Errorf("error %d delivered: %v (%T), not the expected kind", i, err, err)
		}
	}
}

// noRelist checks that the run listed once (the initial list) or streamed
// once.
func noRelist(t *testing.T, h *harness) {
	t.Helper()
	st := h.r.Status().Stats
	if st.Lists+st.WatchLists != 1 || st.Relists != 0 {
		t.Errorf("Stats = %+v, want exactly one initial list and no relist", st)
	}
}

// Fault 6: on a quiet type only bookmarks arrive; when the watch then ends
// normally, the re-watch starts from the last bookmark's RV, without a
// relist: at once if the watch lasted a second or more, or if it is the
// first in a row to end sooner and it delivered something; after a backoff
// otherwise (see TestShortWatchBacksOff).
func TestBookmarksOnlyRewatchFromBookmarkRV(t *testing.T) {
	tests := []watchCase{
		{
			// The first short watch that delivered something is reopened at
			// once; the second in a row only after a backoff.
			name: "bookmarks, then the watch closes at once, twice",
			watchs: []step{
				closes(bookmark("11"), bookmark("12"), bookmark("13")),
				closes(bookmark("14")),
				hangs().final(),
			},
			want:          []req{list("0", DefaultPageSize), watchAt("10"), watchAt("13"), watchAt("14")},
			wantOps:       []string{"start", "replaced a@5", "end@10", "bookmark@11", "bookmark@12", "bookmark@13", "bookmark@14"},
			immediate:     []int{2},
			afterBackoff:  []int{3},
			wantBookmarks: 4,
		},
		{
			name:          "a bookmark a minute, then the watch times out",
			watchs:        []step{every(time.Minute, bookmark("11"), bookmark("12"), bookmark("13"), bookmark("14")), hangs().final()},
			want:          []req{list("0", DefaultPageSize), watchAt("10"), watchAt("14")},
			wantOps:       []string{"start", "replaced a@5", "end@10", "bookmark@11", "bookmark@12", "bookmark@13", "bookmark@14"},
			immediate:     []int{2},
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
			wantOps:       []string{"start", "replaced a@5", "end@10", "bookmark@11", "bookmark@12"},
			immediate:     []int{1}, // the first short watch in a row, and it delivered
			wantBookmarks: 2,
		},
		{
			name:         "the watch closes at once with nothing: back off, no relist",
			watchs:       []step{closes(), closes(), hangs().final()},
			want:         []req{list("0", DefaultPageSize), watchAt("10"), watchAt("10"), watchAt("10")},
			wantOps:      []string{"start", "replaced a@5", "end@10"},
			afterBackoff: []int{2, 3},
		},
		{
			name:      "the watch lasts two seconds with nothing: re-watch at once",
			watchs:    []step{every(2 * time.Second), hangs().final()},
			want:      []req{list("0", DefaultPageSize), watchAt("10"), watchAt("10")},
			wantOps:   []string{"start", "replaced a@5", "end@10"},
			immediate: []int{2},
		},
		{
			name:          "a bookmark without a resourceVersion is counted, not pushed",
			watchs:        []step{every(2*time.Second, bookmark("")), hangs().final()},
			want:          []req{list("0", DefaultPageSize), watchAt("10"), watchAt("10")},
			wantOps:       []string{"start", "replaced a@5", "end@10"},
			immediate:     []int{2},
			wantBookmarks: 1,
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
			wantOps:      []string{"start", "replaced a@5", "end@10", "add b@11", "update b@12"},
			wantErrs:     []func(error) bool{isConnRefused, isConnRefused},
			immediate:    []int{2}, // the short watch delivered: re-watch at once
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
			name:         "429 returned by Next",
			watchs:       []step{breaks(nextErr(tooMany()), added("b", "11")), hangs().final()},
			want:         []req{list("0", DefaultPageSize), watchAt("10"), watchAt("11")},
			wantOps:      []string{"start", "replaced a@5", "end@10", "add b@11"},
			wantErrs:     []func(error) bool{is429},
			afterBackoff: []int{2},
		},
		{
			name:         `500 "etcdserver: no leader" returned by Next`,
			watchs:       []step{breaks(nextErr(noLeader()), added("b", "11")), hangs().final()},
			want:         []req{list("0", DefaultPageSize), watchAt("10"), watchAt("11")},
			wantOps:      []string{"start", "replaced a@5", "end@10", "add b@11"},
			wantErrs:     []func(error) bool{is500},
			afterBackoff: []int{2},
		},
		{
			name: "500 twice in a row after a streaming list",
			watchs: []step{
				breaks(nextErr(noLeader()), added("a", "5"), endBookmark("10"), added("b", "11")),
				breaks(nextErr(noLeader())),
				hangs().final(),
			},
			lists:        []step{},
			want:         []req{streamAt(""), watchAt("11"), watchAt("11")},
			wantOps:      []string{"start", "replaced a@5", "end@10", "add b@11"},
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

// Fault 9 and invariant I8: a list failing with 503 for five (virtual)
// minutes is reported every time and retried with the exponential backoff
// (800ms doubling to 30s, jitter up to +100%, reset every 2 minutes), never
// in a tight loop. A streaming list that fails for a transient reason is
// retried as a streaming list (the old reflector fell back to a LIST each
// time; the redesign retries the stream, doc.go).
func TestListFailureBackoffIsBounded(t *testing.T) {
	// With no jitter at all (the shortest delays), the attempts in 5
	// minutes are at 0, 0.8, 2.4, 5.6, 12, 24.8, 50.4, 80.4, 110.4 s, then
	// the backoff resets (2 minutes since the last reset) at 140.4 s and
	// again at 280.8 s: 23 attempts at most.
	const maxAttempts = 23
	for _, tt := range []struct {
		name string
		opts opts
		want req
	}{
		{"LIST only", opts{NoWatchList: true}, list("0", DefaultPageSize)},
		{"streaming list", opts{}, streamAt("")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, tt.opts)
				h.src.alwaysList = &step{err: listErr(unavailable())}
				h.src.alwaysWatch = &step{err: startErr(unavailable())}
				h.runFor(5 * time.Minute)
				calls := h.src.recorded()
				for _, c := range calls {
					if c.req != tt.want {
						t.Errorf("request %v, want every attempt to be %v", c.req, tt.want)
					}
				}
				if n := len(calls); n > maxAttempts || n < 5 {
					t.Errorf("%d attempts in 5 minutes, want between 5 and %d", n, maxAttempts)
				}
				for i := 1; i < len(calls); i++ {
					h.checkGaps([]int{i}, nil)
				}
				errs := h.reported()
				if len(errs) != len(calls) {
					t.Errorf("%d errors reported for %d failed attempts, want one each", len(errs), len(calls))
				}
				for _, err := range errs {
					if !apierrors.IsServiceUnavailable(err) {
						t.Errorf("reported %v, want the 503", err)
					}
				}
				// Each failed LIST opened a list (its ReplaceStart comes before
				// the request); none was ever closed.
				for _, op := range h.sink.recorded() {
					if op != "start" || tt.want.Op == "stream" {
						t.Errorf("delta %q, want only the ReplaceStart of each failed LIST", op)
					}
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
// the watch restarts from the last good RV without a relist. A source
// reports bad frames from Next; an event that breaks the Event contract
// (ERROR passed as an event, a missing object) is caught by the reflector.
func TestMalformedFramesRewatchFromLastGoodRV(t *testing.T) {
	isMal := func(err error) bool { return errors.Is(err, source.ErrMalformed) }
	isWrongType := func(err error) bool { return errors.Is(err, source.ErrWrongType) }
	isNil := func(err error) bool { return errors.Is(err, source.ErrNilObject) }
	bad := []struct {
		name string
		w    step
		want func(error) bool
	}{
		{"unknown event type", closes(added("b", "11"), podEvent{Type: "WEIRD", Object: pod("c", "12")}), isMal},
		{"ERROR passed as an event, without an object", closes(added("b", "11"), podEvent{Type: watch.Error}), isMal},
		{"ERROR passed as an event, with an object", closes(added("b", "11"), podEvent{Type: watch.Error, Object: pod("c", "12")}), isMal},
		{"Next returns a wrong-type error", breaks(nextErr(asErr(&corev1.ConfigMap{})), added("b", "11")), isWrongType},
		{"Next returns a nil-object error", breaks(nextErr(asErr(nil)), added("b", "11")), isNil},
		{"Next returns an unknown-event-type error", breaks(nextErr(fmt.Errorf("%w: unknown watch event type %q", source.ErrMalformed, "WEIRD")), added("b", "11")), isMal},
		{"Next returns an ERROR-without-status error", breaks(nextErr(fmt.Errorf("%w: error event carrying %T", source.ErrMalformed, &metav1.List{})), added("b", "11")), isMal},
		{"ADDED without an object", closes(added("b", "11"), podEvent{Type: watch.Added}), isMal},
		{"MODIFIED with a typed nil", closes(added("b", "11"), podEvent{Type: watch.Modified, Object: (*corev1.Pod)(nil)}), isMal},
		{"DELETED without an object", closes(added("b", "11"), podEvent{Type: watch.Deleted}), isMal},
		{"BOOKMARK without an object", closes(added("b", "11"), podEvent{Type: watch.Bookmark}), isMal},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tt := watchCase{
					watchs:       []step{b.w, hangs(added("c", "12")).final()},
					want:         []req{list("0", DefaultPageSize), watchAt("10"), watchAt("11")},
					wantOps:      []string{"start", "replaced a@5", "end@10", "add b@11", "add c@12"},
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
				h := newHarness(t, opts{MinWatchTimeout: min})
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

// A bad object that the server replays to every watch from the same
// version (a custom resource that does not decode into T) cannot be
// watched past: the first bad frame is retried from the same version, the
// same failure again at that version leads to a relist after a backoff,
// which gets past it once the object is fixed or gone.
func TestReplayedBadObjectRelists(t *testing.T) {
	isWrongType := func(err error) bool { return errors.Is(err, source.ErrWrongType) }
	bad := nextErr(fmt.Errorf("%w: want *v1.Pod, got example.com/v1, Kind=Widget", source.ErrWrongType))
	synctest.Test(t, func(t *testing.T) {
		tt := watchCase{
			opts:     opts{NoWatchList: true},
			lists:    []step{page("10", "", pod("a", "5")), page("20", "", pod("a", "5"), pod("b", "11"))},
			watchs:   []step{breaks(bad, added("b", "11")), breaks(bad), hangs().final()},
			want:     []req{list("0", DefaultPageSize), watchAt("10"), watchAt("11"), list("11", 0), watchAt("20")},
			wantErrs: []func(error) bool{isWrongType, isWrongType},
			// Both the re-watch and the relist come after a backoff.
			afterBackoff: []int{2, 3},
		}
		h := tt.run(t)
		if st := h.r.Status().Stats; st.Relists != 1 {
			t.Errorf("Stats = %+v, want one relist", st)
		}
		if got := h.r.LastSyncResourceVersion(); got != "20" {
			t.Errorf("LastSyncResourceVersion = %q, want 20", got)
		}
	})
}
