package source_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/source"
)

type podWatcher = source.Watcher[*corev1.Pod]

// describe summarises an event: "TYPE ns/name@rv", "BOOKMARK @rv [end]",
// or "ERROR <reason>".
func describe(ev source.Event[*corev1.Pod]) string {
	switch {
	case ev.Type == watch.Error && ev.Err != nil:
		return fmt.Sprintf("ERROR %s", apierrors.ReasonForError(ev.Err))
	case ev.Object == nil:
		return fmt.Sprintf("%s <nil>", ev.Type)
	case ev.Type == watch.Bookmark:
		s := "BOOKMARK @" + ev.Object.ResourceVersion
		if ev.Object.Annotations[metav1.InitialEventsAnnotationKey] == "true" {
			s += " end"
		}
		if ev.Object.Name != "" || ev.Object.Namespace != "" {
			s += " named " + ev.Object.Name
		}
		return s
	}
	return fmt.Sprintf("%s %s/%s@%s", ev.Type, ev.Object.Namespace, ev.Object.Name, ev.Object.ResourceVersion)
}

// drain reads every event available now; in a synctest bubble "now" is
// exact. A closed stream ends with "CLOSED".
func drain(t *testing.T, w podWatcher) []string {
	t.Helper()
	out := []string{}
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		ev, err := w.Next(ctx)
		cancel()
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return out
		case errors.Is(err, source.ErrWatchClosed):
			return append(out, "CLOSED")
		case err != nil:
			t.Fatalf("Next: %v", err)
		}
		out = append(out, describe(ev))
	}
}

func mustWatch(t *testing.T, f *source.Fake[*corev1.Pod], opts metav1.ListOptions) podWatcher {
	t.Helper()
	w, err := f.Watch(t.Context(), opts)
	if err != nil {
		t.Fatalf("Watch(%+v): %v", opts, err)
	}
	t.Cleanup(w.Stop)
	return w
}

