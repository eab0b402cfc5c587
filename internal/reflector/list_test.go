package reflector

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/typedinformer/informer/source"
)

// Fault 5: pagination. The first list (RV "0") and quorum lists (RV "") are
// paged with Limit = PageSize; pages are followed by their continue token;
// a token that expires (or is refused) midway gives one full unpaged quorum
// list, opened with a new ReplaceStart; a list at a known RV is not paged,
// unless the server paged the list at "0" (it has no watch cache that
// would serve the list whole).
// Each page is pushed as it arrives (before the next page is asked for), and
// a list is closed by a ReplaceEnd only once complete.
func TestPagination(t *testing.T) {
	a, b, c, d, e, f := pod("a", "1"), pod("b", "2"), pod("c", "3"), pod("d", "4"), pod("e", "5"), pod("f", "6")
	tests := []struct {
		name          string
		pageSize      int64
		lists, watchs []step
		want          []req
		wantOps       []string
		wantErrs      int
		// sameAttempt: want[i] and want[i+1] come without a backoff
		// between them; afterBackoff: want[i] comes after one.
		sameAttempt, afterBackoff []int
		// wantPushed[i]: the deltas pushed when want[i] was asked for
		// (nil: not checked).
		wantPushed []int
	}{
		{
			name:     "one page, default page size",
			lists:    []step{page("10", "", a, b)},
			watchs:   []step{hangs().final()},
			want:     []req{list("0", DefaultPageSize), watchAt("10")},
			wantOps:  []string{"start", "replaced a@1", "replaced b@2", "end@10"},
			pageSize: 0,
		},
		{
			name:        "pages followed by continue, each pushed as it arrives",
			pageSize:    2,
			lists:       []step{page("10", "c1", a, b), page("10", "c2", c, d), page("10", "", e)},
			watchs:      []step{hangs().final()},
			want:        []req{list("0", 2), next("c1", 2), next("c2", 2), watchAt("10")},
			wantOps:     []string{"start", "replaced a@1", "replaced b@2", "replaced c@3", "replaced d@4", "replaced e@5", "end@10"},
			sameAttempt: []int{0, 1},
			wantPushed:  []int{1, 3, 5, 7}, // the ReplaceStart comes before the first request
		},
		{
			name:     "continue token expired on page 3: one full list",
			pageSize: 2,
			lists: []step{
				page("10", "c1", a, b), page("10", "c2", c, d), fail(listErr(expired())),
				page("15", "", a, b, c, d, e, f),
			},
			watchs: []step{hangs().final()},
			want:   []req{list("0", 2), next("c1", 2), next("c2", 2), list("", 0), watchAt("15")},
			wantOps: []string{
				"start", "replaced a@1", "replaced b@2", "replaced c@3", "replaced d@4",
				"start", "replaced a@1", "replaced b@2", "replaced c@3", "replaced d@4", "replaced e@5", "replaced f@6", "end@15",
			},
			sameAttempt: []int{2},
		},
		{
			name:     "continue token refused with 400: one full list",
			pageSize: 2,
			lists: []step{
				page("10", "c1", a, b), fail(listErr(apierrors.NewBadRequest("invalid continue token"))),
				page("15", "", a, b, c),
			},
			watchs:      []step{hangs().final()},
			want:        []req{list("0", 2), next("c1", 2), list("", 0), watchAt("15")},
			wantOps:     []string{"start", "replaced a@1", "replaced b@2", "start", "replaced a@1", "replaced b@2", "replaced c@3", "end@15"},
			sameAttempt: []int{0, 1},
		},
		{
			name:     "continue token expired, then the full list fails",
			pageSize: 2,
			lists: []step{
				page("10", "c1", a, b), fail(listErr(expired())), fail(listErr(unavailable())),
				page("15", "c1", a, b), page("15", "", c),
			},
			watchs: []step{hangs().final()},
			want: []req{
				list("0", 2), next("c1", 2), list("", 0),
				list("0", 2), next("c1", 2), watchAt("15"),
			},
			wantOps: []string{
				"start", "replaced a@1", "replaced b@2", "start",
				"start", "replaced a@1", "replaced b@2", "replaced c@3", "end@15",
			},
			wantErrs:     1,
			afterBackoff: []int{3},
		},
		{
			name:     "503 on page 2: no ReplaceEnd, the next attempt starts at page 1",
			pageSize: 2,
			lists: []step{
				page("10", "c1", a, b), fail(listErr(unavailable())),
				page("11", "c1", a, b), page("11", "", c),
			},
			watchs:       []step{hangs().final()},
			want:         []req{list("0", 2), next("c1", 2), list("0", 2), next("c1", 2), watchAt("11")},
			wantOps:      []string{"start", "replaced a@1", "replaced b@2", "start", "replaced a@1", "replaced b@2", "replaced c@3", "end@11"},
			wantErrs:     1,
			afterBackoff: []int{2},
		},
		{
			name:     "relist at a known RV is one unpaged LIST",
			pageSize: 2,
			lists:    []step{page("10", "", a), page("20", "", a, b, c)},
			watchs:   []step{breaks(nextErr(expired())), hangs().final()},
			want:     []req{list("0", 2), watchAt("10"), list("10", 0), watchAt("20")},
			wantOps:  []string{"start", "replaced a@1", "end@10", "start", "replaced a@1", "replaced b@2", "replaced c@3", "end@20"},
		},
		{
			// A server that pages a list at "0" has no watch cache
			// serving whole lists: paging the relist costs nothing
			// there, and lets each page go once applied.
			name:     "relist at a known RV is paged where the list at 0 was",
			pageSize: 2,
			lists:    []step{page("10", "c1", a, b), page("10", "", c), page("20", "c2", a, b), page("20", "", c, d)},
			watchs:   []step{breaks(nextErr(expired())), hangs().final()},
			want:     []req{list("0", 2), next("c1", 2), watchAt("10"), list("10", 2), next("c2", 2), watchAt("20")},
			wantOps: []string{
				"start", "replaced a@1", "replaced b@2", "replaced c@3", "end@10",
				"start", "replaced a@1", "replaced b@2", "replaced c@3", "replaced d@4", "end@20",
			},
			sameAttempt: []int{3},
		},
		{
			name:     "quorum relist is paged",
			pageSize: 2,
			lists: []step{
				page("10", "", a), fail(listErr(expired())),
				page("20", "c1", a, b), page("20", "", c),
			},
			watchs: []step{breaks(nextErr(expired())), hangs().final()},
			want: []req{
				list("0", 2), watchAt("10"),
				list("10", 0), list("", 2), next("c1", 2),
				watchAt("20"),
			},
			wantOps:     []string{"start", "replaced a@1", "end@10", "start", "start", "replaced a@1", "replaced b@2", "replaced c@3", "end@20"},
			sameAttempt: []int{2, 3},
		},
	}
	for _, tt := range tests {
		for _, byItem := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/item-by-item=%v", tt.name, byItem), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var items *itemSource
					h := newHarnessOf(t, opts{NoWatchList: true, PageSize: tt.pageSize}, func(s *scriptSource) source.Source[*corev1.Pod] {
						if !byItem {
							return s
						}
						items = &itemSource{scriptSource: s}
						return items
					})
					h.src.lists, h.src.watches = tt.lists, tt.watchs
					h.run()
					if diff := cmp.Diff(tt.want, h.src.reqs()); diff != "" {
						t.Fatalf("requests (-want +got):\n%s", diff)
					}
					if diff := cmp.Diff(tt.wantOps, h.sink.recorded()); diff != "" {
						t.Errorf("deltas (-want +got):\n%s", diff)
					}
					errs := h.reported()
					if len(errs) != tt.wantErrs {
						t.Errorf("Errors delivered %d errors %v, want %d", len(errs), errs, tt.wantErrs)
					}
					for _, err := range errs {
						if !apierrors.IsServiceUnavailable(err) {
							t.Errorf("reported %v, want only the 503", err)
						}
					}
					calls := h.src.recorded()
					for _, i := range tt.sameAttempt {
						h.checkGaps(nil, []int{i + 1})
					}
					h.checkGaps(tt.afterBackoff, nil)
					for i, n := range tt.wantPushed {
						if calls[i].pushed != n {
							t.Errorf("%v asked for with %d deltas pushed, want %d", calls[i].req, calls[i].pushed, n)
						}
					}
					if items != nil && items.lists == 0 {
						t.Errorf("ListItems was never called")
					}
				})
			})
		}
	}
}
