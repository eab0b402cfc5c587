package file_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/file"
)

// TestFollowsDirectory changes files the ways people and tools do and
// checks the events an open watch gets from file notifications alone
// (nothing calls Rescan): in-place writes, rename-style saves, a rewrite
// that changes nothing, an object moved out of a file, a deleted file, a
// bad save and its fix.
func TestFollowsDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", podYAML("ns", "p1", "v=1"))
	src, sink := newPods(t, dir, file.Options{})
	l, err := src.List(waitCtx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := src.Watch(waitCtx(t), metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	lastRV, _ := strconv.ParseInt(l.ResourceVersion, 10, 64)
	expect := func(step string, want ...string) []*corev1.Pod {
		t.Helper()
		var got []string
		var objs []*corev1.Pod
		for range want {
			e, obj := next(t, w)
			rv, _ := strconv.ParseInt(obj.ResourceVersion, 10, 64)
			if rv <= lastRV {
				t.Errorf("%s: %s at resourceVersion %d, not after %d", step, e, rv, lastRV)
			}
			lastRV = rv
			got, objs = append(got, e), append(objs, obj)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s: events (-want +got):\n%s", step, diff)
		}
		return objs
	}

	writeFile(t, dir, "b.yaml", podYAML("ns", "p2"))
	expect("new file", "ADDED ns/p2")

	renameInto(t, dir, "a.yaml", podYAML("ns", "p1", "v=2"))
	if got := expect("rename-style save", "MODIFIED ns/p1"); got[0].Labels["v"] != "2" {
		t.Errorf("modified pod has labels %v, want v=2", got[0].Labels)
	}

	// Same objects, other bytes: no event, so the next event is the one of
	// the change after it.
	renameInto(t, dir, "a.yaml", "# reformatted\n"+podYAML("ns", "p1", "v=2")+"---\n")
	writeFile(t, dir, "c.yaml", podYAML("ns", "p9"))
	expect("unchanged rewrite, then a new file", "ADDED ns/p9")

	writeFile(t, dir, "b.yaml", podYAML("ns", "p3"))
	expect("object moved out of its file", "DELETED ns/p2", "ADDED ns/p3")

	removeFile(t, dir, "b.yaml")
	expect("deleted file", "DELETED ns/p3")

	renameInto(t, dir, "a.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p1\n  namespace: ns\n  labels: {v: [\n")
	removeFile(t, dir, "c.yaml")
	expect("bad save keeps p1; then a deleted file", "DELETED ns/p9")
	if got := fileErrors(src.Errors()); !cmp.Equal(got, []string{"a.yaml:6: file: syntax error"}) {
		t.Errorf("Errors() after a bad save = %v", got)
	}
	if got := listed(t, src, metav1.ListOptions{}); !cmp.Equal(got, []string{"ns/p1"}) {
		t.Errorf("listed after a bad save = %v, want [ns/p1]", got)
	}

	renameInto(t, dir, "a.yaml", podYAML("ns", "p1", "v=3"))
	if got := expect("fixed", "MODIFIED ns/p1"); got[0].Labels["v"] != "3" {
		t.Errorf("fixed pod has labels %v, want v=3", got[0].Labels)
	}
	if errs := src.Errors(); len(errs) != 0 {
		t.Errorf("Errors() after the fix = %v", errs)
	}
	if got := fileErrors(sink.all()); !cmp.Equal(got, []string{"a.yaml:6: file: syntax error"}) {
		t.Errorf("reported = %v, want the syntax error once", got)
	}
}

// TestDuplicateWinnerRemoved checks that removing the file that wins a
// duplicate brings in the other definition, and clears the problem.
func TestDuplicateWinnerRemoved(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", podYAML("ns", "x", "from=a"))
	writeFile(t, dir, "b.yaml", podYAML("ns", "x", "from=b"))
	src, _ := newPods(t, dir, file.Options{})
	if got := fileErrors(src.Errors()); !cmp.Equal(got, []string{"b.yaml:1: file: object defined twice"}) {
		t.Errorf("Errors() = %v", got)
	}
	w, err := src.Watch(waitCtx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if e, obj := next(t, w); e != "ADDED ns/x" || obj.Labels["from"] != "a" {
		t.Fatalf("initial event %s from=%s, want ADDED ns/x from=a", e, obj.Labels["from"])
	}
	removeFile(t, dir, "a.yaml")
	if e, obj := next(t, w); e != "MODIFIED ns/x" || obj.Labels["from"] != "b" {
		t.Fatalf("after removing the winner: %s from=%s, want MODIFIED ns/x from=b", e, obj.Labels["from"])
	}
	if errs := src.Errors(); len(errs) != 0 {
		t.Errorf("Errors() = %v, want none", errs)
	}
}

// TestWatchStart checks where watches can start: 410 Gone for what the
// source does not remember, so that an informer relists; BadRequest for
// what it cannot do.
func TestWatchStart(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", podYAML("ns", "p1"))
	src, _ := newPods(t, dir, file.Options{History: 2})
	rvs := []string{}
	for _, name := range []string{"p2", "p3", "p4"} {
		l, err := src.List(waitCtx(t), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rvs = append(rvs, l.ResourceVersion)
		writeFile(t, dir, name+".yaml", podYAML("ns", name))
		if err := src.Rescan(waitCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	// rvs[0] is before the three changes, of which two are remembered.
	cur, _ := strconv.ParseInt(rvs[2], 10, 64)
	yes := true
	tests := []struct {
		name  string
		opts  metav1.ListOptions
		check func(error) bool
		want  []string // events, if it starts
	}{
		{"remembered", metav1.ListOptions{ResourceVersion: rvs[1]}, nil, []string{"ADDED ns/p3", "ADDED ns/p4"}},
		{"forgotten", metav1.ListOptions{ResourceVersion: rvs[0]}, apierrors.IsResourceExpired, nil},
		{"not reached", metav1.ListOptions{ResourceVersion: strconv.FormatInt(cur+1000, 10)}, apierrors.IsResourceExpired, nil},
		{"not a version", metav1.ListOptions{ResourceVersion: "abc"}, apierrors.IsResourceExpired, nil},
		{"selected from a version", metav1.ListOptions{ResourceVersion: rvs[1], FieldSelector: "metadata.name=p4"}, nil, []string{"ADDED ns/p4"}},
		{"other field", metav1.ListOptions{FieldSelector: "spec.nodeName=n1"}, apierrors.IsBadRequest, nil},
		{"bad label selector", metav1.ListOptions{LabelSelector: "a in ("}, apierrors.IsBadRequest, nil},
		{"initial events without bookmarks", metav1.ListOptions{SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}, apierrors.IsBadRequest, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := src.Watch(waitCtx(t), tt.opts)
			if tt.check != nil {
				var se *source.Error
				if !tt.check(err) || !errors.As(err, &se) || se.Phase != source.PhaseWatchStart {
					t.Fatalf("watch: %v, want a watch start error of the right kind", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			if got := nextN(t, w, len(tt.want)); !cmp.Equal(got, tt.want) {
				t.Errorf("events %v, want %v", got, tt.want)
			}
		})
	}
}

// TestWatchFallsBehind checks that a watch whose reader falls more than
// History events behind ends with 410 Gone instead of holding them all.
func TestWatchFallsBehind(t *testing.T) {
	dir := t.TempDir()
	src, _ := newPods(t, dir, file.Options{History: 2})
	w, err := src.Watch(waitCtx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, name := range []string{"p1", "p2", "p3"} {
		writeFile(t, dir, name+".yaml", podYAML("ns", name))
		if err := src.Rescan(waitCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	for {
		ev, err := w.Next(waitCtx(t))
		if err != nil {
			if !apierrors.IsResourceExpired(err) {
				t.Fatalf("Next: %v, want 410 Gone", err)
			}
			return
		}
		if ev.Type == watch.Added && ev.Object.Name == "p3" {
			t.Fatal("the watch kept more than History events")
		}
	}
}

// TestWatchBookmarks checks the bookmarks: one with the new version for a
// change the selectors hide, and the end of a streaming list.
func TestWatchBookmarks(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", podYAML("ns", "p1", "app=web"))
	src, _ := newPods(t, dir, file.Options{})
	yes := true
	w, err := src.Watch(waitCtx(t), metav1.ListOptions{
		LabelSelector: "app=web", SendInitialEvents: &yes,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []string
	var rvs []string
	for len(got) < 3 {
		ev, err := w.Next(waitCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		e := string(ev.Type) + " " + ev.Object.Name
		if ev.Object.Annotations[metav1.InitialEventsAnnotationKey] == "true" {
			e += " (end of initial events)"
			writeFile(t, dir, "b.yaml", podYAML("ns", "p2", "app=db")) // hidden by the selector
		}
		got, rvs = append(got, e), append(rvs, ev.Object.ResourceVersion)
	}
	want := []string{"ADDED p1", "BOOKMARK  (end of initial events)", "BOOKMARK "}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	l, err := src.List(waitCtx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rvs[1] != rvs[0] || rvs[2] != l.ResourceVersion {
		t.Errorf("resourceVersions %v, want [p1's, the same, the list's %s]", rvs, l.ResourceVersion)
	}
}

// TestWatchEnds checks the ends of a watch besides Stop: its timeout and
// the end of the context it was started with.
func TestWatchEnds(t *testing.T) {
	dir := t.TempDir()
	src, _ := newPods(t, dir, file.Options{})
	one := int64(1)
	w, err := src.Watch(waitCtx(t), metav1.ListOptions{TimeoutSeconds: &one})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Next(waitCtx(t)); !errors.Is(err, source.ErrWatchClosed) {
		t.Errorf("Next after the timeout: %v, want ErrWatchClosed", err)
	}
	w.Stop()

	ctx, cancel := context.WithCancel(t.Context())
	w, err = src.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cancel()
	if _, err := w.Next(waitCtx(t)); !errors.Is(err, source.ErrWatchClosed) {
		t.Errorf("Next after the watch's context ended: %v, want ErrWatchClosed", err)
	}
}

// TestDirectoryGone checks that a directory that goes away keeps its
// objects (and is reported), and that the source follows it again once it
// is back: at once, through the notifications of its parent (with no
// periodic rescan at all), and through the rescan where notifications are
// not had.
func TestDirectoryGone(t *testing.T) {
	for name, interval := range map[string]time.Duration{"notified": -1, "rescan": 20 * time.Millisecond} {
		t.Run(name, func(t *testing.T) { testDirectoryGone(t, interval) })
	}
}

func testDirectoryGone(t *testing.T, interval time.Duration) {
	root := t.TempDir()
	dir := filepath.Join(root, "manifests")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.yaml", podYAML("ns", "p1"))
	src, sink := newPods(t, dir, file.Options{RescanInterval: interval})
	w, err := src.Watch(waitCtx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if e, _ := next(t, w); e != "ADDED ns/p1" {
		t.Fatalf("initial event %s", e)
	}
	// Renamed away at once, as an unmount takes all: a removal file by
	// file could be seen half-done.
	if err := os.Rename(dir, dir+".gone"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the missing directory reported", func() bool {
		for _, err := range sink.all() {
			if errors.Is(err, fs.ErrNotExist) {
				return true
			}
		}
		return false
	})
	if got := listed(t, src, metav1.ListOptions{}); !cmp.Equal(got, []string{"ns/p1"}) {
		t.Errorf("listed without the directory = %v, want [ns/p1]", got)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "b.yaml", podYAML("ns", "p2"))
	if got := nextN(t, w, 2); !cmp.Equal(got, []string{"DELETED ns/p1", "ADDED ns/p2"}) {
		t.Errorf("events once the directory is back: %v", got)
	}
	writeFile(t, dir, "c.yaml", podYAML("ns", "p3"))
	if e, _ := next(t, w); e != "ADDED ns/p3" {
		t.Errorf("event after the directory is back: %s, want ADDED ns/p3", e)
	}
}

// TestErrorHandlerPanics checks that a panicking ErrorHandler stops
// neither List nor the watch that follows the directory.
func TestErrorHandlerPanics(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "bad.yaml", "kind: [\n")
	calls := make(chan error, 10)
	src, _ := newPods(t, dir, file.Options{ErrorHandler: func(err error) {
		calls <- err
		panic("handler bug")
	}})
	w, err := src.Watch(waitCtx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	writeFile(t, dir, "bad2.yaml", "kind: [\n")
	writeFile(t, dir, "a.yaml", podYAML("ns", "p1"))
	if e, _ := next(t, w); e != "ADDED ns/p1" {
		t.Errorf("event %s, want ADDED ns/p1", e)
	}
	// The problems are reported after the scan applied its changes.
	waitFor(t, "both bad files reported", func() bool { return len(calls) >= 2 })
	if got := len(calls); got != 2 {
		t.Errorf("ErrorHandler called %d times, want 2 (each bad file once)", got)
	}
}