func TestFakeWatchStart(t *testing.T) {
	notOlder := metav1.ResourceVersionMatchNotOlderThan
	tests := []struct {
		name    string
		noWL    bool
		opts    metav1.ListOptions
		want    []string
		wantErr func(error) bool
	}{
		{name: "rv empty", want: []string{"ADDED ns/a@103", "ADDED ns/b@102", "ADDED ns/c@104"}},
		{name: "rv 0", opts: metav1.ListOptions{ResourceVersion: "0"}, want: []string{"ADDED ns/a@103", "ADDED ns/b@102", "ADDED ns/c@104"}},
		{name: "replay", opts: metav1.ListOptions{ResourceVersion: "101"}, want: []string{"ADDED ns/b@102", "MODIFIED ns/a@103", "ADDED ns/c@104"}},
		{name: "replay from start", opts: metav1.ListOptions{ResourceVersion: "100"}, want: []string{"ADDED ns/a@101", "ADDED ns/b@102", "MODIFIED ns/a@103", "ADDED ns/c@104"}},
		{name: "current", opts: metav1.ListOptions{ResourceVersion: "103"}, want: []string{"ADDED ns/c@104"}},
		{name: "selector", opts: metav1.ListOptions{LabelSelector: "app=web"}, want: []string{"ADDED ns/a@103", "ADDED ns/c@104"}},
		{name: "field selector", opts: metav1.ListOptions{ResourceVersion: "100", FieldSelector: "metadata.name=a"}, want: []string{"ADDED ns/a@101", "MODIFIED ns/a@103"}},
		{name: "initial events with bookmark", opts: metav1.ListOptions{SendInitialEvents: new(true), ResourceVersionMatch: notOlder, AllowWatchBookmarks: true},
			want: []string{"ADDED ns/a@103", "ADDED ns/b@102", "BOOKMARK @103 end", "ADDED ns/c@104"}},
		{name: "initial events not older than", opts: metav1.ListOptions{SendInitialEvents: new(true), ResourceVersionMatch: notOlder, ResourceVersion: "102", AllowWatchBookmarks: true},
			want: []string{"ADDED ns/a@103", "ADDED ns/b@102", "BOOKMARK @103 end", "ADDED ns/c@104"}},
		{name: "initial events without bookmarks", opts: metav1.ListOptions{SendInitialEvents: new(true), ResourceVersionMatch: notOlder},
			want: []string{"ADDED ns/a@103", "ADDED ns/b@102", "ADDED ns/c@104"}},
		{name: "no initial events", opts: metav1.ListOptions{SendInitialEvents: new(false), ResourceVersionMatch: notOlder}, want: []string{"ADDED ns/c@104"}},
		{name: "no initial events from rv", opts: metav1.ListOptions{SendInitialEvents: new(false), ResourceVersionMatch: notOlder, ResourceVersion: "102"},
			want: []string{"MODIFIED ns/a@103", "ADDED ns/c@104"}},
		{name: "too large", opts: metav1.ListOptions{ResourceVersion: "104"}, wantErr: isTooLarge},
		{name: "bad rv", opts: metav1.ListOptions{ResourceVersion: "-3"}, wantErr: apierrors.IsBadRequest},
		{name: "bad selector", opts: metav1.ListOptions{LabelSelector: "=="}, wantErr: apierrors.IsBadRequest},
		{name: "initial events without match", opts: metav1.ListOptions{SendInitialEvents: new(true)}, wantErr: apierrors.IsInvalid},
		{name: "match without initial events", opts: metav1.ListOptions{ResourceVersionMatch: notOlder, ResourceVersion: "1"}, wantErr: apierrors.IsInvalid},
		{name: "no watch list", noWL: true, opts: metav1.ListOptions{SendInitialEvents: new(true), ResourceVersionMatch: notOlder, AllowWatchBookmarks: true}, wantErr: apierrors.IsInvalid},
		{name: "no watch list plain watch", noWL: true, want: []string{"ADDED ns/a@103", "ADDED ns/b@102", "ADDED ns/c@104"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := source.NewFake(source.FakeOptions[*corev1.Pod]{NoWatchList: tt.noWL, Objects: []*corev1.Pod{
					pod("ns", "a", nil), pod("ns", "b", nil),
				}})
				mustDo(t)(f.Update(pod("ns", "a", map[string]string{"app": "web"})))
				w, err := f.Watch(t.Context(), tt.opts)
				if tt.wantErr != nil {
					var serr *source.Error
					if !tt.wantErr(err) || !errors.As(err, &serr) || serr.Phase != source.PhaseWatchStart || w != nil {
						t.Fatalf("%s: err = %v, want a matching *source.Error in phase watch start", tt.name, err)
					}
					return
				}
				if err != nil {
					t.Fatalf("%s: %v", tt.name, err)
				}
				defer w.Stop()
				mustDo(t)(f.Add(pod("ns", "c", map[string]string{"app": "web"})))
				if diff := cmp.Diff(tt.want, drain(t, w)); diff != "" {
					t.Errorf("%s: events (-want +got)\n%s", tt.name, diff)
				}
			})
		})
	}
}

