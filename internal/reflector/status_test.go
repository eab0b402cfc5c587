package reflector

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/metrics"
)

// wantStatus checks LastError (by identity), LastErrorTime and StaleSince;
// for a nil err, both times must be zero.
func wantStatus(t *testing.T, step string, st Status, err error, errTime, staleSince time.Time) {
	t.Helper()
	if st.LastError != err {
		t.Errorf("%s: LastError = %v, want %v", step, st.LastError, err)
	}
	if !st.LastErrorTime.Equal(errTime) || st.LastErrorTime.IsZero() != errTime.IsZero() {
		t.Errorf("%s: LastErrorTime = %v, want %v", step, st.LastErrorTime, errTime)
	}
	if !st.StaleSince.Equal(staleSince) || st.StaleSince.IsZero() != staleSince.IsZero() {
		t.Errorf("%s: StaleSince = %v, want %v", step, st.StaleSince, staleSince)
	}
}

// changed checks whether c is closed, and returns the current Changed.
func changed(t *testing.T, step string, r *Reflector[*corev1.Pod], c <-chan struct{}, want bool) <-chan struct{} {
	t.Helper()
	select {
	case <-c:
		if !want {
			t.Errorf("%s: Changed closed, but LastError did not change", step)
		}
	default:
		if want {
			t.Errorf("%s: Changed not closed after LastError changed", step)
		}
	}
	return r.Changed()
}

// The status through a run of errors and recoveries: LastError is each
// error as it happens, LastErrorTime its time, StaleSince the first error
// of the run; a list handed over or a watch established clears all three;
// Changed is closed on each change of LastError and only then; Errors
// delivers every error, in order. Requests wait on gates so that each state
// can be looked at.
func TestStatusLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g1, g2, g3, g4 := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
		feed := make(chan item)
		e1, e2 := listErr(unavailable()), listErr(unavailable())
		e3, e4 := startErr(connRefused()), nextErr(leaderChanged())
		h := newHarness(t, opts{NoWatchList: true})
		h.src.lists = []step{fail(e1), fail(e2).after(g1), page("10", "", pod("a", "5")).after(g2)}
		h.src.watches = []step{fail(e3).after(g3), fed(feed).after(g4), hangs().final()}
		var zero time.Time
		start := time.Now()
		c := h.r.Changed()
		wantStatus(t, "before Run", h.r.Status(), nil, zero, zero)
		done := make(chan error, 1)
		go func() { done <- h.r.Run(h.ctx) }()

		synctest.Wait() // the first LIST failed; Run backs off
		wantStatus(t, "first LIST failed", h.r.Status(), e1, start, start)
		c = changed(t, "first LIST failed", h.r, c, true)

		time.Sleep(time.Minute) // the second LIST waits on g1
		wantStatus(t, "second LIST pending", h.r.Status(), e1, start, start)
		c = changed(t, "second LIST pending", h.r, c, false)
		close(g1)
		synctest.Wait()
		t2 := time.Now()
		wantStatus(t, "second LIST failed", h.r.Status(), e2, t2, start)
		c = changed(t, "second LIST failed", h.r, c, true)

		time.Sleep(time.Minute) // the third LIST waits on g2
		close(g2)
		synctest.Wait() // the list is handed over; the watch waits on g3
		wantStatus(t, "list handed over", h.r.Status(), nil, zero, zero)
		c = changed(t, "list handed over", h.r, c, true)

		close(g3)
		synctest.Wait()
		t3 := time.Now()
		wantStatus(t, "watch start failed", h.r.Status(), e3, t3, t3)
		c = changed(t, "watch start failed", h.r, c, true)

		time.Sleep(time.Minute) // the second watch waits on g4
		close(g4)
		synctest.Wait()
		wantStatus(t, "watch established", h.r.Status(), nil, zero, zero)
		c = changed(t, "watch established", h.r, c, true)

		feed <- item{ev: added("b", "11")}
		synctest.Wait()
		wantStatus(t, "event while healthy", h.r.Status(), nil, zero, zero)
		c = changed(t, "event while healthy", h.r, c, false)

		feed <- item{err: e4}
		synctest.Wait()
		t4 := time.Now()
		wantStatus(t, "error in the stream", h.r.Status(), e4, t4, t4)
		c = changed(t, "error in the stream", h.r, c, true)

		if err := <-done; err != nil { // the third watch is established, then the script ends the run
			t.Errorf("Run = %v, want nil", err)
		}
		wantStatus(t, "re-watch established", h.r.Status(), nil, zero, zero)
		changed(t, "re-watch established", h.r, c, true)
		h.finish()

		want := []reported{{e1, 0, ""}, {e2, t2.Sub(start), ""}, {e3, t3.Sub(start), "10"}, {e4, t4.Sub(start), "11"}}
		h.mu.Lock()
		got := h.errs
		h.mu.Unlock()
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b error) bool { return a == b }), cmp.AllowUnexported(reported{})); diff != "" {
			t.Errorf("Errors delivered (-want +got):\n%s", diff)
		}
		st := h.r.Status().Stats
		wantStats := metrics.Stats{Lists: 3, Watches: 3, WatchRestarts: 2, Events: 1, Errors: 4} // the second and third watches resume from "10"
		if st != wantStats {
			t.Errorf("Stats = %+v, want %+v", st, wantStats)
		}
	})
}

