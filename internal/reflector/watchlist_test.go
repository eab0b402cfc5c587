package reflector

import (
	"io"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/watch"
)

// Fault 4: the streaming initial list. Its events are pushed as they arrive
// between a ReplaceStart and a ReplaceEnd, and the ReplaceEnd comes only
// once the stream reaches the "k8s.io/initial-events-end" bookmark; every
// failure before that starts over (a new ReplaceStart, from a new stream or
// a LIST), so a partial stream is never closed as a list.
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
		// wantStreams is Stats.WatchLists at the end.
		wantStreams int
	}{
		{
			name:        "complete stream",
			watchs:      []step{hangs(added("a", "5"), added("b", "6"), endBookmark("10")).final()},
			want:        []req{streamAt("")},
			wantOps:     []string{"start", "replaced a@5", "replaced b@6", "end@10"},
			wantStreams: 1,
		},
		{
			name: "end bookmark missing: the stream closes",
			watchs: []step{
				closes(added("a", "5"), added("b", "6")),
				hangs(added("a", "5"), added("b", "6"), endBookmark("10")).final(),
			},
			want:        []req{streamAt(""), streamAt("")},
			wantOps:     []string{"start", "replaced a@5", "replaced b@6", "start", "replaced a@5", "replaced b@6", "end@10"},
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
			wantOps:     []string{"start", "replaced a@5", "replaced b@8", "end@10"},
			wantStreams: 1,
		},
		{
			name: "only a bookmark annotated false, then the stream closes",
			watchs: []step{
				closes(added("a", "5"), annotatedBookmark("7", "false")),
				hangs(added("a", "5"), endBookmark("10")).final(),
			},
			want:        []req{streamAt(""), streamAt("")},
			wantOps:     []string{"start", "replaced a@5", "start", "replaced a@5", "end@10"},
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
			wantOps:     []string{"start", "replaced a@5", "replaced b@6", "replaced a@7", "delete b@8", "replaced c@9", "end@10"},
			wantStreams: 1,
		},
		{
			name: "stream cut before the end bookmark of a relist",
			watchs: []step{
				breaks(nextErr(expired()), added("a", "5"), endBookmark("10"), added("b", "11")),
				closes(added("a", "5")),
				hangs(added("a", "5"), added("b", "11"), endBookmark("20")).final(),
			},
			want: []req{streamAt(""), streamAt("11"), streamAt("11")},
			wantOps: []string{
				"start", "replaced a@5", "end@10", "add b@11",
				"start", "replaced a@5",
				"start", "replaced a@5", "replaced b@11", "end@20",
			},
			wantErrs:    1,
			restartAt:   2,
			wantStreams: 3,
		},
		{
			// A bare io.ErrUnexpectedEOF wrapped in a source.Error is not
			// recognised as transient (utilnet.IsProbableEOF does not
			// unwrap), so it is an "other failure": reported, then LIST.
			name:        "stream cut by a wrapped unexpected EOF: reported, LIST for this attempt",
			watchs:      []step{breaks(nextErr(io.ErrUnexpectedEOF), added("a", "5")), hangs().final()},
			lists:       []step{page("10", "", pod("a", "5"), pod("b", "6"))},
			want:        []req{streamAt(""), list("0", DefaultPageSize), watchAt("10")},
			wantOps:     []string{"start", "replaced a@5", "start", "replaced a@5", "replaced b@6", "end@10"},
			wantStreams: 1,
			wantErrs:    1,
		},
		{
			name:        "stream start fails with EOF: back off, stream again",
			watchs:      []step{fail(startErr(eof())), hangs(added("a", "5"), endBookmark("10")).final()},
			want:        []req{streamAt(""), streamAt("")},
			wantOps:     []string{"start", "replaced a@5", "end@10"},
			wantErrs:    1,
			restartAt:   1,
			wantStreams: 2,
		},
		{
			name:   "server refuses sendInitialEvents: BadRequest",
			watchs: []step{fail(startErr(badRequest())), breaks(nextErr(expired())), hangs().final()},
			lists:  []step{page("10", "", pod("a", "5")), page("20", "", pod("a", "5"))},
			want: []req{
				streamAt(""), list("0", DefaultPageSize), watchAt("10"),
				list("10", 0), watchAt("20"), // the relist is a LIST too
			},
			wantOps:     []string{"start", "replaced a@5", "end@10", "start", "replaced a@5", "end@20"},
			wantStreams: 1,
		},
		{
			name:   "server refuses sendInitialEvents: Invalid",
			watchs: []step{fail(startErr(invalid())), breaks(nextErr(expired())), hangs().final()},
			lists:  []step{page("10", "", pod("a", "5")), page("20", "", pod("a", "5"))},
			want: []req{
				streamAt(""), list("0", DefaultPageSize), watchAt("10"),
				list("10", 0), watchAt("20"),
			},
			wantOps:     []string{"start", "replaced a@5", "end@10", "start", "replaced a@5", "end@20"},
			wantStreams: 1,
		},
		{
			name:   "server refuses sendInitialEvents in the stream",
			watchs: []step{breaks(nextErr(badRequest())), breaks(nextErr(expired())), hangs().final()},
			lists:  []step{page("10", "", pod("a", "5")), page("20", "", pod("a", "5"))},
			want: []req{
				streamAt(""), list("0", DefaultPageSize), watchAt("10"),
				list("10", 0), watchAt("20"),
			},
			wantOps:     []string{"start", "start", "replaced a@5", "end@10", "start", "replaced a@5", "end@20"},
			wantStreams: 1,
		},
		{
			name: "Forbidden: LIST for this attempt, streaming again on the next",
			watchs: []step{
				fail(startErr(forbidden())),
				breaks(nextErr(expired())),
				hangs(added("a", "5"), endBookmark("20")).final(),
			},
			lists:       []step{page("10", "", pod("a", "5"))},
			want:        []req{streamAt(""), list("0", DefaultPageSize), watchAt("10"), streamAt("10")},
			wantOps:     []string{"start", "replaced a@5", "end@10", "start", "replaced a@5", "end@20"},
			wantStreams: 2,
		},
		{
			name:        "Forbidden in the stream",
			watchs:      []step{breaks(nextErr(forbidden()), added("a", "5")), hangs().final()},
			lists:       []step{page("10", "", pod("a", "5"))},
			want:        []req{streamAt(""), list("0", DefaultPageSize), watchAt("10")},
			wantOps:     []string{"start", "replaced a@5", "start", "replaced a@5", "end@10"},
			wantStreams: 1,
		},
		{
			name: "429 on stream start: back off, stream again",
			watchs: []step{
				fail(startErr(tooMany())),
				hangs(added("a", "5"), endBookmark("10")).final(),
			},
			want:        []req{streamAt(""), streamAt("")},
			wantOps:     []string{"start", "replaced a@5", "end@10"},
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
			wantOps:     []string{"start", "replaced a@5", "end@10"},
			wantErrs:    2,
			restartAt:   2,
			wantStreams: 3,
		},
		{
			name:        "unknown event type in the initial events: LIST, never a partial list",
			watchs:      []step{closes(added("a", "5"), podEvent{Type: "WEIRD", Object: pod("b", "6")}), hangs().final()},
			lists:       []step{page("10", "", pod("a", "5"), pod("b", "6"))},
			want:        []req{streamAt(""), list("0", DefaultPageSize), watchAt("10")},
			wantOps:     []string{"start", "replaced a@5", "start", "replaced a@5", "replaced b@6", "end@10"},
			wantStreams: 1,
			wantErrs:    1, // reported, then LIST
		},
		{
			name:        "ERROR passed as an event in the initial events",
			watchs:      []step{closes(added("a", "5"), podEvent{Type: watch.Error}), hangs().final()},
			lists:       []step{page("10", "", pod("a", "5"))},
			want:        []req{streamAt(""), list("0", DefaultPageSize), watchAt("10")},
			wantOps:     []string{"start", "replaced a@5", "start", "replaced a@5", "end@10"},
			wantStreams: 1,
			wantErrs:    1, // reported, then LIST
		},
		{
			name:        "nil object in the initial events",
			watchs:      []step{closes(added("a", "5"), podEvent{Type: watch.Added}), hangs().final()},
			lists:       []step{page("10", "", pod("a", "5"))},
			want:        []req{streamAt(""), list("0", DefaultPageSize), watchAt("10")},
			wantOps:     []string{"start", "replaced a@5", "start", "replaced a@5", "end@10"},
			wantStreams: 1,
			wantErrs:    1, // reported, then LIST
		},
		{
			name:        "end bookmark without an object",
			watchs:      []step{closes(added("a", "5"), podEvent{Type: watch.Bookmark}), hangs().final()},
			lists:       []step{page("10", "", pod("a", "5"))},
			want:        []req{streamAt(""), list("0", DefaultPageSize), watchAt("10")},
			wantOps:     []string{"start", "replaced a@5", "start", "replaced a@5", "end@10"},
			wantStreams: 1,
			wantErrs:    1, // reported, then LIST
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, opts{})
				h.src.lists, h.src.watches = tt.lists, tt.watchs
				h.run()
				if diff := cmp.Diff(tt.want, h.src.reqs()); diff != "" {
					t.Errorf("requests (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.wantOps, h.sink.recorded()); diff != "" {
					t.Errorf("deltas (-want +got):\n%s", diff)
				}
				errs := h.reported()
				if len(errs) != tt.wantErrs {
					t.Errorf("Errors delivered %d errors %v, want %d", len(errs), errs, tt.wantErrs)
				}
				if tt.restartAt > 0 {
					h.checkGaps([]int{tt.restartAt}, nil)
				}
				if got := h.r.Status().Stats.WatchLists; got != tt.wantStreams {
					t.Errorf("Stats.WatchLists = %d, want %d", got, tt.wantStreams)
				}
			})
		})
	}
}
