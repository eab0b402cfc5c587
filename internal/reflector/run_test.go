package reflector

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/fifo"
)

// Run returns nil at once when its context is cancelled, wherever it is
// blocked, reports no error for the cancellation, stops its watcher and
// leaves no goroutine behind (synctest.Test fails if one is left).
func TestRunReturnsPromptlyOnCancel(t *testing.T) {
	tests := []struct {
		name          string
		opts          Options
		lists, watchs []step
		want          []req    // the requests made before the cancel
		wantOps       []string // the queue writes made before the cancel
		wantErrs      int      // errors reported before the cancel
	}{
		{
			name:  "during the first LIST",
			opts:  Options{NoWatchList: true},
			lists: []step{blocks()},
			want:  []req{list("0", DefaultPageSize)},
		},
		{
			name:  "during the second page",
			opts:  Options{NoWatchList: true, PageSize: 1},
			lists: []step{page("10", "c1", pod("a", "5")), blocks()},
			want:  []req{list("0", 1), next("c1", 1)},
		},
		{
			name:    "during watch start",
			opts:    Options{NoWatchList: true},
			lists:   []step{page("10", "", pod("a", "5"))},
			watchs:  []step{blocks()},
			want:    []req{list("0", DefaultPageSize), watchAt("10")},
			wantOps: []string{"replace@10 [a@5]"},
		},
		{
			name:    "during watch Next",
			opts:    Options{NoWatchList: true},
			lists:   []step{page("10", "", pod("a", "5"))},
			watchs:  []step{hangs(added("b", "11"))},
			want:    []req{list("0", DefaultPageSize), watchAt("10")},
			wantOps: []string{"replace@10 [a@5]", "add b@11"},
		},
		{
			name:   "during the initial events of a streaming list",
			watchs: []step{hangs(added("a", "5"))},
			want:   []req{streamAt("")},
		},
		{
			name:    "during watch Next after a streaming list",
			watchs:  []step{hangs(added("a", "5"), endBookmark("10"), added("b", "11"))},
			want:    []req{streamAt("")},
			wantOps: []string{"replace@10 [a@5]", "add b@11"},
		},
		{
			name:     "during the backoff after a failed LIST",
			opts:     Options{NoWatchList: true},
			lists:    []step{fail(listErr(unavailable()))},
			want:     []req{list("0", DefaultPageSize)},
			wantErrs: 1,
		},
		{
			name:     "during the backoff after a refused watch start",
			opts:     Options{NoWatchList: true},
			lists:    []step{page("10", "", pod("a", "5"))},
			watchs:   []step{fail(startErr(connRefused()))},
			want:     []req{list("0", DefaultPageSize), watchAt("10")},
			wantOps:  []string{"replace@10 [a@5]"},
			wantErrs: 1,
		},
		{
			name:     "during the backoff after a malformed event",
			opts:     Options{NoWatchList: true},
			lists:    []step{page("10", "", pod("a", "5"))},
			watchs:   []step{closes(podEvent{Type: watch.Error})},
			want:     []req{list("0", DefaultPageSize), watchAt("10")},
			wantOps:  []string{"replace@10 [a@5]"},
			wantErrs: 1,
		},
		{
			name:    "during the backoff after a watch that closed at once",
			opts:    Options{NoWatchList: true},
			lists:   []step{page("10", "", pod("a", "5"))},
			watchs:  []step{closes()},
			want:    []req{list("0", DefaultPageSize), watchAt("10")},
			wantOps: []string{"replace@10 [a@5]"},
		},
		{
			name:    "during the backoff after a 410",
			opts:    Options{NoWatchList: true},
			lists:   []step{page("10", "", pod("a", "5"))},
			watchs:  []step{closes(errorEvent(expired()))},
			want:    []req{list("0", DefaultPageSize), watchAt("10")},
			wantOps: []string{"replace@10 [a@5]"},
		},
		{
			name:     "during the backoff after a stream without end bookmark",
			watchs:   []step{closes(added("a", "5"))},
			want:     []req{streamAt("")},
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
				h := newHarness(t, tt.opts, fifo.Options[*corev1.Pod]{})
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
				if diff := cmp.Diff(tt.wantOps, h.q.recorded()); diff != "" {
					t.Errorf("queue writes before the cancel (-want +got):\n%s", diff)
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
				if got := h.reported(); len(got) != tt.wantErrs {
					t.Errorf("errors reported %v, want %d: the cancel must not be reported", got, tt.wantErrs)
				}
				h.checkStopped()
			})
		})
	}
}

// Run with a context that is already done makes no request.
func TestRunCancelledBeforeStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{}, fifo.Options[*corev1.Pod]{})
		h.cancel()
		if err := h.r.Run(h.ctx); err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
		if got := h.src.reqs(); len(got) != 0 {
			t.Errorf("requests %v, want none", got)
		}
	})
}
