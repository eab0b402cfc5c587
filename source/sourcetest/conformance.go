package sourcetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// Case is one Source under test, with the means to change what it serves.
// [Run] calls its newCase function once per check, so each check may get a
// fresh backend (or a fresh namespace of a shared API server).
type Case[T cache.Object] struct {
	// Source is the source under test.
	Source source.Source[T]
	// Namespace is where the checks create objects; "" for a
	// cluster-scoped resource.
	Namespace string
	// New returns a new object called name in Namespace with labels,
	// ready to create.
	New func(name string, labels map[string]string) T
	// Create, Update and Delete change what Source serves, as an API
	// server's REST verbs do. Update gets an object that Create, Update or
	// List returned, with its labels changed.
	Create func(ctx context.Context, obj T) (T, error)
	Update func(ctx context.Context, obj T) (T, error)
	Delete func(ctx context.Context, key cache.Key) error
	// Compact, if set, makes every resourceVersion older than the current
	// one unavailable, as etcd compaction does; Run then checks that a
	// watch from an old version fails with 410 Gone. Without it that
	// check is not run, and Run logs so.
	Compact func(ctx context.Context) error
	// NoWatchList says the source does not support streaming lists
	// (sendInitialEvents); Run then checks that it refuses them with an
	// error instead of checking the stream.
	NoWatchList bool
}

// Run checks that the sources newCase makes behave as the source.Source
// contract and an API server say: complete lists, consistent pages, watches
// that replay every change after a resourceVersion in order, 410 Gone after
// compaction, streaming lists ending with the initial-events bookmark,
// label selectors on lists and watches (an object that stops matching is a
// DELETED event), and Stop. Each check is a subtest.
func Run[T cache.Object](t *testing.T, newCase func(t *testing.T) Case[T]) {
	checks := []struct {
		name string
		run  func(*testing.T, Case[T])
	}{
		{"List", checkList[T]},
		{"ListPages", checkPages[T]},
		{"WatchFromResourceVersion", checkWatch[T]},
		{"WatchExpired", checkExpired[T]},
		{"StreamingList", checkStreamingList[T]},
		{"LabelSelector", checkSelector[T]},
		{"Stop", checkStop[T]},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) { c.run(t, newCase(t)) })
	}
}

// timeout bounds each step, so a source that hangs fails instead of
// blocking the test binary.
const timeout = 30 * time.Second

func stepCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	return ctx
}

func mustCreate[T cache.Object](t *testing.T, c Case[T], name string, labels map[string]string) T {
	t.Helper()
	obj, err := c.Create(stepCtx(t), c.New(name, labels))
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return obj
}

// listAll follows continue tokens and returns every item and the first
// page's resourceVersion.
func listAll[T cache.Object](t *testing.T, src source.Source[T], opts metav1.ListOptions) ([]T, string) {
	t.Helper()
	var items []T
	var rv string
	for i := 0; ; i++ {
		page, err := src.List(stepCtx(t), opts)
		if err != nil {
			t.Fatalf("list (page %d): %v", i, err)
		}
		if i == 0 {
			rv = page.ResourceVersion
		}
		items = append(items, page.Items...)
		if page.Continue == "" {
			return items, rv
		}
		if i > 10000 {
			t.Fatal("list: more than 10000 pages")
		}
		// A continue token carries the snapshot's version: the server
		// refuses resourceVersion and resourceVersionMatch next to it.
		opts.Continue, opts.ResourceVersion, opts.ResourceVersionMatch = page.Continue, "", ""
	}
}

// names returns the sorted names of the objects in namespace ns.
func names[T cache.Object](objs []T, ns string) []string {
	out := []string{}
	for _, o := range objs {
		if o.GetNamespace() == ns {
			out = append(out, o.GetName())
		}
	}
	sort.Strings(out)
	return out
}

func checkList[T cache.Object](t *testing.T, c Case[T]) {
	for _, n := range []string{"list-a", "list-b", "list-c"} {
		mustCreate(t, c, n, nil)
	}
	items, rv := listAll(t, c.Source, metav1.ListOptions{})
	if got, want := names(items, c.Namespace), []string{"list-a", "list-b", "list-c"}; !slices.Equal(got, want) {
		t.Errorf("List names = %v, want %v", got, want)
	}
	if rv == "" {
		t.Error("List returned no resourceVersion")
	}
	var zero T
	for _, it := range items {
		if it == zero {
			t.Fatal("List returned a nil item")
		}
	}
}

