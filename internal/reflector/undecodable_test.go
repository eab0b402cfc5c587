package reflector

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/fifo"
	"github.com/typedinformer/informer/source"
)

var errOops = errors.New("oops")

// undecodableIn is an object ns/n at rv that the source could not decode,
// in a watch event of type ev ("" for a list item).
func undecodableIn(ev watch.EventType, n, rv string) *source.UndecodableError {
	return &source.UndecodableError{Namespace: "ns", Name: n, ResourceVersion: rv, Event: ev, Err: errOops}
}

// feeds is a watch that returns items, then blocks until it is stopped.
func feeds(items ...item) step {
	ch := make(chan item, len(items))
	for _, it := range items {
		ch <- it
	}
	return fed(ch)
}

func ev(e podEvent) item { return item{ev: e} }

func undecodableEvent(ev watch.EventType, n, rv string) item {
	return item{err: nextErr(undecodableIn(ev, n, rv))}
}

// An object the source could not decode, but names (a page's Undecodable,
// an *UndecodableError from Next), goes to the sink as a Refused delta
// under its key, with the source's error, in a LIST page, a watch or a
// streaming list; a DELETED one as a deletion by key. The reflector moves
// past it on the same watch: no error, no new watch, no relist.
func TestUndecodableIsRefused(t *testing.T) {
	badPage := page("10", "", pod("a", "5"), pod("b", "7"))
	badPage.page.Undecodable = []*source.UndecodableError{undecodableIn("", "bad", "6")}
	badPage.page.Undecodable[0].Index = 1
	tests := []struct {
		name    string
		opts    opts
		lists   []step
		watchs  func() []step // made inside the bubble, which must own a fed watch's channel
		want    []req
		wantOps []string
		wantRV  string
	}{
		{
			name:    "a page of a LIST",
			opts:    opts{NoWatchList: true},
			lists:   []step{badPage},
			watchs:  func() []step { return []step{hangs()} },
			want:    []req{list("0", DefaultPageSize), watchAt("10")},
			wantOps: []string{"start", "replaced a@5", "replaced b@7", "refused bad@6: list item 1 ns/bad at resourceVersion 6 does not decode: oops", "end@10"},
			wantRV:  "10",
		},
		{
			name:   "a watch event",
			opts:   opts{NoWatchList: true},
			lists:  []step{page("10", "", pod("a", "5"))},
			watchs: func() []step { return []step{feeds(undecodableEvent(watch.Modified, "a", "11"), ev(added("c", "12")))} },
			want:   []req{list("0", DefaultPageSize), watchAt("10")},
			wantOps: []string{"start", "replaced a@5", "end@10",
				"refused a@11: MODIFIED watch event object ns/a at resourceVersion 11 does not decode: oops", "add c@12"},
			wantRV: "12",
		},
		{
			name:    "a deletion",
			opts:    opts{NoWatchList: true},
			lists:   []step{page("10", "", pod("a", "5"))},
			watchs:  func() []step { return []step{feeds(undecodableEvent(watch.Deleted, "a", "11"), ev(added("c", "12")))} },
			want:    []req{list("0", DefaultPageSize), watchAt("10")},
			wantOps: []string{"start", "replaced a@5", "end@10", "delete <nil>@11", "add c@12"},
			wantRV:  "12",
		},
		{
			name: "a streaming list",
			watchs: func() []step {
				return []step{feeds(ev(added("a", "5")), undecodableEvent(watch.Added, "bad", "6"), ev(endBookmark("10")), ev(added("c", "11")))}
			},
			want: []req{streamAt("")},
			wantOps: []string{"start", "replaced a@5", "refused bad@6: ADDED watch event object ns/bad at resourceVersion 6 does not decode: oops",
				"end@10", "add c@11"},
			wantRV: "11",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := tt.opts
				o.PushRefused = true
				h := newHarness(t, o)
				h.src.lists, h.src.watches = tt.lists, tt.watchs()
				h.runFor(time.Minute)
				if diff := cmp.Diff(tt.want, h.src.reqs()); diff != "" {
					t.Errorf("requests (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.wantOps, renderAll(h.sink.deltas())); diff != "" {
					t.Errorf("deltas (-want +got):\n%s", diff)
				}
				for _, d := range h.sink.deltas() {
					var u *source.UndecodableError
					if d.Type == fifo.Refused && (!errors.As(d.Err, &u) || u.Key() != d.Key) {
						t.Errorf("refused %v with %v, want its *source.UndecodableError", d.Key, d.Err)
					}
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

// Without PushRefused (an informer's StopAndRelist), an undecodable object
// stops the reflector before it, as an object Prepare refuses: the
// *UndecodableError is reported, the resourceVersion stays before it, and
// the reflector relists after a backoff. An undecodable object without a
// name cannot be refused by key: it is bad content, and the watch is
// opened again from the same resourceVersion.
func TestUndecodableStops(t *testing.T) {
	tests := []struct {
		name        string
		pushRefused bool
		lists       []step
		watchs      func() []step
		want        []req
	}{
		{
			name:   "without PushRefused",
			lists:  []step{page("10", "", pod("a", "5")), page("20", "", pod("a", "5"))},
			watchs: func() []step { return []step{feeds(undecodableEvent(watch.Modified, "a", "11")), hangs().final()} },
			want:   []req{list("0", DefaultPageSize), watchAt("10"), list("10", 0), watchAt("20")},
		},
		{
			name:        "without a name",
			pushRefused: true,
			lists:       []step{page("10", "", pod("a", "5"))},
			watchs:      func() []step { return []step{feeds(undecodableEvent(watch.Modified, "", "")), hangs().final()} },
			want:        []req{list("0", DefaultPageSize), watchAt("10"), watchAt("10")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, opts{NoWatchList: true, PushRefused: tt.pushRefused})
				h.src.lists, h.src.watches = tt.lists, tt.watchs()
				h.run()
				if diff := cmp.Diff(tt.want, h.src.reqs()); diff != "" {
					t.Errorf("requests (-want +got):\n%s", diff)
				}
				errs := h.reported()
				if len(errs) != 1 || !errors.Is(errs[0], source.ErrUndecodable) {
					t.Fatalf("Errors delivered %v, want one *source.UndecodableError", errs)
				}
				for _, d := range h.sink.deltas() {
					if d.Type == fifo.Refused || (d.Type == fifo.Updated && d.Key.Name == "a") {
						t.Errorf("the undecodable object went to the sink: %s", render(d))
					}
				}
			})
		})
	}
}