func TestFakeWatchTooOld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := source.NewFake(source.FakeOptions[*corev1.Pod]{Window: 2})
		for _, n := range []string{"a", "b", "c", "d"} {
			mustDo(t)(f.Add(pod("ns", n, nil))) // 101..104; 103 and 104 retained
		}
		w := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "101"})
		ev, err := w.Next(t.Context())
		var serr *source.Error
		if err != nil || ev.Type != watch.Error || !isExpired(ev.Err) || !errors.As(ev.Err, &serr) || serr.Phase != source.PhaseWatch {
			t.Fatalf("first event = %+v, %v; want a 410 error event in phase watch", ev, err)
		}
		if got, want := ev.Err.Error(), "watch: too old resource version: 101 (102)"; got != want {
			t.Errorf("error = %q, want %q", got, want)
		}
		if diff := cmp.Diff([]string{"CLOSED"}, drain(t, w)); diff != "" {
			t.Errorf("after the error (-want +got)\n%s", diff)
		}
		if n := f.OpenWatches(); n != 0 {
			t.Errorf("OpenWatches() = %d, want 0", n)
		}
		w = mustWatch(t, f, metav1.ListOptions{ResourceVersion: "102"})
		if diff := cmp.Diff([]string{"ADDED ns/c@103", "ADDED ns/d@104"}, drain(t, w)); diff != "" {
			t.Errorf("from the oldest retained version (-want +got)\n%s", diff)
		}
		f.Compact()
		if diff := cmp.Diff([]string{"ERROR Expired", "CLOSED"}, drain(t, mustWatch(t, f, metav1.ListOptions{ResourceVersion: "103"}))); diff != "" {
			t.Errorf("after Compact (-want +got)\n%s", diff)
		}
		if diff := cmp.Diff([]string{}, drain(t, mustWatch(t, f, metav1.ListOptions{ResourceVersion: "104"}))); diff != "" {
			t.Errorf("at the current version after Compact (-want +got)\n%s", diff)
		}
	})
}

func TestFakeWatchSelectorTransitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := source.NewFake(source.FakeOptions[*corev1.Pod]{})
		w := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100", LabelSelector: "app=web"})
		web, db := map[string]string{"app": "web"}, map[string]string{"app": "db"}
		mustDo(t)(f.Add(pod("ns", "a", db)))     // 101: not selected
		mustDo(t)(f.Update(pod("ns", "a", web))) // 102: enters
		mustDo(t)(f.Update(pod("ns", "a", web))) // 103: stays
		mustDo(t)(f.Update(pod("ns", "a", db)))  // 104: leaves
		mustDo(t)(f.Delete(key("ns", "a")))      // 105: not selected
		mustDo(t)(f.Add(pod("ns", "b", web)))    // 106
		mustDo(t)(f.Delete(key("ns", "b")))      // 107
		want := []string{"ADDED ns/a@102", "MODIFIED ns/a@103", "DELETED ns/a@104", "ADDED ns/b@106", "DELETED ns/b@107"}
		if diff := cmp.Diff(want, drain(t, w)); diff != "" {
			t.Errorf("live (-want +got)\n%s", diff)
		}
		if diff := cmp.Diff(want, drain(t, mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100", LabelSelector: "app=web"}))); diff != "" {
			t.Errorf("replayed (-want +got)\n%s", diff)
		}
	})
}

func TestFakeLeavingSelectorCarriesPreviousContent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := source.NewFake(source.FakeOptions[*corev1.Pod]{Objects: []*corev1.Pod{pod("ns", "a", map[string]string{"app": "web"})}})
		w := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "101", LabelSelector: "app=web"})
		mustDo(t)(f.Update(pod("ns", "a", map[string]string{"app": "db"})))
		ev, err := w.Next(t.Context())
		if err != nil || ev.Type != watch.Deleted || ev.Object.Labels["app"] != "web" || ev.Object.ResourceVersion != "102" {
			t.Fatalf("got %+v, %v; want DELETED with the previous labels at 102", ev, err)
		}
	})
}

func TestFakeBookmark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := source.NewFake(source.FakeOptions[*corev1.Pod]{Objects: []*corev1.Pod{pod("ns", "a", nil)}})
		with := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "101", AllowWatchBookmarks: true})
		without := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "101"})
		f.Bookmark()
		mustDo(t)(f.Add(pod("ns", "b", nil)))
		f.Bookmark()
		if diff := cmp.Diff([]string{"BOOKMARK @101", "ADDED ns/b@102", "BOOKMARK @102"}, drain(t, with)); diff != "" {
			t.Errorf("with bookmarks (-want +got)\n%s", diff)
		}
		if diff := cmp.Diff([]string{"ADDED ns/b@102"}, drain(t, without)); diff != "" {
			t.Errorf("without bookmarks (-want +got)\n%s", diff)
		}
	})
}

func TestFakeWatchTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := source.NewFake(source.FakeOptions[*corev1.Pod]{})
		w := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100", TimeoutSeconds: new(int64(30))})
		endless := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100"})
		time.Sleep(28 * time.Second)
		mustDo(t)(f.Add(pod("ns", "a", nil)))
		if diff := cmp.Diff([]string{"ADDED ns/a@101"}, drain(t, w)); diff != "" { // drain waits 1s
			t.Errorf("before the timeout (-want +got)\n%s", diff)
		}
		start := time.Now()
		if _, err := w.Next(t.Context()); !errors.Is(err, source.ErrWatchClosed) {
			t.Fatalf("Next at the timeout: %v", err)
		}
		if waited := time.Since(start); waited != time.Second {
			t.Errorf("Next returned after %v, want 1s (at the 30s timeout)", waited)
		}
		if n := f.OpenWatches(); n != 1 {
			t.Errorf("OpenWatches() = %d, want 1", n)
		}
		time.Sleep(time.Hour)
		if diff := cmp.Diff([]string{"ADDED ns/a@101"}, drain(t, endless)); diff != "" {
			t.Errorf("without a timeout (-want +got)\n%s", diff)
		}
	})
}

func TestFakeWatchTimeoutFires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := source.NewFake(source.FakeOptions[*corev1.Pod]{})
		w := mustWatch(t, f, metav1.ListOptions{TimeoutSeconds: new(int64(5))})
		start := time.Now()
		_, err := w.Next(t.Context())
		if !errors.Is(err, source.ErrWatchClosed) || time.Since(start) != 5*time.Second {
			t.Fatalf("Next = %v after %v, want ErrWatchClosed after 5s", err, time.Since(start))
		}
	})
}

func TestFakeCutWatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := source.NewFake(source.FakeOptions[*corev1.Pod]{})
		w1 := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100"})
		w2 := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100"})
		mustDo(t)(f.Add(pod("ns", "a", nil)))
		if diff := cmp.Diff([]string{"ADDED ns/a@101"}, drain(t, w1)); diff != "" {
			t.Errorf("before the cut (-want +got)\n%s", diff)
		}
		mustDo(t)(f.Add(pod("ns", "b", nil))) // queued, never received
		f.CutWatches()
		mustDo(t)(f.Add(pod("ns", "c", nil)))
		if diff := cmp.Diff([]string{"CLOSED"}, drain(t, w1)); diff != "" {
			t.Errorf("after the cut (-want +got)\n%s", diff)
		}
		if diff := cmp.Diff([]string{"CLOSED"}, drain(t, w2)); diff != "" {
			t.Errorf("unread stream after the cut (-want +got)\n%s", diff)
		}
		if n := f.OpenWatches(); n != 0 {
			t.Errorf("OpenWatches() = %d, want 0", n)
		}
		// A rewatch from the last version seen heals.
		if diff := cmp.Diff([]string{"ADDED ns/b@102", "ADDED ns/c@103"}, drain(t, mustWatch(t, f, metav1.ListOptions{ResourceVersion: "101"}))); diff != "" {
			t.Errorf("rewatch (-want +got)\n%s", diff)
		}
	})
}

func TestFakeDropEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := source.NewFake(source.FakeOptions[*corev1.Pod]{})
		w := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100"})
		f.DropEvents(2)
		mustDo(t)(f.Add(pod("ns", "a", nil)))
		mustDo(t)(f.Add(pod("ns", "b", nil)))
		mustDo(t)(f.Delete(key("ns", "a")))
		if diff := cmp.Diff([]string{"DELETED ns/a@103"}, drain(t, w)); diff != "" {
			t.Errorf("watch (-want +got)\n%s", diff)
		}
		l, err := f.List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"ns/b@102"}, ids(l.Items)); diff != "" {
			t.Errorf("relist (-want +got)\n%s", diff)
		}
		if diff := cmp.Diff([]string{"ADDED ns/a@101", "ADDED ns/b@102", "DELETED ns/a@103"}, drain(t, mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100"}))); diff != "" {
			t.Errorf("history (-want +got)\n%s", diff)
		}
	})
}

