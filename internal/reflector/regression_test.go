package reflector

// Regression tests for the four defects the redesign fixed. Each comment
// says what the old reflector did; each test fails on that behaviour.

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/source"
)

// Defect 1: a watch that delivers an event or a bookmark and closes within
// a second is reopened only after a backoff. The old reflector backed off
// only after a short watch that delivered nothing; one that delivered a
// single bookmark (or event) and closed was reopened at once, forever: about
// 460k watches in 4 s against a server that closes watches early. Here that
// loop hits the harness's limit of maxCalls requests and the bound below.
func TestShortWatchBacksOff(t *testing.T) {
	// The fewest possible backoff delays (no jitter) allow 23 attempts in 5
	// minutes (see TestListFailureBackoffIsBounded); at most every other
	// watch is reopened at once, so 46 watches at most.
	const maxWatches = 2 * 23 // a backoff before at least every other watch
	for _, tt := range []struct {
		name   string
		lists  []step
		first  step // the first watch (or the streaming list)
		each   step // every later watch
		wantOp string
	}{
		{
			name:   "one bookmark, then the watch closes",
			lists:  []step{page("10", "", pod("a", "5"))},
			first:  closes(bookmark("11")),
			each:   closes(bookmark("11")),
			wantOp: "bookmark@11",
		},
		{
			name:   "one ADDED, then the watch closes",
			lists:  []step{page("10", "", pod("a", "5"))},
			first:  closes(added("b", "11")),
			each:   closes(added("b", "11")),
			wantOp: "add b@11",
		},
		{
			name:   "after a streaming list, one bookmark, then the watch closes",
			first:  closes(added("a", "5"), endBookmark("10"), bookmark("11")),
			each:   closes(bookmark("11")),
			wantOp: "bookmark@11",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, opts{NoWatchList: tt.lists != nil})
				h.src.lists, h.src.watches = tt.lists, []step{tt.first}
				h.src.alwaysWatch = &tt.each
				h.runFor(5 * time.Minute)
				calls := h.src.recorded()
				watches, inARow := 0, 0
				for i, c := range calls {
					if i == 0 {
						continue // the list or the streaming list
					}
					watches++
					if c.req != watchAt("11") && !(i == 1 && c.req == watchAt("10")) {
						t.Errorf("request %d: %v, want only watches from the last RV", i, c.req)
					}
					if i > 1 && calls[i].at == h.src.doneAt(i-1) {
						// At most one watch in a row is reopened at once
						// (the first short one that delivered something).
						if inARow++; inARow > 1 {
							t.Errorf("request %d: the second watch in a row reopened without a backoff", i)
						}
					} else {
						inARow = 0
					}
				}
				t.Logf("%d watches in 5 minutes of virtual time (at most %d allowed)", watches, maxWatches)
				if watches > maxWatches || watches < 5 {
					t.Errorf("%d watches in 5 minutes, want between 5 and %d", watches, maxWatches)
				}
				ops := h.sink.recorded()
				wantN := watches
				if tt.lists == nil {
					wantN++ // the streaming list delivered one too
				}
				if n := countOp(ops, tt.wantOp); n != wantN {
					t.Errorf("%d %q deltas for %d watches, want %d", n, tt.wantOp, watches, wantN)
				}
				noRelist(t, h)
				if errs := h.reported(); len(errs) != 0 {
					t.Errorf("errors reported %v, want none: a short watch is not an error", errs)
				}
			})
		})
	}
}

func countOp(ops []string, op string) int {
	n := 0
	for _, o := range ops {
		if o == op {
			n++
		}
	}
	return n
}

