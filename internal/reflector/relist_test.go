package reflector

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

var tooLargeForms = []struct {
	name string
	err  func() error
}{
	{"cause ResourceVersionTooLarge", tooLargeCause},
	{"timeout with cause message", tooLargeCauseMessage},
	{"timeout with message", tooLargeMessage},
}

// Fault 3: a relist at a known resourceVersion refused as too large is
// retried at once as a quorum read (RV ""), and only once.
func TestTooLargeResourceVersionRelistsFromQuorum(t *testing.T) {
	type script struct {
		opts          opts
		lists, watchs []step
		want          []req
		// sameAttempt, if not 0: want[sameAttempt] follows
		// want[sameAttempt-1] with no backoff between them.
		sameAttempt int
	}
	places := []struct {
		name   string
		script func(tooLarge error) script
	}{
		{"LIST at the last synced RV", func(tl error) script {
			return script{
				opts:   opts{NoWatchList: true},
				lists:  []step{page("10", "", pod("a", "5")), fail(listErr(tl)), page("20", "", pod("a", "5"))},
				watchs: []step{breaks(nextErr(expired())), hangs().final()},
				want: []req{
					list("0", DefaultPageSize), watchAt("10"),
					list("10", 0), list("", DefaultPageSize), // the quorum read, paged
					watchAt("20"),
				},
				sameAttempt: 3,
			}
		}},
		{"watch: Next returns it", func(tl error) script {
			return script{
				opts:   opts{NoWatchList: true},
				lists:  []step{page("10", "", pod("a", "5")), page("20", "", pod("a", "5"))},
				watchs: []step{breaks(nextErr(tl), added("b", "11")), hangs().final()},
				want: []req{
					list("0", DefaultPageSize), watchAt("10"),
					list("", DefaultPageSize),
					watchAt("20"),
				},
			}
		}},
		{"streaming relist refused at start", func(tl error) script {
			return script{
				watchs: []step{
					breaks(nextErr(expired()), added("a", "5"), endBookmark("10")),
					fail(startErr(tl)),
					hangs(added("a", "5"), endBookmark("20")).final(),
				},
				want:        []req{streamAt(""), streamAt("10"), streamAt("")},
				sameAttempt: 2,
			}
		}},
		{"streaming relist: Next returns it", func(tl error) script {
			return script{
				watchs: []step{
					breaks(nextErr(expired()), added("a", "5"), endBookmark("10")),
					breaks(nextErr(tl)),
					hangs(added("a", "5"), endBookmark("20")).final(),
				},
				want:        []req{streamAt(""), streamAt("10"), streamAt("")},
				sameAttempt: 2,
			}
		}},
	}
	for _, form := range tooLargeForms {
		for _, place := range places {
			t.Run(form.name+"/"+place.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					sc := place.script(form.err())
					h := newHarness(t, sc.opts)
					h.src.lists, h.src.watches = sc.lists, sc.watchs
					h.run()
					if diff := cmp.Diff(sc.want, h.src.reqs()); diff != "" {
						t.Fatalf("requests (-want +got):\n%s", diff)
					}
					calls := h.src.recorded()
					if i := sc.sameAttempt; i > 0 {
						if g := gap(calls, i-1, i); g != 0 {
							t.Errorf("%v came %v after %v, want the quorum read in the same attempt",
								calls[i].req, g, calls[i-1].req)
						}
					}
					if got := h.r.LastSyncResourceVersion(); got != "20" {
						t.Errorf("LastSyncResourceVersion = %q, want %q", got, "20")
					}
				})
			})
		}
	}
}

// Fault 3, no loop: when even the quorum read is refused as too large (a
// watch cache that cannot catch up), the reflector backs off between
// attempts instead of spinning.
func TestTooLargeOnQuorumReadBacksOff(t *testing.T) {
	tl := tooLargeCause
	tests := []struct {
		name          string
		opts          opts
		lists, watchs []step
		alwaysList    *step
		alwaysWatch   *step
	}{
		{
			name:       "LIST",
			opts:       opts{NoWatchList: true},
			lists:      []step{page("10", "", pod("a", "5"))},
			watchs:     []step{breaks(nextErr(expired()))},
			alwaysList: &step{err: listErr(tl())},
		},
		{
			name:        "streaming list",
			watchs:      []step{breaks(nextErr(expired()), added("a", "5"), endBookmark("10"))},
			alwaysWatch: &step{err: startErr(tl())},
		},
		{
			name:        "streaming list: Next returns it",
			watchs:      []step{breaks(nextErr(expired()), added("a", "5"), endBookmark("10"))},
			alwaysWatch: &step{w: &wspec{end: nextErr(tl())}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, tt.opts)
				h.src.lists, h.src.watches = tt.lists, tt.watchs
				h.src.alwaysList, h.src.alwaysWatch = tt.alwaysList, tt.alwaysWatch
				h.runFor(5 * time.Minute)
				calls := h.src.recorded()
				// The backoff allows at most 23 attempts in 5 minutes (see
				// TestListFailureBackoffIsBounded); the first refused
				// relist at a known RV may be followed by one quorum read
				// in the same attempt, never more.
				if len(calls) > 2+2*23 {
					t.Errorf("%d requests in 5 minutes, want <= %d", len(calls), 2+2*23)
				}
				perInstant := map[time.Duration]int{}
				for _, c := range calls[2:] {
					perInstant[c.at]++
				}
				for at, n := range perInstant {
					if n > 2 {
						t.Errorf("%d requests at %v without a backoff between them", n, at)
					}
				}
				if len(h.reported()) == 0 {
					t.Errorf("the refusals were never reported through Errors")
				}
			})
		})
	}
}

