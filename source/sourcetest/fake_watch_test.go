package sourcetest_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

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
				f := sourcetest.NewFake(podOptions{NoWatchList: tt.noWL, Objects: []*corev1.Pod{
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
				mustDo(t)(f.Create(pod("ns", "c", map[string]string{"app": "web"})))
				if diff := cmp.Diff(tt.want, drain(t, w)); diff != "" {
					t.Errorf("%s: events (-want +got)\n%s", tt.name, diff)
				}
			})
		})
	}
}

func TestFakeWatchTooOld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sourcetest.NewFake(podOptions{Window: 2})
		for _, n := range []string{"a", "b", "c", "d"} {
			mustDo(t)(f.Create(pod("ns", n, nil))) // 101..104; 103 and 104 retained
		}
		w := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "101"})
		ev, err := w.Next(t.Context())
		var serr *source.Error
		if !isExpired(err) || !errors.As(err, &serr) || serr.Phase != source.PhaseWatch {
			t.Fatalf("first Next = %+v, %v; want a 410 error in phase watch", ev, err)
		}
		if got, want := err.Error(), "watch: too old resource version: 101 (102)"; got != want {
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
		f := sourcetest.NewFake(podOptions{})
		w := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100", LabelSelector: "app=web"})
		web, db := map[string]string{"app": "web"}, map[string]string{"app": "db"}
		mustDo(t)(f.Create(pod("ns", "a", db)))  // 101: not selected
		mustDo(t)(f.Update(pod("ns", "a", web))) // 102: enters
		mustDo(t)(f.Update(pod("ns", "a", web))) // 103: stays
		mustDo(t)(f.Update(pod("ns", "a", db)))  // 104: leaves
		mustDo(t)(f.Delete(key("ns", "a")))      // 105: not selected
		mustDo(t)(f.Create(pod("ns", "b", web))) // 106
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
		f := sourcetest.NewFake(podOptions{Objects: []*corev1.Pod{pod("ns", "a", map[string]string{"app": "web"})}})
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
		f := sourcetest.NewFake(podOptions{Objects: []*corev1.Pod{pod("ns", "a", nil)}})
		with := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "101", AllowWatchBookmarks: true})
		without := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "101"})
		f.Bookmark()
		mustDo(t)(f.Create(pod("ns", "b", nil)))
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
		f := sourcetest.NewFake(podOptions{})
		w := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100", TimeoutSeconds: new(int64(30))})
		endless := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100"})
		time.Sleep(28 * time.Second)
		mustDo(t)(f.Create(pod("ns", "a", nil)))
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
		f := sourcetest.NewFake(podOptions{})
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
		f := sourcetest.NewFake(podOptions{})
		w1 := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100"})
		w2 := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100"})
		mustDo(t)(f.Create(pod("ns", "a", nil)))
		if diff := cmp.Diff([]string{"ADDED ns/a@101"}, drain(t, w1)); diff != "" {
			t.Errorf("before the cut (-want +got)\n%s", diff)
		}
		mustDo(t)(f.Create(pod("ns", "b", nil))) // queued, never received
		f.CutWatches()
		mustDo(t)(f.Create(pod("ns", "c", nil)))
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
		f := sourcetest.NewFake(podOptions{})
		w := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100"})
		f.DropEvents(2)
		mustDo(t)(f.Create(pod("ns", "a", nil)))
		mustDo(t)(f.Create(pod("ns", "b", nil)))
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
	f := sourcetest.NewFake(podOptions{})
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
		f := sourcetest.NewFake(podOptions{})
		w := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100"})
		mustDo(t)(f.Create(pod("ns", "a", nil)))
		f.InjectWatchError(apierrors.NewResourceExpired("compacted"))
		mustDo(t)(f.Create(pod("ns", "b", nil)))
		if diff := cmp.Diff([]string{"ADDED ns/a@101", "ERROR Expired", "CLOSED"}, drain(t, w)); diff != "" {
			t.Errorf("events (-want +got)\n%s", diff)
		}
		w = mustWatch(t, f, metav1.ListOptions{ResourceVersion: "102"})
		f.InjectWatchError(nil)
		if diff := cmp.Diff([]string{"ERROR InternalError", "CLOSED"}, drain(t, w)); diff != "" {
			t.Errorf("nil error (-want +got)\n%s", diff)
		}
		// Any error is returned as the cause of an *source.Error.
		boom := errors.New("boom")
		w = mustWatch(t, f, metav1.ListOptions{ResourceVersion: "102"})
		f.InjectWatchError(boom)
		_, err := w.Next(t.Context())
		var serr *source.Error
		if !errors.As(err, &serr) || serr.Phase != source.PhaseWatch || serr.Err != boom {
			t.Errorf("Next = %v, want an *source.Error in phase watch wrapping %v", err, boom)
		}
		if _, err := w.Next(t.Context()); !errors.Is(err, source.ErrWatchClosed) {
			t.Errorf("Next after the error = %v, want ErrWatchClosed", err)
		}
		if n := f.OpenWatches(); n != 0 {
			t.Errorf("OpenWatches() = %d, want 0", n)
		}
	})
}

func TestFakeInjectEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sourcetest.NewFake(podOptions{})
		w := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100", LabelSelector: "app=web"})
		odd := pod("other", "x", nil) // does not match the selector: injected events bypass it
		injected := []podEvent{
			{Type: watch.Modified, Object: odd},
			{Type: "WEIRD"},
			{Type: watch.Added},
			{Type: watch.Error}, // an Event is never an error: delivered as is
		}
		for _, ev := range injected {
			f.InjectEvent(ev)
		}
		odd.Name = "changed after injecting"
		var got []podEvent
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
		var descs []string
		for _, ev := range got {
			descs = append(descs, describe(ev))
		}
		if diff := cmp.Diff([]string{"MODIFIED other/x@", "WEIRD <nil>", "ADDED <nil>", "ERROR <nil>"}, descs); diff != "" {
			t.Errorf("events (-want +got)\n%s", diff)
		}
		// The stream goes on after injected events.
		mustDo(t)(f.Create(pod("ns", "a", map[string]string{"app": "web"})))
		if diff := cmp.Diff([]string{"ADDED ns/a@101"}, drain(t, w)); diff != "" {
			t.Errorf("after the injected events (-want +got)\n%s", diff)
		}
	})
}
