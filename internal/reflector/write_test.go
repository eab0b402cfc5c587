package reflector

import (
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/fifo"
)

var errTransform = errors.New("transform refused the object")

// A queue write that fails (here the queue's Transform refuses object "bad"
// once) is reported as a *WriteError; the reflector relists after a backoff
// from the last RV the queue took: the resourceVersion never moves past the
// failed event.
func TestQueueWriteErrorRelists(t *testing.T) {
	tests := []struct {
		name          string
		opts          Options
		lists, watchs []step
		want          []req
		wantOps       []string
		wantOp        string // WriteError.Op
		wantErrRV     string // LastSyncResourceVersion when the error is reported
		relistAt      int
	}{
		{
			name:   "watch event",
			opts:   Options{NoWatchList: true},
			lists:  []step{page("10", "", pod("a", "5")), page("20", "", pod("a", "5"), pod("b", "11"), pod("bad", "12"), pod("c", "13"))},
			watchs: []step{hangs(added("b", "11"), added("bad", "12"), added("c", "13")), hangs().final()},
			want:   []req{list("0", DefaultPageSize), watchAt("10"), list("11", 0), watchAt("20")},
			wantOps: []string{
				"replace@10 [a@5]", "add b@11", "! add bad@12",
				"replace@20 [a@5 b@11 bad@12 c@13]",
			},
			wantOp:    "ADDED",
			wantErrRV: "11",
			relistAt:  2,
		},
		{
			name:   "watch event after an update",
			opts:   Options{NoWatchList: true},
			lists:  []step{page("10", "", pod("a", "5")), page("20", "", pod("a", "11"), pod("bad", "12"))},
			watchs: []step{hangs(modified("a", "11"), added("bad", "12"), modified("a", "13")), hangs().final()},
			want:   []req{list("0", DefaultPageSize), watchAt("10"), list("11", 0), watchAt("20")},
			wantOps: []string{
				"replace@10 [a@5]", "update a@11", "! add bad@12",
				"replace@20 [a@11 bad@12]",
			},
			wantOp:    "ADDED",
			wantErrRV: "11",
			relistAt:  2,
		},
		{
			name:   "Replace of a LIST",
			opts:   Options{NoWatchList: true},
			lists:  []step{page("10", "", pod("a", "5"), pod("bad", "6")), page("10", "", pod("a", "5"), pod("bad", "6"))},
			watchs: []step{hangs().final()},
			want:   []req{list("0", DefaultPageSize), list("0", DefaultPageSize), watchAt("10")},
			wantOps: []string{
				"! replace@10 [a@5 bad@6]", "replace@10 [a@5 bad@6]",
			},
			wantOp:    "replace",
			wantErrRV: "",
			relistAt:  1,
		},
		{
			name: "Replace of a streaming list",
			watchs: []step{
				hangs(added("a", "5"), added("bad", "6"), endBookmark("10")),
				hangs(added("a", "5"), added("bad", "6"), endBookmark("10")).final(),
			},
			want: []req{streamAt(""), streamAt("")},
			wantOps: []string{
				"! replace@10 [a@5 bad@6]", "replace@10 [a@5 bad@6]",
			},
			wantOp:    "replace",
			wantErrRV: "",
			relistAt:  1,
		},
		{
			name: "watch event after a streaming list",
			watchs: []step{
				hangs(added("a", "5"), endBookmark("10"), added("b", "11"), deleted("bad", "12"), added("c", "13")),
				hangs(added("a", "5"), added("b", "11"), endBookmark("20")).final(),
			},
			want: []req{streamAt(""), streamAt("11")},
			wantOps: []string{
				"replace@10 [a@5]", "add b@11", "! delete bad@12",
				"replace@20 [a@5 b@11]",
			},
			wantOp:    "DELETED",
			wantErrRV: "11",
			relistAt:  1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var refused atomic.Bool
				h := newHarness(t, tt.opts, fifo.Options[*corev1.Pod]{
					Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
						if p.Name == "bad" && refused.CompareAndSwap(false, true) {
							return nil, errTransform
						}
						return p, nil
					},
				})
				h.src.lists, h.src.watches = tt.lists, tt.watchs
				h.run()
				if diff := cmp.Diff(tt.want, h.src.reqs()); diff != "" {
					t.Fatalf("requests (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.wantOps, h.q.recorded()); diff != "" {
					t.Errorf("queue writes (-want +got):\n%s", diff)
				}
				h.mu.Lock()
				errs, rvs := h.errs, h.errRVs
				h.mu.Unlock()
				if len(errs) != 1 {
					t.Fatalf("OnError got %v, want one WriteError", errs)
				}
				var we *WriteError
				if !errors.As(errs[0], &we) || we.Op != tt.wantOp || !errors.Is(errs[0], errTransform) {
					t.Errorf("reported %v, want a *WriteError{Op: %q} wrapping the transform error", errs[0], tt.wantOp)
				}
				if rvs[0] != tt.wantErrRV {
					t.Errorf("LastSyncResourceVersion was %q when the write failed, want %q (not past the failed event)", rvs[0], tt.wantErrRV)
				}
				calls := h.src.recorded()
				if g := gap(calls, tt.relistAt-1, tt.relistAt); g < DefaultBackoffInit {
					t.Errorf("relist %v came %v after %v, want at least %v of backoff", calls[tt.relistAt].req, g, calls[tt.relistAt-1].req, DefaultBackoffInit)
				}
			})
		})
	}
}
