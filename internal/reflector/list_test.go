package reflector

import (
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/typedinformer/informer/fifo"
)

// Fault 5: pagination. The first list (RV "0") and quorum lists (RV "") are
// paged with Limit = PageSize; pages are followed by their continue token;
// a token that expires midway gives one full unpaged quorum list; a list at
// a known RV is not paged. The queue gets one Replace per complete list and
// never a half list.
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
	}{
		{
			name:     "one page, default page size",
			lists:    []step{page("10", "", a, b)},
			watchs:   []step{hangs().final()},
			want:     []req{list("0", DefaultPageSize), watchAt("10")},
			wantOps:  []string{"replace@10 [a@1 b@2]"},
			pageSize: 0,
		},
		{
			name:        "pages followed by continue",
			pageSize:    2,
			lists:       []step{page("10", "c1", a, b), page("10", "c2", c, d), page("10", "", e)},
			watchs:      []step{hangs().final()},
			want:        []req{list("0", 2), next("c1", 2), next("c2", 2), watchAt("10")},
			wantOps:     []string{"replace@10 [a@1 b@2 c@3 d@4 e@5]"},
			sameAttempt: []int{0, 1},
		},
		{
			name:     "continue token expired on page 3: one full list",
			pageSize: 2,
			lists: []step{
				page("10", "c1", a, b), page("10", "c2", c, d), fail(listErr(expired())),
				page("15", "", a, b, c, d, e, f),
			},
			watchs:      []step{hangs().final()},
			want:        []req{list("0", 2), next("c1", 2), next("c2", 2), list("", 0), watchAt("15")},
			wantOps:     []string{"replace@15 [a@1 b@2 c@3 d@4 e@5 f@6]"},
			sameAttempt: []int{2},
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
			wantOps:      []string{"replace@15 [a@1 b@2 c@3]"},
			wantErrs:     1,
			afterBackoff: []int{3},
		},
		{
			name:     "503 on page 2: no Replace, the next attempt starts at page 1",
			pageSize: 2,
			lists: []step{
				page("10", "c1", a, b), fail(listErr(unavailable())),
				page("11", "c1", a, b), page("11", "", c),
			},
			watchs:       []step{hangs().final()},
			want:         []req{list("0", 2), next("c1", 2), list("0", 2), next("c1", 2), watchAt("11")},
			wantOps:      []string{"replace@11 [a@1 b@2 c@3]"},
			wantErrs:     1,
			afterBackoff: []int{2},
		},
		{
			name:     "relist at a known RV is one unpaged LIST",
			pageSize: 2,
			lists:    []step{page("10", "", a), page("20", "", a, b, c)},
			watchs:   []step{closes(errorEvent(expired())), hangs().final()},
			want:     []req{list("0", 2), watchAt("10"), list("10", 0), watchAt("20")},
			wantOps:  []string{"replace@10 [a@1]", "replace@20 [a@1 b@2 c@3]"},
		},
		{
			name:     "quorum relist is paged",
			pageSize: 2,
			lists: []step{
				page("10", "", a), fail(listErr(expired())),
				page("20", "c1", a, b), page("20", "", c),
			},
			watchs: []step{closes(errorEvent(expired())), hangs().final()},
			want: []req{
				list("0", 2), watchAt("10"),
				list("10", 0), list("", 2), next("c1", 2),
				watchAt("20"),
			},
			wantOps:     []string{"replace@10 [a@1]", "replace@20 [a@1 b@2 c@3]"},
			sameAttempt: []int{2, 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Options{NoWatchList: true, PageSize: tt.pageSize}, fifo.Options[*corev1.Pod]{})
				h.src.lists, h.src.watches = tt.lists, tt.watchs
				h.run()
				if diff := cmp.Diff(tt.want, h.src.reqs()); diff != "" {
					t.Fatalf("requests (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.wantOps, h.q.recorded()); diff != "" {
					t.Errorf("queue writes (-want +got):\n%s", diff)
				}
				errs := h.reported()
				if len(errs) != tt.wantErrs {
					t.Errorf("OnError got %d errors %v, want %d", len(errs), errs, tt.wantErrs)
				}
				for _, err := range errs {
					if !apierrors.IsServiceUnavailable(err) {
						t.Errorf("reported %v, want only the 503", err)
					}
				}
				calls := h.src.recorded()
				for _, i := range tt.sameAttempt {
					if g := gap(calls, i, i+1); g != 0 {
						t.Errorf("%v came %v after %v, want no backoff between them", calls[i+1].req, g, calls[i].req)
					}
				}
				for _, i := range tt.afterBackoff {
					if g := gap(calls, i-1, i); g < DefaultBackoffInit {
						t.Errorf("%v came %v after %v, want at least %v of backoff", calls[i].req, g, calls[i-1].req, DefaultBackoffInit)
					}
				}
			})
		})
	}
}