func checkPages[T cache.Object](t *testing.T, c Case[T]) {
	want := []string{}
	for i := range 7 {
		n := fmt.Sprintf("page-%d", i)
		mustCreate(t, c, n, nil)
		want = append(want, n)
	}
	first, err := c.Source.List(stepCtx(t), metav1.ListOptions{Limit: 2})
	if err != nil {
		t.Fatalf("list limit=2: %v", err)
	}
	if first.Continue == "" || len(first.Items) > 2 {
		t.Fatalf("first page: %d items, continue %q; want at most 2 items and a continue token", len(first.Items), first.Continue)
	}
	// A change between pages must not show: every page is of one snapshot.
	mustCreate(t, c, "page-late", nil)
	rest, _ := listAll(t, c.Source, metav1.ListOptions{Limit: 2, Continue: first.Continue})
	got := names(append(slices.Clone(first.Items), rest...), c.Namespace)
	if !slices.Equal(got, want) {
		t.Errorf("paged list = %v, want %v (each object once, nothing created after the first page)", got, want)
	}
}

// collect reads events from w until n events about objects of namespace
// ns arrived; bookmarks and other namespaces' events are skipped.
func collect[T cache.Object](t *testing.T, w source.Watcher[T], ns string, n int) []source.Event[T] {
	t.Helper()
	ctx := stepCtx(t)
	var out []source.Event[T]
	for len(out) < n {
		ev, err := w.Next(ctx)
		if err != nil {
			t.Fatalf("Next after %d events: %v", len(out), err)
		}
		mustHaveObject(t, ev)
		if ev.Type == watch.Bookmark || ev.Object.GetNamespace() != ns {
			continue
		}
		out = append(out, ev)
	}
	return out
}

// mustHaveObject fails the check, instead of panicking in it, for an
// event without an object, which the source.Source contract rules out.
func mustHaveObject[T cache.Object](t *testing.T, ev source.Event[T]) {
	t.Helper()
	var zero T
	if ev.Object == zero {
		t.Fatalf("%s event without an object", ev.Type)
	}
}

func checkWatch[T cache.Object](t *testing.T, c Case[T]) {
	a := mustCreate(t, c, "watch-a", nil)
	_, rv := listAll(t, c.Source, metav1.ListOptions{})
	mustCreate(t, c, "watch-b", nil)
	a.SetLabels(map[string]string{"v": "2"})
	if _, err := c.Update(stepCtx(t), a); err != nil {
		t.Fatalf("update: %v", err)
	}
	if err := c.Delete(stepCtx(t), cache.KeyOf(a)); err != nil {
		t.Fatalf("delete: %v", err)
	}
	w, err := c.Source.Watch(stepCtx(t), metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatalf("watch from %s: %v", rv, err)
	}
	defer w.Stop()
	evs := collect(t, w, c.Namespace, 3)
	var got []string
	prev := rv
	for _, ev := range evs {
		got = append(got, fmt.Sprintf("%s %s", ev.Type, ev.Object.GetName()))
		if cmp, err := resourceversion.CompareResourceVersion(ev.Object.GetResourceVersion(), prev); err == nil && cmp <= 0 {
			t.Errorf("%s %s at resourceVersion %s, not after %s", ev.Type, ev.Object.GetName(), ev.Object.GetResourceVersion(), prev)
		}
		prev = ev.Object.GetResourceVersion()
	}
	want := []string{"ADDED watch-b", "MODIFIED watch-a", "DELETED watch-a"}
	if !slices.Equal(got, want) {
		t.Errorf("events from %s = %v, want %v", rv, got, want)
	}
	if l := evs[1].Object.GetLabels()["v"]; l != "2" {
		t.Errorf("MODIFIED object has label v=%q, want 2", l)
	}
}

func checkExpired[T cache.Object](t *testing.T, c Case[T]) {
	if c.Compact == nil {
		t.Log("the case cannot compact: 410 Gone not checked")
		return
	}
	mustCreate(t, c, "old-a", nil)
	_, rv := listAll(t, c.Source, metav1.ListOptions{})
	mustCreate(t, c, "old-b", nil)
	mustCreate(t, c, "old-c", nil)
	if err := c.Compact(stepCtx(t)); err != nil {
		t.Fatalf("compact: %v", err)
	}
	w, err := c.Source.Watch(stepCtx(t), metav1.ListOptions{ResourceVersion: rv})
	if err == nil {
		defer w.Stop()
		for {
			var ev source.Event[T]
			ev, err = w.Next(stepCtx(t))
			if err != nil || ev.Type != watch.Bookmark {
				break
			}
		}
	}
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Errorf("watch from compacted %s: %v, want 410 Gone (at start or in the stream)", rv, err)
	}
}

