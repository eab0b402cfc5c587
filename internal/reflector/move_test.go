package reflector

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// shardOf is a shard of the pods whose name starts with one of prefixes.
func shardOf(sel string, prefixes ...string) *Shard[*corev1.Pod] {
	return &Shard[*corev1.Pod]{Selector: sel, Contains: func(p *corev1.Pod) bool {
		for _, pre := range prefixes {
			if strings.HasPrefix(p.Name, pre) {
				return true
			}
		}
		return false
	}}
}

// TestMove: a move stops the watch in progress; the sink gets a Moved
// delta after the old shard's last delta and before the new shard's list,
// which asks for the new selector at once (no backoff) and is filtered on
// the client by the new shard when the server does not echo it. A move to
// no shard pauses the reflector: it makes no request until the next move.
// WaitMoved counts the Moved deltas pushed.
func TestMove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, opts{Shard: shardOf("a", "a")})
		h.src.lists = []step{
			page("10", "", pod("a1", "5"), pod("b1", "6")),
			page("20", "", pod("a1", "5"), pod("b1", "6")),
			page("30", "", pod("b1", "6"), pod("c1", "7")),
		}
		h.src.watches = []step{hangs(added("a2", "11"), added("b2", "12")), hangs(), hangs().final()}
		done := make(chan struct{})
		go func() { defer close(done); h.run() }()
		synctest.Wait() // listed a, watching

		gen := h.r.Move(shardOf("b", "b"))
		synctest.Wait()
		if marks, err := h.r.WaitMoved(t.Context(), gen, nil); err != nil || marks != 1 {
			t.Fatalf("WaitMoved = %d, %v; want 1 Moved delta", marks, err)
		}
		if sel := h.r.Status().Shard.Selector; sel != "b" {
			t.Errorf("selector after the move %q, want b", sel)
		}
		n := len(h.src.reqs())
		gen = h.r.Move(nil)
		synctest.Wait()
		if marks, err := h.r.WaitMoved(t.Context(), gen, nil); err != nil || marks != 2 {
			t.Fatalf("WaitMoved = %d, %v; want 2 Moved deltas", marks, err)
		}
		if got := len(h.src.reqs()); got != n {
			t.Errorf("%d requests while paused, want none: %v", got-n, h.src.reqs()[n:])
		}
		h.r.Move(shardOf("c", "b", "c"))
		<-done

		want := []req{list("0", DefaultPageSize), watchAt("10"), list("12", 0), watchAt("20"), list("20", 0), watchAt("30")}
		if diff := cmp.Diff(want, h.src.reqs()); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
		var sels []string
		for _, c := range h.src.calls {
			sels = append(sels, c.opts.ShardSelector)
		}
		if diff := cmp.Diff([]string{"a", "a", "b", "b", "c", "c"}, sels); diff != "" {
			t.Errorf("shard selectors sent (-want +got):\n%s", diff)
		}
		wantOps := []string{
			"start", "replaced a1@5", "end@10", "add a2@11", "bookmark@12", // b2 is outside a
			"Moved", "start", "replaced b1@6", "end@20",
			"Moved",
			"Moved", "start", "replaced b1@6", "replaced c1@7", "end@30",
		}
		var got []string
		for _, d := range h.sink.deltas() {
			got = append(got, render(d))
		}
		if diff := cmp.Diff(wantOps, got); diff != "" {
			t.Errorf("deltas (-want +got):\n%s", diff)
		}
		if errs := h.reported(); len(errs) != 0 {
			t.Errorf("errors %v, want none", errs)
		}
	})
}
