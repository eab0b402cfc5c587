package reflector

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/watch"
)

// Run returns nil at once when its context is cancelled, wherever it is
// blocked, reports no error for the cancellation, stops its watcher and
// leaves no goroutine behind (synctest.Test fails if one is left).
func TestRunReturnsPromptlyOnCancel(t *testing.T) {
	tests := []struct {
		name          string
		opts          opts
		lists, watchs []step
		want          []req    // the requests made before the cancel
		wantOps       []string // the deltas pushed before the cancel
		wantErrs      int      // errors reported before the cancel
	}{
		{
			name:    "during the first LIST",
			opts:    opts{NoWatchList: true},
			lists:   []step{blocks()},
			want:    []req{list("0", DefaultPageSize)},
			wantOps: []string{"start"},
		},
		{
			name:    "during the second page",
			opts:    opts{NoWatchList: true, PageSize: 1},
			lists:   []step{page("10", "c1", pod("a", "5")), blocks()},
			want:    []req{list("0", 1), next("c1", 1)},
			wantOps: []string{"start", "replaced a@5"},
		},
		{
			name:    "during watch start",
			opts:    opts{NoWatchList: true},
			lists:   []step{page("10", "", pod("a", "5"))},
			watchs:  []step{blocks()},
			want:    []req{list("0", DefaultPageSize), watchAt("10")},
			wantOps: []string{"start", "replaced a@5", "end@10"},
		},
		{
			name:    "during watch Next",
			opts:    opts{NoWatchList: true},
			lists:   []step{page("10", "", pod("a", "5"))},
			watchs:  []step{hangs(added("b", "11"))},
			want:    []req{list("0", DefaultPageSize), watchAt("10")},
			wantOps: []string{"start", "replaced a@5", "end@10", "add b@11"},
		},
		{
			name:    "during the initial events of a streaming list",
			watchs:  []step{hangs(added("a", "5"))},
			want:    []req{streamAt("")},
			wantOps: []string{"start", "replaced a@5"},
		},
		{
			name:    "during watch Next after a streaming list",
			watchs:  []step{hangs(added("a", "5"), endBookmark("10"), added("b", "11"))},
			want:    []req{streamAt("")},
			wantOps: []string{"start", "replaced a@5", "end@10", "add b@11"},
		},
		{
			name:     "during the backoff after a failed LIST",
			opts:     opts{NoWatchList: true},
			lists:    []step{fail(listErr(unavailable()))},
			want:     []req{list("0", DefaultPageSize)},
			wantOps:  []string{"start"},
			wantErrs: 1,
		},
		{
			name:     "during the backoff after a refused watch start",
			opts:     opts{NoWatchList: true},
			lists:    []step{page("10", "", pod("a", "5"))},
			watchs:   []step{fail(startErr(connRefused()))},
			want:     []req{list("0", DefaultPageSize), watchAt("10")},
			wantOps:  []string{"start", "replaced a@5", "end@10"},
			wantErrs: 1,
		},
		{
			name:     "during the backoff after a malformed event",
			opts:     opts{NoWatchList: true},
			lists:    []step{page("10", "", pod("a", "5"))},
			watchs:   []step{closes(podEvent{Type: watch.Error})},
			want:     []req{list("0", DefaultPageSize), watchAt("10")},
			wantOps:  []string{"start", "replaced a@5", "end@10"},
			wantErrs: 1,
		},
		{
			name:    "during the backoff after a watch that closed at once",
			opts:    opts{NoWatchList: true},
			lists:   []step{page("10", "", pod("a", "5"))},
			watchs:  []step{closes()},
			want:    []req{list("0", DefaultPageSize), watchAt("10")},
			wantOps: []string{"start", "replaced a@5", "end@10"},
		},
		{
			name:    "during the backoff after a 410",
			opts:    opts{NoWatchList: true},
			lists:   []step{page("10", "", pod("a", "5"))},
			watchs:  []step{breaks(nextErr(expired()))},
			want:    []req{list("0", DefaultPageSize), watchAt("10")},
			wantOps: []string{"start", "replaced a@5", "end@10"},
		},
		{
			name:     "during the backoff after a stream without end bookmark",
			watchs:   []step{closes(added("a", "5"))},
			want:     []req{streamAt("")},
			wantOps:  []string{"start", "replaced a@5"},
			wantErrs: 1,
		},
		{
			name:     "during the backoff after a too-large quorum stream",
			watchs:   []step{fail(startErr(tooLargeCause()))},
			want:     []req{streamAt("")},
			wantErrs: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, tt.opts)
				h.src.lists, h.src.watches = tt.lists, tt.watchs
				done := make(chan error, 1)
				go func() { done <- h.r.Run(h.ctx) }()
				synctest.Wait() // Run is now blocked at the point under test
				select {
				case err := <-done:
					t.Fatalf("Run returned %v before the cancel", err)
				default:
				}
				if diff := cmp.Diff(tt.want, h.src.reqs()); diff != "" {
					t.Errorf("requests before the cancel (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.wantOps, h.sink.recorded()); diff != "" {
					t.Errorf("deltas before the cancel (-want +got):\n%s", diff)
				}
				if got := len(h.reported()); got != tt.wantErrs {
					t.Errorf("%d errors reported before the cancel, want %d", got, tt.wantErrs)
				}

				start := time.Now()
				h.cancel()
				synctest.Wait() // no virtual time passes in Wait
				select {
				case err := <-done:
					if err != nil {
						t.Errorf("Run = %v, want nil", err)
					}
				default:
					t.Fatalf("Run still running after the cancel")
				}
				if d := time.Since(start); d != 0 {
					t.Errorf("Run took %v of virtual time to return", d)
				}
				if diff := cmp.Diff(tt.want, h.src.reqs()); diff != "" {
					t.Errorf("requests after the cancel (-want +got):\n%s", diff)
				}
				h.finish()
				if got := h.reported(); len(got) != tt.wantErrs {
					t.Errorf("errors reported %v, want %d: the cancel must not be reported", got, tt.wantErrs)
				}
			})
		})
	}
}