// Defect 2: transient watch errors, at watch start or in the stream, are
// retried from the same resourceVersion after a backoff, never by a relist:
// nothing was lost. The old reflector retried only connection refused and
// 429 at watch start (500 and 429 in the stream); a 500 "etcdserver: leader
// changed", a 503, a reset connection, an EOF or a 403 at watch start, and
// a 503, reset, EOF or 403 in the stream, made it relist the whole
// collection.
func TestTransientWatchErrorsNeverRelist(t *testing.T) {
	classes := []struct {
		name string
		err  func() error
	}{
		{`500 "etcdserver: leader changed"`, leaderChanged},
		{"503", unavailable},
		{"connection reset", connReset},
		{"EOF", eof},
		{"429", tooMany},
		{"connection refused", connRefused},
		{"403", forbidden},
	}
	places := []struct {
		name   string
		script func(e error) (lists, watchs []step, want []req)
	}{
		{"at watch start", func(e error) ([]step, []step, []req) {
			return []step{page("10", "", pod("a", "5"))},
				[]step{fail(startErr(e)), fail(startErr(e)), hangs().final()},
				[]req{list("0", DefaultPageSize), watchAt("10"), watchAt("10"), watchAt("10")}
		}},
		{"in the stream", func(e error) ([]step, []step, []req) {
			return []step{page("10", "", pod("a", "5"))},
				[]step{breaks(nextErr(e), added("b", "11")), breaks(nextErr(e)), hangs().final()},
				[]req{list("0", DefaultPageSize), watchAt("10"), watchAt("11"), watchAt("11")}
		}},
		{"after a streaming list, in the stream then at watch start", func(e error) ([]step, []step, []req) {
			return nil,
				[]step{breaks(nextErr(e), added("a", "5"), endBookmark("10"), added("b", "11")), fail(startErr(e)), hangs().final()},
				[]req{streamAt(""), watchAt("11"), watchAt("11")}
		}},
	}
	for _, c := range classes {
		for _, p := range places {
			t.Run(c.name+"/"+p.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e := c.err()
					lists, watchs, want := p.script(e)
					h := newHarness(t, opts{NoWatchList: lists != nil})
					h.src.lists, h.src.watches = lists, watchs
					h.run()
					if diff := cmp.Diff(want, h.src.reqs()); diff != "" {
						t.Fatalf("requests (-want +got):\n%s", diff)
					}
					noRelist(t, h)
					n := len(want) // the last two requests are the retries
					h.checkGaps([]int{n - 2, n - 1}, nil)
					errs := h.reported()
					if len(errs) != 2 {
						t.Fatalf("Errors delivered %v, want the two failures", errs)
					}
					for _, err := range errs {
						if !errors.Is(err, e) {
							t.Errorf("delivered %v, want %v", err, e)
						}
					}
				})
			})
		}
	}
}

// Defect 3: after a LIST without a resourceVersion, watch events do not
// define a resume point. A watch from "" sends the current state as ADDED
// events in key order, not resourceVersion order, and no deletion for what
// vanished meanwhile; so when it ends, only a quorum relist (RV "") can go
// on, and LastSyncResourceVersion never goes back for versions that
// compare. The old reflector took every event's version as the resume
// point (10 after b@10, going back from 20) and, when the watch ended,
// re-watched at once from the last event's version (15), skipping whatever
// the interrupted initial events had not sent yet.
func TestNoResumeAfterListWithoutRV(t *testing.T) {
	for _, tt := range []struct {
		name    string
		end     *item // how the watch ends after the three events; nil: it closes
		wantErr bool
	}{
		{name: "the watch closes"},
		{name: "the watch fails with a 503", end: &item{err: nextErr(unavailable())}, wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				feed := make(chan item)
				h := newHarness(t, opts{NoWatchList: true})
				h.src.lists = []step{
					page("", ""), // a list without a resourceVersion
					page("30", "", pod("a", "20"), pod("b", "10"), pod("c", "15")),
				}
				h.src.watches = []step{fed(feed), hangs().final()}
				done := make(chan error, 1)
				go func() { done <- h.r.Run(h.ctx) }()
				for _, ev := range []podEvent{added("a", "20"), added("b", "10"), added("c", "15")} {
					feed <- item{ev: ev}
					synctest.Wait()
					if got := h.r.LastSyncResourceVersion(); got != "20" {
						t.Errorf("LastSyncResourceVersion = %q after %s, want 20 (never back)", got, name(ev.Object))
					}
				}
				if tt.end != nil {
					feed <- *tt.end
				} else {
					close(feed)
				}
				if err := <-done; err != nil {
					t.Errorf("Run = %v, want nil", err)
				}
				h.finish()
				want := []req{list("0", DefaultPageSize), watchAt(""), list("", DefaultPageSize), watchAt("30")}
				if diff := cmp.Diff(want, h.src.reqs()); diff != "" {
					t.Fatalf("requests (-want +got):\n%s", diff)
				}
				h.checkGaps([]int{2}, nil)
				wantOps := []string{
					"start", "end@", "add a@20", "add b@10", "add c@15",
					"start", "replaced a@20", "replaced b@10", "replaced c@15", "end@30",
				}
				if diff := cmp.Diff(wantOps, h.sink.recorded()); diff != "" {
					t.Errorf("deltas (-want +got):\n%s", diff)
				}
				wantErrs := 0
				if tt.wantErr {
					wantErrs = 1
				}
				if errs := h.reported(); len(errs) != wantErrs {
					t.Errorf("Errors delivered %v, want %d", errs, wantErrs)
				}
				if got := h.r.LastSyncResourceVersion(); got != "30" {
					t.Errorf("LastSyncResourceVersion = %q, want 30", got)
				}
			})
		})
	}
}

