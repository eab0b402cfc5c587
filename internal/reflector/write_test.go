package reflector

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
)

var errTransform = errors.New("transform refused the object")

// An object that Options.Prepare refuses (here object "bad", once) is
// reported with Prepare's own error (an informer's names the object), and
// is never pushed; the reflector relists after a backoff from the last RV the
// sink took: the resourceVersion never moves past the refused object.
func TestPrepareErrorRelists(t *testing.T) {
	tests := []struct {
		name          string
		opts          opts
		lists, watchs []step
		want          []req
		wantOps       []string
		wantType      fifo.DeltaType // the delta type Prepare refused
		wantErrRV     string         // LastSyncResourceVersion when the error is reported
		relistAt      int
	}{
		{
			name:   "watch event",
			opts:   opts{NoWatchList: true},
			lists:  []step{page("10", "", pod("a", "5")), page("20", "", pod("a", "5"), pod("b", "11"), pod("bad", "12"), pod("c", "13"))},
			watchs: []step{hangs(added("b", "11"), added("bad", "12"), added("c", "13")), hangs().final()},
			want:   []req{list("0", DefaultPageSize), watchAt("10"), list("11", 0), watchAt("20")},
			wantOps: []string{
				"start", "replaced a@5", "end@10", "add b@11",
				"start", "replaced a@5", "replaced b@11", "replaced bad@12", "replaced c@13", "end@20",
			},
			wantType:  fifo.Added,
			wantErrRV: "11",
			relistAt:  2,
		},
		{
			name:   "watch event after an update",
			opts:   opts{NoWatchList: true},
			lists:  []step{page("10", "", pod("a", "5")), page("20", "", pod("a", "11"), pod("bad", "12"))},
			watchs: []step{hangs(modified("a", "11"), modified("bad", "12"), modified("a", "13")), hangs().final()},
			want:   []req{list("0", DefaultPageSize), watchAt("10"), list("11", 0), watchAt("20")},
			wantOps: []string{
				"start", "replaced a@5", "end@10", "update a@11",
				"start", "replaced a@11", "replaced bad@12", "end@20",
			},
			wantType:  fifo.Updated,
			wantErrRV: "11",
			relistAt:  2,
		},
		{
			name:   "a page of a LIST: the page is not pushed",
			opts:   opts{NoWatchList: true},
			lists:  []step{page("10", "", pod("a", "5"), pod("bad", "6")), page("10", "", pod("a", "5"), pod("bad", "6"))},
			watchs: []step{hangs().final()},
			want:   []req{list("0", DefaultPageSize), list("0", DefaultPageSize), watchAt("10")},
			wantOps: []string{
				"start",
				"start", "replaced a@5", "replaced bad@6", "end@10",
			},
			wantType:  fifo.Replaced,
			wantErrRV: "",
			relistAt:  1,
		},
		{
			name: "a streaming list",
			watchs: []step{
				hangs(added("a", "5"), added("bad", "6"), endBookmark("10")),
				hangs(added("a", "5"), added("bad", "6"), endBookmark("10")).final(),
			},
			want: []req{streamAt(""), streamAt("")},
			wantOps: []string{
				"start", "replaced a@5",
				"start", "replaced a@5", "replaced bad@6", "end@10",
			},
			wantType:  fifo.Replaced,
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
				"start", "replaced a@5", "end@10", "add b@11",
				"start", "replaced a@5", "replaced b@11", "end@20",
			},
			wantType:  fifo.Deleted,
			wantErrRV: "11",
			relistAt:  1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var (
					mu        sync.Mutex
					refusedAs []fifo.DeltaType
				)
				o := tt.opts
				o.Prepare = func(dt fifo.DeltaType, p *corev1.Pod) (cache.Entry[*corev1.Pod], error) {
					mu.Lock()
					defer mu.Unlock()
					if p.Name == "bad" && len(refusedAs) == 0 {
						refusedAs = append(refusedAs, dt)
						return cache.Entry[*corev1.Pod]{}, errTransform
					}
					return cache.Entry[*corev1.Pod]{Key: cache.KeyOf(p), Object: p}, nil
				}
				h := newHarness(t, o)
				h.src.lists, h.src.watches = tt.lists, tt.watchs
				h.run()
				if diff := cmp.Diff(tt.want, h.src.reqs()); diff != "" {
					t.Fatalf("requests (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.wantOps, h.sink.recorded()); diff != "" {
					t.Errorf("deltas (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]fifo.DeltaType{tt.wantType}, refusedAs); diff != "" {
					t.Errorf("Prepare refused (-want +got):\n%s", diff)
				}
				h.mu.Lock()
				errs := h.errs
				h.mu.Unlock()
				if len(errs) != 1 {
					t.Fatalf("Errors delivered %v, want one", errs)
				}
				if errs[0].err != errTransform {
					t.Errorf("reported %v, want Prepare's error as it is", errs[0].err)
				}
				if errs[0].rv != tt.wantErrRV {
					t.Errorf("LastSyncResourceVersion was %q when the object was refused, want %q (not past it)", errs[0].rv, tt.wantErrRV)
				}
				h.checkGaps([]int{tt.relistAt}, nil)
			})
		})
	}
}

// The default Prepare refuses an object without a name: cache.ErrNoName
// is reported, then a relist.
func TestDefaultPrepareRefusesNameless(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, opts{NoWatchList: true})
		h.src.lists = []step{page("10", "", pod("a", "5")), page("20", "", pod("a", "5"))}
		h.src.watches = []step{hangs(added("", "11")), hangs().final()}
		h.run()
		want := []req{list("0", DefaultPageSize), watchAt("10"), list("10", 0), watchAt("20")}
		if diff := cmp.Diff(want, h.src.reqs()); diff != "" {
			t.Fatalf("requests (-want +got):\n%s", diff)
		}
		errs := h.reported()
		if len(errs) != 1 || errs[0] != cache.ErrNoName {
			t.Errorf("Errors delivered %v, want cache.ErrNoName", errs)
		}
	})
}