// Run with a context that is already done makes no request.
func TestRunCancelledBeforeStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, opts{})
		h.cancel()
		if err := h.r.Run(h.ctx); err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
		if got := h.src.reqs(); len(got) != 0 {
			t.Errorf("requests %v, want none", got)
		}
	})
}

// A closed sink (the consumer is gone) ends each attempt quietly: nothing
// is reported, nothing is watched without a list, and attempts are spaced
// by the backoff until Run is cancelled.
func TestClosedSink(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts opts
		want req // the one request of each attempt; zero: none
	}{
		// The LIST path pushes its ReplaceStart before asking: no request.
		{"LIST", opts{NoWatchList: true}, req{}},
		// The streaming path opens the stream, then finds the sink closed.
		{"streaming list", opts{}, streamAt("")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, tt.opts)
				h.sink.close()
				h.src.alwaysList = &step{err: listErr(unavailable())}
				h.src.alwaysWatch = &step{w: &wspec{events: []podEvent{added("a", "5"), endBookmark("10")}, end: errHang}}
				h.runFor(time.Minute)
				calls := h.src.recorded()
				if tt.want == (req{}) && len(calls) != 0 {
					t.Errorf("requests %v, want none", h.src.reqs())
				}
				for i, c := range calls {
					if c.req != tt.want {
						t.Errorf("request %d %v, want only %v", i, c.req, tt.want)
					}
					if i > 0 {
						h.checkGaps([]int{i}, nil)
					}
				}
				if tt.want != (req{}) && len(calls) < 2 {
					t.Errorf("%d attempts in a minute, want several, spaced by the backoff", len(calls))
				}
				if errs := h.reported(); len(errs) != 0 {
					t.Errorf("errors reported %v, want none", errs)
				}
			})
		})
	}
}
