package reflector

import (
	"io"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/fifo"
)

// Fault 4: the streaming initial list. The queue gets exactly one Replace,
// and only once a complete stream has ended with the
// "k8s.io/initial-events-end" bookmark; every failure before that starts
// over (a new stream, or a LIST) and never publishes part of a stream.
func TestStreamingInitialList(t *testing.T) {
	tests := []struct {
		name          string
		lists, watchs []step
		want          []req
		wantOps       []string
		wantErrs      int
		// restartAt, if set, is the index in want of a start-over that
		// must come after a backoff.
		restartAt int
		// wantStreams is Stats().WatchLists at the end.
		wantStreams int
	}{
		{
			name:        "complete stream",
			watchs:      []step{hangs(added("a", "5"), added("b", "6"), endBookmark("10")).final()},
			want:        []req{streamAt("")},
			wantOps:     []string{"replace@10 [a@5 b@6]"},
			wantStreams: 1,
		},
		{
			name: "end bookmark missing: the stream closes",
			watchs: []step{
				closes(added("a", "5"), added("b", "6")),
				hangs(added("a", "5"), added("b", "6"), endBookmark("10")).final(),
			},
			want:        []req{streamAt(""), streamAt("")},
			wantOps:     []string{"replace@10 [a@5 b@6]"},
			wantErrs:    1,
			restartAt:   1,
			wantStreams: 2,
		},
		{
			name: "bookmark annotated false is not the end",
			watchs: []step{hangs(
				added("a", "5"), annotatedBookmark("7", "false"), added("b", "8"), bookmark("9"), endBookmark("10"),
			).final()},
			want:        []req{streamAt("")},
			wantOps:     []string{"replace@10 [a@5 b@8]"},
			wantStreams: 1,
		},
		{
			name: "only a bookmark annotated false, then the stream closes",
			watchs: []step{
				closes(added("a", "5"), annotatedBookmark("7", "false")),
				hangs(added("a", "5"), endBookmark("10")).final(),
			},
			want:        []req{streamAt(""), streamAt("")},
			wantOps:     []string{"replace@10 [a@5]"},
			wantErrs:    1,
			restartAt:   1,
			wantStreams: 2,
		},
		{
			name: "changes during the initial events",
			watchs: []step{hangs(
				added("a", "5"), added("b", "6"), modified("a", "7"), deleted("b", "8"), added("c", "9"), endBookmark("10"),
			).final()},
			want:        []req{streamAt("")},
			wantOps:     []string{"replace@10 [a@7 c@9]"},
			wantStreams: 1,
		},
		{
			name: "stream cut before the end bookmark of a relist",
			watchs: []step{
				closes(added("a", "5"), endBookmark("10"), added("b", "11"), errorEvent(expired())),
				closes(added("a", "5")),
				hangs(added("a", "5"), added("b", "11"), endBookmark("20")).final(),
			},
			want:        []req{streamAt(""), streamAt("11"), streamAt("11")},
			wantOps:     []string{"replace@10 [a@5]", "add b@11", "replace@20 [a@5 b@11]"},
			wantErrs:    1,
			restartAt:   2,
			wantStreams: 3,
		},
		{
			name:        "stream cut by a transport error: LIST for this attempt",
			watchs:      []step{breaks(nextErr(io.ErrUnexpectedEOF), added("a", "5")), hangs().final()},
			lists:       []step{page("10", "", pod("a", "5"), pod("b", "6"))},
			want:        []req{streamAt(""), list("0", DefaultPageSize), watchAt("10")},
			wantOps:     []string{"replace@10 [a@5 b@6]"},
			wantStreams: 1,
			wantErrs:    1, // reported, then LIST
		},
		{
			name:   "server refuses sendInitialEvents: BadRequest",
			watchs: []step{fail(startErr(badRequest())), closes(errorEvent(expired())), hangs().final()},
			lists:  []step{page("10", "", pod("a", "5")), page("20", "", pod("a", "5"))},
			want: []req{
				streamAt(""), list("0", DefaultPageSize), watchAt("10"),
				list("10", 0), watchAt("20"), // the relist is a LIST too
			},
			wantOps:     []string{"replace@10 [a@5]", "replace@20 [a@5]"},
			wantStreams: 1,
		},
		{
			name:   "server refuses sendInitialEvents: Invalid",
			watchs: []step{fail(startErr(invalid())), closes(errorEvent(expired())), hangs().final()},
			lists:  []step{page("10", "", pod("a", "5")), page("20", "", pod("a", "5"))},
			want: []req{
				streamAt(""), list("0", DefaultPageSize), watchAt("10"),
				list("10", 0), watchAt("20"),
			},
			wantOps:     []string{"replace@10 [a@5]", "replace@20 [a@5]"},
			wantStreams: 1,
		},
		{
			name:   "server refuses sendInitialEvents in an ERROR event",
			watchs: []step{closes(errorEvent(badRequest())), closes(errorEvent(expired())), hangs().final()},
			lists:  []step{page("10", "", pod("a", "5")), page("20", "", pod("a", "5"))},
			want: []req{
				streamAt(""), list("0", DefaultPageSize), watchAt("10"),
				list("10", 0), watchAt("20"),
			},
			wantOps:     []string{"replace@10 [a@5]", "replace@20 [a@5]"},
			wantStreams: 1,
		},
		{
			name: "Forbidden: LIST for this attempt, streaming again on the next",
			watchs: []step{
				fail(startErr(forbidden())),
				closes(errorEvent(expired())),
				hangs(added("a", "5"), endBookmark("20")).final(),
			},
			lists:       []step{page("10", "", pod("a", "5"))},
			want:        []req{streamAt(""), list("0", DefaultPageSize), watchAt("10"), streamAt("10")},
			wantOps:     []string{"replace@10 [a@5]", "replace@20 [a@5]"},
			wantStreams: 2,
		},
		{
			name:        "Forbidden in an ERROR event",
			watchs:      []step{closes(added("a", "5"), errorEvent(forbidden())), hangs().final()},
			lists:       []step{page("10", "", pod("a", "5"))},
			want:        []req{streamAt(""), list("0", DefaultPageSize), watchAt("10")},
			wantOps:     []string{"replace@10 [a@5]"},
			wantStreams: 1,
		},
		{
			name: "429 on stream start: back off, stream again",
			watchs: []step{
				fail(startErr(tooMany())),
				hangs(added("a", "5"), endBookmark("10")).final(),
			},
			want:        []req{streamAt(""), streamAt("")},
			wantOps:     []string{"replace@10 [a@5]"},
			wantErrs:    1,
			restartAt:   1,
			wantStreams: 2,
		},
		{
			name: "connection refused on stream start: back off, stream again",
			watchs: []step{
				fail(startErr(connRefused())),
				fail(startErr(connRefused())),
				hangs(added("a", "5"), endBookmark("10")).final(),
			},
			want:        []req{streamAt(""), streamAt(""), streamAt("")},
			wantOps:     []string{"replace@10 [a@5]"},
			wantErrs:    2,
			restartAt:   2,
			wantStreams: 3,
		},
		{
			name:        "unknown event type in the initial events: LIST, never a partial Replace",
			watchs:      []step{closes(added("a", "5"), podEvent{Type: "WEIRD", Object: pod("b", "6")}), hangs().final()},
			lists:       []step{page("10", "", pod("a", "5"), pod("b", "6"))},
			want:        []req{streamAt(""), list("0", DefaultPageSize), watchAt("10")},
			wantOps:     []string{"replace@10 [a@5 b@6]"},
			wantStreams: 1,
			wantErrs:    1, // reported, then LIST
		},
		{
			name:        "ERROR event without an error in the initial events",
			watchs:      []step{closes(added("a", "5"), podEvent{Type: watch.Error}), hangs().final()},
			lists:       []step{page("10", "", pod("a", "5"))},
			want:        []req{streamAt(""), list("0", DefaultPageSize), watchAt("10")},
			wantOps:     []string{"replace@10 [a@5]"},
			wantStreams: 1,
			wantErrs:    1, // reported, then LIST
		},
		{
			name:        "nil object in the initial events",
			watchs:      []step{closes(added("a", "5"), podEvent{Type: watch.Added}), hangs().final()},
			lists:       []step{page("10", "", pod("a", "5"))},
			want:        []req{streamAt(""), list("0", DefaultPageSize), watchAt("10")},
			wantOps:     []string{"replace@10 [a@5]"},
			wantStreams: 1,
			wantErrs:    1, // reported, then LIST
		},
		{
			name:        "end bookmark without an object",
			watchs:      []step{closes(added("a", "5"), podEvent{Type: watch.Bookmark}), hangs().final()},
			lists:       []step{page("10", "", pod("a", "5"))},
			want:        []req{streamAt(""), list("0", DefaultPageSize), watchAt("10")},
			wantOps:     []string{"replace@10 [a@5]"},
			wantStreams: 1,
			wantErrs:    1, // reported, then LIST
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Options{}, fifo.Options[*corev1.Pod]{})
				h.src.lists, h.src.watches = tt.lists, tt.watchs
				h.run()
				if diff := cmp.Diff(tt.want, h.src.reqs()); diff != "" {
					t.Errorf("requests (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.wantOps, h.q.recorded()); diff != "" {
					t.Errorf("queue writes (-want +got):\n%s", diff)
				}
				errs := h.reported()
				if len(errs) != tt.wantErrs {
					t.Errorf("OnError got %d errors %v, want %d", len(errs), errs, tt.wantErrs)
				}
				if tt.restartAt > 0 {
					calls := h.src.recorded()
					if g := gap(calls, tt.restartAt-1, tt.restartAt); g < DefaultBackoffInit {
						t.Errorf("%v came %v after %v, want at least %v of backoff", calls[tt.restartAt].req, g, calls[tt.restartAt-1].req, DefaultBackoffInit)
					}
				}
				if got := h.r.Stats().WatchLists; got != tt.wantStreams {
					t.Errorf("Stats().WatchLists = %d, want %d", got, tt.wantStreams)
				}
			})
		})
	}
}