func TestFakeFailWatches(t *testing.T) {
	ctx := t.Context()
	f := source.NewFake(source.FakeOptions[*corev1.Pod]{})
	tooMany := apierrors.NewTooManyRequests("slow down", 1)
	f.FailWatches(1, tooMany)
	w, err := f.Watch(ctx, metav1.ListOptions{})
	var serr *source.Error
	if w != nil || !apierrors.IsTooManyRequests(err) || !errors.As(err, &serr) || serr.Phase != source.PhaseWatchStart {
		t.Fatalf("Watch = %v, %v; want the injected error in phase watch start", w, err)
	}
	f.FailWatches(1, nil)
	if _, err := f.Watch(ctx, metav1.ListOptions{}); !apierrors.IsInternalError(err) {
		t.Fatalf("nil error: %v, want internal error", err)
	}
	w, err = f.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	if f.WatchCalls() != 3 || f.OpenWatches() != 0 {
		t.Errorf("WatchCalls, OpenWatches = %d, %d; want 3, 0", f.WatchCalls(), f.OpenWatches())
	}
}

func TestFakeInjectWatchError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := source.NewFake(source.FakeOptions[*corev1.Pod]{})
		w := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100"})
		mustDo(t)(f.Add(pod("ns", "a", nil)))
		f.InjectWatchError(apierrors.NewResourceExpired("compacted"))
		mustDo(t)(f.Add(pod("ns", "b", nil)))
		if diff := cmp.Diff([]string{"ADDED ns/a@101", "ERROR Expired", "CLOSED"}, drain(t, w)); diff != "" {
			t.Errorf("events (-want +got)\n%s", diff)
		}
		w = mustWatch(t, f, metav1.ListOptions{ResourceVersion: "102"})
		f.InjectWatchError(nil)
		if diff := cmp.Diff([]string{"ERROR InternalError", "CLOSED"}, drain(t, w)); diff != "" {
			t.Errorf("nil error (-want +got)\n%s", diff)
		}
		if n := f.OpenWatches(); n != 0 {
			t.Errorf("OpenWatches() = %d, want 0", n)
		}
	})
}

func TestFakeInjectEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := source.NewFake(source.FakeOptions[*corev1.Pod]{})
		w := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100", LabelSelector: "app=web"})
		odd := pod("other", "x", nil) // does not match the selector: injected events bypass it
		injected := []source.Event[*corev1.Pod]{
			{Type: watch.Modified, Object: odd},
			{Type: "WEIRD"},
			{Type: watch.Added},
			{Type: watch.Error, Err: fmt.Errorf("%w: wrapped", source.ErrMalformed)},
		}
		for _, ev := range injected {
			f.InjectEvent(ev)
		}
		odd.Name = "changed after injecting"
		var got []source.Event[*corev1.Pod]
		for range injected {
			ev, err := w.Next(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ev)
		}
		if got[0].Object == odd || got[0].Object.Name != "x" {
			t.Errorf("injected object was not copied: %+v", got[0].Object)
		}
		if diff := cmp.Diff([]string{"MODIFIED other/x@", "WEIRD <nil>", "ADDED <nil>"}, []string{describe(got[0]), describe(got[1]), describe(got[2])}); diff != "" {
			t.Errorf("events (-want +got)\n%s", diff)
		}
		if !errors.Is(got[3].Err, source.ErrMalformed) {
			t.Errorf("error event = %+v", got[3])
		}
	})
}
