package reflector

import (
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
)

// With PushRefused, an object Prepare refuses is not refused by the
// reflector: the sink gets a Refused delta in its place, with the object's
// key and resourceVersion and Prepare's error, in a watch, a LIST page or
// a streaming list alike; the reflector moves past it with no error and no
// relist. A deletion Prepare makes by key alone carries the event's
// resourceVersion.
func TestPushRefused(t *testing.T) {
	tests := []struct {
		name          string
		opts          opts
		lists, watchs []step
		want          []req
		wantOps       []string
		wantRV        string // LastSyncResourceVersion at the end
	}{
		{
			name:    "watch event",
			opts:    opts{NoWatchList: true},
			lists:   []step{page("10", "", pod("a", "5"))},
			watchs:  []step{hangs(added("bad", "11"), added("c", "12")).final()},
			want:    []req{list("0", DefaultPageSize), watchAt("10")},
			wantOps: []string{"start", "replaced a@5", "end@10", "refused bad@11: transform refused the object", "add c@12"},
			wantRV:  "12",
		},
		{
			name:    "a page of a LIST",
			opts:    opts{NoWatchList: true},
			lists:   []step{page("10", "", pod("a", "5"), pod("bad", "6"), pod("b", "7"))},
			watchs:  []step{hangs().final()},
			want:    []req{list("0", DefaultPageSize), watchAt("10")},
			wantOps: []string{"start", "replaced a@5", "refused bad@6: transform refused the object", "replaced b@7", "end@10"},
			wantRV:  "10",
		},
		{
			name:    "a streaming list",
			watchs:  []step{hangs(added("a", "5"), added("bad", "6"), endBookmark("10"), added("c", "11")).final()},
			want:    []req{streamAt("")},
			wantOps: []string{"start", "replaced a@5", "refused bad@6: transform refused the object", "end@10", "add c@11"},
			wantRV:  "11",
		},
		{
			name:    "a deletion by key",
			opts:    opts{NoWatchList: true},
			lists:   []step{page("10", "", pod("bad", "5"))},
			watchs:  []step{hangs(deleted("bad", "11")).final()},
			want:    []req{list("0", DefaultPageSize), watchAt("10")},
			wantOps: []string{"start", "refused bad@5: transform refused the object", "end@10", "delete <nil>@11"},
			wantRV:  "11",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := tt.opts
				o.PushRefused = true
				o.Prepare = func(dt fifo.DeltaType, p *corev1.Pod) (cache.Entry[*corev1.Pod], error) {
					switch {
					case p.Name != "bad":
						return cache.Entry[*corev1.Pod]{Key: cache.KeyOf(p), Object: p}, nil
					case dt == fifo.Deleted:
						return cache.Entry[*corev1.Pod]{Key: cache.KeyOf(p)}, nil
					}
					return cache.Entry[*corev1.Pod]{}, errTransform
				}
				h := newHarness(t, o)
				h.src.lists, h.src.watches = tt.lists, tt.watchs
				h.run()
				if diff := cmp.Diff(tt.want, h.src.reqs()); diff != "" {
					t.Fatalf("requests (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.wantOps, renderAll(h.sink.deltas())); diff != "" {
					t.Errorf("deltas (-want +got):\n%s", diff)
				}
				if errs := h.reported(); len(errs) != 0 {
					t.Errorf("Errors delivered %v, want none", errs)
				}
				if rv := h.r.LastSyncResourceVersion(); rv != tt.wantRV {
					t.Errorf("LastSyncResourceVersion = %q, want %q", rv, tt.wantRV)
				}
			})
		})
	}
}

// Relist stops the open watch and lists again with a quorum read, after
// which the reflector watches from the new list's version.
func TestRelist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, opts{NoWatchList: true})
		h.src.lists = []step{page("10", "", pod("a", "5")), page("20", "", pod("a", "15"))}
		h.src.watches = []step{hangs(), hangs().final()}
		done := make(chan struct{})
		go func() { defer close(done); h.run() }()
		synctest.Wait() // the first watch is open and hangs
		h.r.Relist()
		<-done
		want := []req{list("0", DefaultPageSize), watchAt("10"), list("", DefaultPageSize), watchAt("20")}
		if diff := cmp.Diff(want, h.src.reqs()); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
		if st := h.r.Status().Stats; st.Relists != 1 {
			t.Errorf("Relists = %d, want 1", st.Relists)
		}
		if errs := h.reported(); len(errs) != 0 {
			t.Errorf("Errors delivered %v, want none", errs)
		}
	})
}