// Defect 4: the resourceVersion of each LIST. The first list asks for "0"
// (any cached state); a relist for the last synced version, so it never
// goes back in time; "" (a quorum read) after a too-large version, after a
// 410 on the relist itself, and when there is no version to name (the last
// list had none). The old reflector asked for "0" whenever its last synced
// version was "", so a relist after a list without a version could be
// served from a stale watch cache, back in time.
func TestRelistResourceVersion(t *testing.T) {
	a := pod("a", "5")
	tests := []struct {
		name          string
		lists, watchs []step
		want          []req
	}{
		{
			name:   "the first list asks for 0, also when retried",
			lists:  []step{fail(listErr(unavailable())), page("10", "", a)},
			watchs: []step{hangs().final()},
			want:   []req{list("0", DefaultPageSize), list("0", DefaultPageSize), watchAt("10")},
		},
		{
			name:   "after a 410 on the watch: the last synced RV",
			lists:  []step{page("10", "", a), page("20", "", a)},
			watchs: []step{breaks(nextErr(gone()), added("b", "11"), modified("b", "12")), hangs().final()},
			want:   []req{list("0", DefaultPageSize), watchAt("10"), list("12", 0), watchAt("20")},
		},
		{
			name:   "after a too-large RV on the watch: quorum",
			lists:  []step{page("10", "", a), page("20", "", a)},
			watchs: []step{breaks(nextErr(tooLargeCause()), added("b", "11")), hangs().final()},
			want:   []req{list("0", DefaultPageSize), watchAt("10"), list("", DefaultPageSize), watchAt("20")},
		},
		{
			name:   "after a 410 on the relist itself: quorum",
			lists:  []step{page("10", "", a), fail(listErr(expired())), page("20", "", a)},
			watchs: []step{breaks(nextErr(expired()), added("b", "11")), hangs().final()},
			want:   []req{list("0", DefaultPageSize), watchAt("10"), list("11", 0), list("", DefaultPageSize), watchAt("20")},
		},
		{
			name:   "after a quorum relist, its RV again",
			lists:  []step{page("10", "", a), page("20", "", a), page("30", "", a)},
			watchs: []step{breaks(nextErr(tooLargeCause())), breaks(nextErr(expired())), hangs().final()},
			want: []req{
				list("0", DefaultPageSize), watchAt("10"), list("", DefaultPageSize),
				watchAt("20"), list("20", 0), watchAt("30"),
			},
		},
		{
			name:   "after a list without an RV and a 410 at watch start: quorum, not 0",
			lists:  []step{page("", "", a), page("30", "", a)},
			watchs: []step{fail(startErr(expired())), hangs().final()},
			want:   []req{list("0", DefaultPageSize), watchAt(""), list("", DefaultPageSize), watchAt("30")},
		},
		{
			name:   "after a list without an RV and a watch with events: quorum, not the events' RV",
			lists:  []step{page("", "", a), page("30", "", a, pod("b", "12"))},
			watchs: []step{closes(added("b", "12")), hangs().final()},
			want:   []req{list("0", DefaultPageSize), watchAt(""), list("", DefaultPageSize), watchAt("30")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, opts{NoWatchList: true})
				h.src.lists, h.src.watches = tt.lists, tt.watchs
				h.run()
				if diff := cmp.Diff(tt.want, h.src.reqs()); diff != "" {
					t.Fatalf("requests (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// The backoff goes back to its start once a watch has lasted a second: a
// healthy source is retried promptly after its next error, however many
// errors came before. (It used to go back only every two minutes, so a
// test or a controller that had seen a few errors waited up to a minute
// after the next one.)
func TestBackoffResetsAfterAHealthyWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tt := watchCase{
			watchs: []step{
				fail(startErr(unavailable())), fail(startErr(unavailable())), fail(startErr(unavailable())),
				fail(startErr(unavailable())), fail(startErr(unavailable())),
				every(2 * time.Second), // lasts, delivers nothing, closes
				fail(startErr(unavailable())),
				hangs().final(),
			},
			want: []req{list("0", DefaultPageSize), watchAt("10"), watchAt("10"), watchAt("10"), watchAt("10"),
				watchAt("10"), watchAt("10"), watchAt("10"), watchAt("10")},
		}
		for range 6 {
			tt.wantErrs = append(tt.wantErrs, isUnavailable)
		}
		h := tt.run(t)
		calls := h.src.recorded()
		grown := calls[6].at - h.src.doneAt(5) // after the fifth error
		again := calls[8].at - h.src.doneAt(7) // after the error that followed the healthy watch
		t.Logf("backoff after five errors %v; after an error following a healthy watch %v", grown, again)
		if grown < 4*DefaultBackoffInit {
			t.Errorf("backoff after five errors = %v, want it grown (at least %v)", grown, 4*DefaultBackoffInit)
		}
		if again < DefaultBackoffInit || again > 2*DefaultBackoffInit {
			t.Errorf("backoff after a healthy watch = %v, want it back at its start (%v to %v)", again, DefaultBackoffInit, 2*DefaultBackoffInit)
		}
		if calls[7].at != h.src.doneAt(6) {
			t.Errorf("a watch that lasted was not reopened at once")
		}
	})
}

func isUnavailable(err error) bool {
	var s interface{ Status() metav1.Status }
	return errors.As(err, &s) && s.Status().Code == 503
}

// A streaming list whose end bookmark never comes (client-go's fake
// clientset behind a ListerWatcher that does not declare it, a proxy that
// drops bookmarks) used to wait until the watch timed out, five minutes
// or more, and then again: WaitForSync never returned. Now a stream that
// goes streamStall without an event is given up on, the reason is
// reported, and LIST is used from then on.
func TestStalledStreamingListFallsBackToList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tt := watchCase{
			lists:    []step{page("10", "", pod("a", "5"))},
			watchs:   []step{hangs(added("a", "5")), hangs().final()},
			want:     []req{streamAt(""), list("0", DefaultPageSize), watchAt("10")},
			wantOps:  []string{"start", "replaced a@5", "start", "replaced a@5", "end@10"},
			wantErrs: []func(error) bool{func(err error) bool { return errors.Is(err, errNoProgress) }},
		}
		h := tt.run(t)
		calls := h.src.recorded()
		if g := calls[1].at - calls[0].at; g != streamStall {
			t.Errorf("LIST came %v after the stream started, want %v (the stall bound)", g, streamStall)
		}
	})
}

// A source served again after a park (factory's FollowDiscovery) fails its
// watch start with ErrParked and a 410: the reflector lists anew at once,
// with no backoff and no report, and watches from the new list.
func TestParkedResumeRelistsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, opts{NoWatchList: true})
		resumed := startErr(fmt.Errorf("%w: %w", source.ErrParked, expired()))
		h.src.lists = []step{page("10", "", pod("a", "10")), page("30", "", pod("b", "30"))}
		h.src.watches = []step{fail(resumed), hangs().final()}
		h.run()
		want := []req{list("0", DefaultPageSize), watchAt("10"), list("10", 0), watchAt("30")}
		if diff := cmp.Diff(want, h.src.reqs()); diff != "" {
			t.Fatalf("requests (-want +got):\n%s", diff)
		}
		calls := h.src.recorded()
		if calls[2].at != h.src.doneAt(1) {
			t.Errorf("the relist came %v after the resumed watch start, want at once", calls[2].at-h.src.doneAt(1))
		}
		if errs := h.reported(); len(errs) != 0 {
			t.Errorf("reported %v, want nothing", errs)
		}
	})
}