// A 410 (expired or gone) ends the watch; the reflector relists once, at
// the last synced resourceVersion (not a quorum read: a LIST at RV is
// already "not older than"), then watches from the new list's RV. A 410 on
// that relist itself falls back to a quorum read.
func TestGoneRelistsAtLastSyncedRV(t *testing.T) {
	tests := []struct {
		name          string
		opts          opts
		lists, watchs []step
		want          []req
		relistAt      int // index of the relist in want
	}{
		{
			name:   "expired from Next after events",
			opts:   opts{NoWatchList: true},
			lists:  []step{page("10", "", pod("a", "5")), page("20", "", pod("a", "5"), pod("b", "12"))},
			watchs: []step{breaks(nextErr(expired()), added("b", "11"), modified("b", "12")), hangs().final()},
			want:   []req{list("0", DefaultPageSize), watchAt("10"), list("12", 0), watchAt("20")}, relistAt: 2,
		},
		{
			name:   "gone from Next after events",
			opts:   opts{NoWatchList: true},
			lists:  []step{page("10", "", pod("a", "5")), page("20", "", pod("a", "5"), pod("b", "12"))},
			watchs: []step{breaks(nextErr(gone()), added("b", "11"), modified("b", "12")), hangs().final()},
			want:   []req{list("0", DefaultPageSize), watchAt("10"), list("12", 0), watchAt("20")}, relistAt: 2,
		},
		{
			name:   "expired from Next after one event",
			opts:   opts{NoWatchList: true},
			lists:  []step{page("10", "", pod("a", "5")), page("20", "", pod("a", "5"), pod("b", "12"))},
			watchs: []step{breaks(nextErr(expired()), added("b", "12")), hangs().final()},
			want:   []req{list("0", DefaultPageSize), watchAt("10"), list("12", 0), watchAt("20")}, relistAt: 2,
		},
		{
			name:   "watch start expired",
			opts:   opts{NoWatchList: true},
			lists:  []step{page("10", "", pod("a", "5")), page("20", "", pod("a", "5"))},
			watchs: []step{fail(startErr(expired())), hangs().final()},
			want:   []req{list("0", DefaultPageSize), watchAt("10"), list("10", 0), watchAt("20")}, relistAt: 2,
		},
		{
			name:   "watch start gone",
			opts:   opts{NoWatchList: true},
			lists:  []step{page("10", "", pod("a", "5")), page("20", "", pod("a", "5"))},
			watchs: []step{fail(startErr(gone())), hangs().final()},
			want:   []req{list("0", DefaultPageSize), watchAt("10"), list("10", 0), watchAt("20")}, relistAt: 2,
		},
		{
			name: "relist itself expired",
			opts: opts{NoWatchList: true},
			lists: []step{
				page("10", "", pod("a", "5")),
				fail(listErr(expired())),
				page("20", "", pod("a", "5")),
			},
			watchs: []step{breaks(nextErr(expired()), added("b", "11")), hangs().final()},
			want: []req{
				list("0", DefaultPageSize), watchAt("10"),
				list("11", 0), list("", DefaultPageSize),
				watchAt("20"),
			},
			relistAt: 2,
		},
		{
			name: "streaming: expired from Next",
			watchs: []step{
				breaks(nextErr(expired()), added("a", "5"), endBookmark("10"), added("b", "11")),
				hangs(added("a", "5"), added("b", "11"), endBookmark("20")).final(),
			},
			want:     []req{streamAt(""), streamAt("11")},
			relistAt: 1,
		},
		{
			name: "streaming: relist itself expired",
			watchs: []step{
				breaks(nextErr(expired()), added("a", "5"), endBookmark("10"), added("b", "11")),
				fail(startErr(expired())),
				hangs(added("a", "5"), endBookmark("20")).final(),
			},
			want:     []req{streamAt(""), streamAt("11"), streamAt("")},
			relistAt: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, tt.opts)
				h.src.lists, h.src.watches = tt.lists, tt.watchs
				h.run()
				if diff := cmp.Diff(tt.want, h.src.reqs()); diff != "" {
					t.Fatalf("requests (-want +got):\n%s", diff)
				}
				// The relist comes after a backoff, never at once.
				calls := h.src.recorded()
				if g := gap(calls, tt.relistAt-1, tt.relistAt); g < DefaultBackoffInit {
					t.Errorf("relist %v came %v after %v, want at least %v of backoff",
						calls[tt.relistAt].req, g, calls[tt.relistAt-1].req, DefaultBackoffInit)
				}
				if got := h.r.LastSyncResourceVersion(); got != "20" {
					t.Errorf("LastSyncResourceVersion = %q, want %q", got, "20")
				}
				if ops := h.sink.recorded(); ops[len(ops)-1] != "end@20" {
					t.Errorf("deltas %v, want the relist's end@20 last", ops)
				}
			})
		})
	}
}