func checkStreamingList[T cache.Object](t *testing.T, c Case[T]) {
	for _, n := range []string{"stream-a", "stream-b"} {
		mustCreate(t, c, n, nil)
	}
	send := true
	w, err := c.Source.Watch(stepCtx(t), metav1.ListOptions{
		SendInitialEvents:    &send,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
	})
	if c.NoWatchList {
		if err == nil {
			w.Stop()
			t.Fatal("a source without streaming lists accepted sendInitialEvents")
		}
		return
	}
	if err != nil {
		t.Fatalf("streaming list: %v", err)
	}
	defer w.Stop()
	var got []string
	for {
		ev, err := w.Next(stepCtx(t))
		if err != nil {
			t.Fatalf("streaming list after %v: %v", got, err)
		}
		mustHaveObject(t, ev)
		if ev.Type == watch.Bookmark {
			if ev.Object.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
				if ev.Object.GetResourceVersion() == "" {
					t.Error("end bookmark without a resourceVersion")
				}
				break
			}
			continue
		}
		if ev.Type != watch.Added {
			t.Errorf("initial event %s %s, want ADDED", ev.Type, ev.Object.GetName())
		}
		if ev.Object.GetNamespace() == c.Namespace {
			got = append(got, ev.Object.GetName())
		}
	}
	sort.Strings(got)
	if want := []string{"stream-a", "stream-b"}; !slices.Equal(got, want) {
		t.Errorf("initial events = %v, want %v", got, want)
	}
}

func checkSelector[T cache.Object](t *testing.T, c Case[T]) {
	a := mustCreate(t, c, "sel-a", map[string]string{"app": "web"})
	mustCreate(t, c, "sel-b", map[string]string{"app": "db"})
	opts := metav1.ListOptions{LabelSelector: "app=web"}
	items, rv := listAll(t, c.Source, opts)
	if got := names(items, c.Namespace); !slices.Equal(got, []string{"sel-a"}) {
		t.Errorf("List(app=web) = %v, want [sel-a]", got)
	}
	opts.ResourceVersion = rv
	w, err := c.Source.Watch(stepCtx(t), opts)
	if err != nil {
		t.Fatalf("watch app=web: %v", err)
	}
	defer w.Stop()
	mustCreate(t, c, "sel-c", map[string]string{"app": "db"}) // never matches
	a.SetLabels(map[string]string{"app": "db"})
	a, err = c.Update(stepCtx(t), a)
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	a.SetLabels(map[string]string{"app": "web"})
	if _, err := c.Update(stepCtx(t), a); err != nil {
		t.Fatalf("update: %v", err)
	}
	var got []string
	for _, ev := range collect(t, w, c.Namespace, 2) {
		got = append(got, fmt.Sprintf("%s %s", ev.Type, ev.Object.GetName()))
	}
	if want := []string{"DELETED sel-a", "ADDED sel-a"}; !slices.Equal(got, want) {
		t.Errorf("watch app=web = %v, want %v (leaving the selector is a DELETED, entering it an ADDED)", got, want)
	}
}

func checkStop[T cache.Object](t *testing.T, c Case[T]) {
	_, rv := listAll(t, c.Source, metav1.ListOptions{})
	w, err := c.Source.Watch(stepCtx(t), metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	done := make(chan error, 1)
	ctx := stepCtx(t)
	go func() {
		for {
			_, err := w.Next(ctx)
			if err != nil {
				done <- err
				return
			}
		}
	}()
	w.Stop()
	select {
	case err := <-done:
		if !errors.Is(err, source.ErrWatchClosed) {
			t.Errorf("Next after Stop: %v, want source.ErrWatchClosed", err)
		}
	case <-time.After(timeout):
		t.Fatal("Next did not return after Stop")
	}
	w.Stop() // idempotent
	if _, err := w.Next(stepCtx(t)); !errors.Is(err, source.ErrWatchClosed) {
		t.Errorf("Next after a second Stop: %v, want source.ErrWatchClosed", err)
	}

	w, err = c.Source.Watch(stepCtx(t), metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := w.Next(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("Next with a cancelled context: %v, want context.Canceled", err)
	}
}