// An event or a bookmark proves the source healthy too: it clears the
// error and closes Changed. (In a run, a watch is established before any
// of its events, so this is checked on apply directly.) A malformed event
// does not.
func TestStatusClearedByEventAndBookmark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, opts{})
		ctx := context.Background()
		var zero time.Time
		for _, ev := range []podEvent{added("a", "5"), modified("a", "6"), deleted("a", "7"), bookmark("8"), bookmark("")} {
			step := string(ev.Type) + " " + name(ev.Object)
			boom := errors.New("boom")
			h.r.report(ctx, boom)
			now := time.Now()
			wantStatus(t, step+": before", h.r.Status(), boom, now, now)
			c := h.r.Changed()
			if err := h.r.apply(podEvent{Type: "WEIRD", Object: pod("b", "1")}); err == nil {
				t.Errorf("apply of a WEIRD event = nil, want an error")
			}
			wantStatus(t, step+": after a malformed event", h.r.Status(), boom, now, now)
			c = changed(t, step+": after a malformed event", h.r, c, false)
			if err := h.r.apply(ev); err != nil {
				t.Fatalf("apply(%s) = %v", step, err)
			}
			wantStatus(t, step, h.r.Status(), nil, zero, zero)
			changed(t, step, h.r, c, true)
			time.Sleep(time.Second)
		}
		if got := h.r.LastSyncResourceVersion(); got != "8" {
			t.Errorf("LastSyncResourceVersion = %q, want 8", got)
		}
		h.stopErrors()
		if got := len(h.reported()); got != 5 {
			t.Errorf("%d errors delivered, want 5", got)
		}
	})
}

// Before the first list succeeds, a LIST the server refuses as malformed
// (400, 405, 406, 415, 422) ends Run with that error, at once: the same
// request cannot succeed. The error is reported too. Other errors, and the
// same errors after a first list, are retried.
func TestRunFatalOnMalformedFirstList(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	malformed := []struct {
		name string
		err  func() error
	}{
		{"400", badRequest},
		{"405", func() error { return apierrors.NewMethodNotSupported(gr, "list") }},
		{"406", func() error {
			return apierrors.NewGenericServerResponse(406, "list", gr, "", "not acceptable", 0, false)
		}},
		{"415", func() error {
			return apierrors.NewGenericServerResponse(415, "list", gr, "", "unsupported media type", 0, false)
		}},
		{"422", invalid},
	}
	for _, m := range malformed {
		t.Run(m.name+"/first LIST", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := listErr(m.err())
				h := newHarness(t, opts{NoWatchList: true})
				h.src.lists = []step{fail(e)}
				start := time.Now()
				if err := h.r.Run(h.ctx); err != e {
					t.Errorf("Run = %v, want the LIST's error %v", err, e)
				}
				if d := time.Since(start); d != 0 {
					t.Errorf("Run returned after %v, want at once", d)
				}
				h.finish()
				if diff := cmp.Diff([]req{list("0", DefaultPageSize)}, h.src.reqs()); diff != "" {
					t.Errorf("requests (-want +got):\n%s", diff)
				}
				if errs := h.reported(); len(errs) != 0 {
					t.Errorf("Errors delivered %v, want none: Run returns the fatal error, so it is handled once", errs)
				}
				wantStatus(t, "after Run", h.r.Status(), e, start, start)
			})
		})
		t.Run(m.name+"/streaming refused, then the LIST", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := listErr(m.err())
				h := newHarness(t, opts{})
				h.src.watches = []step{fail(startErr(badRequest()))}
				h.src.lists = []step{fail(e)}
				if err := h.r.Run(h.ctx); err != e {
					t.Errorf("Run = %v, want the LIST's error %v", err, e)
				}
				h.finish()
				if diff := cmp.Diff([]req{streamAt(""), list("0", DefaultPageSize)}, h.src.reqs()); diff != "" {
					t.Errorf("requests (-want +got):\n%s", diff)
				}
			})
		})
		t.Run(m.name+"/after a first list", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := listErr(m.err())
				h := newHarness(t, opts{NoWatchList: true})
				h.src.lists = []step{page("10", "", pod("a", "5")), fail(e), page("20", "", pod("a", "5"))}
				h.src.watches = []step{breaks(nextErr(expired())), hangs().final()}
				h.run()
				want := []req{list("0", DefaultPageSize), watchAt("10"), list("10", 0), list("10", 0), watchAt("20")}
				if diff := cmp.Diff(want, h.src.reqs()); diff != "" {
					t.Fatalf("requests (-want +got):\n%s", diff)
				}
				h.checkGaps([]int{3}, nil)
				if errs := h.reported(); len(errs) != 1 || errs[0] != e {
					t.Errorf("Errors delivered %v, want the refused relist's error", errs)
				}
			})
		})
	}
	t.Run("403 on the first LIST is retried", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, opts{NoWatchList: true})
			h.src.lists = []step{fail(listErr(forbidden())), page("10", "", pod("a", "5"))}
			h.src.watches = []step{hangs().final()}
			h.run()
			want := []req{list("0", DefaultPageSize), list("0", DefaultPageSize), watchAt("10")}
			if diff := cmp.Diff(want, h.src.reqs()); diff != "" {
				t.Fatalf("requests (-want +got):\n%s", diff)
			}
			h.checkGaps([]int{1}, nil)
		})
	})
}
