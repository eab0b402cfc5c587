package sourcetest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

func TestListerWatcherList(t *testing.T) {
	f := sourcetest.NewFake(podOptions{
		Resource: schema.GroupResource{Resource: "pods"},
		Objects:  []*corev1.Pod{pod("ns", "b", nil), pod("ns", "a", nil), pod("ns", "c", nil)},
	})
	lw := f.ListerWatcher()
	obj, err := lw.ListWithContext(t.Context(), metav1.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	l, ok := obj.(*metav1.List)
	if !ok {
		t.Fatalf("list is a %T, want *metav1.List", obj)
	}
	var got []string
	for _, it := range l.Items {
		p, ok := it.Object.(*corev1.Pod)
		if !ok {
			t.Fatalf("item is a %T, want *corev1.Pod", it.Object)
		}
		got = append(got, p.Name+"@"+p.ResourceVersion)
	}
	if diff := cmp.Diff([]string{"a@102", "b@101"}, got); diff != "" {
		t.Errorf("first page (-want +got)\n%s", diff)
	}
	if l.ResourceVersion != "103" || l.Continue == "" {
		t.Errorf("list meta = %+v, want resourceVersion 103 and a continue token", l.ListMeta)
	}

	// The plain ListerWatcher methods serve the same data.
	plain, ok := lw.(clientcache.ListerWatcher)
	if !ok {
		t.Fatalf("%T is not a plain cache.ListerWatcher", lw)
	}
	//lint:ignore SA1019 the plain lister-watcher interface is what is tested
	obj, err = plain.List(metav1.ListOptions{Continue: l.Continue})
	if err != nil {
		t.Fatal(err)
	}
	if l := obj.(*metav1.List); len(l.Items) != 1 || l.Continue != "" {
		t.Errorf("second page = %+v, want one item and no token", l)
	}

	// Errors are the API errors themselves, as from a client.
	f.FailLists(1, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no")))
	_, err = lw.ListWithContext(t.Context(), metav1.ListOptions{})
	var serr *source.Error
	if !apierrors.IsForbidden(err) || errors.As(err, &serr) {
		t.Errorf("failed list = %v (%T), want the Forbidden error itself", err, err)
	}
	if _, err := lw.ListWithContext(t.Context(), metav1.ListOptions{ResourceVersion: "999"}); !isTooLarge(err) {
		t.Errorf("list from the future = %v, want Too large resource version", err)
	}
}

// recv reads one event from a watch.Interface, or reports that its channel
// is closed; it fails the test if neither happens within a second (of the
// bubble's clock in a synctest bubble).
func recv(t *testing.T, w watch.Interface) (ev watch.Event, open bool) {
	t.Helper()
	select {
	case ev, open = <-w.ResultChan():
		return ev, open
	case <-time.After(time.Second):
		t.Fatal("no event within a second")
	}
	return ev, false
}

func TestListerWatcherWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sourcetest.NewFake(podOptions{Objects: []*corev1.Pod{pod("ns", "a", nil)}})
		lw := f.ListerWatcher()
		w, err := lw.WatchWithContext(t.Context(), metav1.ListOptions{ResourceVersion: "100", AllowWatchBookmarks: true})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		f.Bookmark()
		mustDo(t)(f.Update(pod("ns", "a", map[string]string{"v": "2"})))
		var got []string
		for range 3 {
			ev, open := recv(t, w)
			if !open {
				t.Fatal("stream closed early")
			}
			p := ev.Object.(*corev1.Pod)
			got = append(got, fmt.Sprintf("%s %s@%s", ev.Type, p.Name, p.ResourceVersion))
		}
		if diff := cmp.Diff([]string{"ADDED a@101", "BOOKMARK @101", "MODIFIED a@102"}, got); diff != "" {
			t.Errorf("events (-want +got)\n%s", diff)
		}

		// An in-stream error is an ERROR event with its status; then the
		// channel closes and the fake has no open watch left.
		f.InjectWatchError(apierrors.NewResourceExpired("too old resource version: 1 (2)"))
		ev, open := recv(t, w)
		status, ok := ev.Object.(*metav1.Status)
		if !open || ev.Type != watch.Error || !ok || status.Code != 410 || status.Reason != metav1.StatusReasonExpired {
			t.Fatalf("event = %s %+v, want an ERROR with the 410 status", ev.Type, ev.Object)
		}
		if _, open := recv(t, w); open {
			t.Error("stream still open after the ERROR event")
		}
		if n := f.OpenWatches(); n != 0 {
			t.Errorf("OpenWatches() = %d, want 0", n)
		}

		// An error without a status is sent as a 500.
		w2, err := lw.WatchWithContext(t.Context(), metav1.ListOptions{ResourceVersion: "102"})
		if err != nil {
			t.Fatal(err)
		}
		defer w2.Stop()
		f.InjectWatchError(errors.New("boom"))
		ev, _ = recv(t, w2)
		if status, ok := ev.Object.(*metav1.Status); ev.Type != watch.Error || !ok || status.Code != 500 {
			t.Errorf("event = %s %+v, want an ERROR with a 500 status", ev.Type, ev.Object)
		}

		// Start failures are the API errors themselves.
		if _, err := lw.WatchWithContext(t.Context(), metav1.ListOptions{ResourceVersion: "999"}); !isTooLarge(err) {
			t.Errorf("watch from the future = %v, want Too large resource version", err)
		}
		f.FailWatches(1, nil)
		var serr *source.Error
		if _, err := lw.WatchWithContext(t.Context(), metav1.ListOptions{}); !apierrors.IsInternalError(err) || errors.As(err, &serr) {
			t.Errorf("failed watch = %v (%T), want the InternalError itself", err, err)
		}
	})
}

// TestListerWatcherStop checks that the stream's goroutine ends on Stop
// (also when nobody reads the channel), on the end of the watch's context,
// on a cut, and on a timeout.
func TestListerWatcherStop(t *testing.T) {
	type ender func(t *testing.T, f *podFake, w watch.Interface, cancel context.CancelFunc)
	ends := map[string]ender{
		"stop":            func(_ *testing.T, _ *podFake, w watch.Interface, _ context.CancelFunc) { w.Stop() },
		"stop twice":      func(_ *testing.T, _ *podFake, w watch.Interface, _ context.CancelFunc) { w.Stop(); w.Stop() },
		"context":         func(_ *testing.T, _ *podFake, _ watch.Interface, cancel context.CancelFunc) { cancel() },
		"cut":             func(_ *testing.T, f *podFake, _ watch.Interface, _ context.CancelFunc) { f.CutWatches() },
		"timeout":         func(_ *testing.T, _ *podFake, _ watch.Interface, _ context.CancelFunc) { time.Sleep(time.Minute) },
		"injected error":  func(_ *testing.T, f *podFake, _ watch.Interface, _ context.CancelFunc) { f.InjectWatchError(nil) },
		"stop while idle": func(_ *testing.T, _ *podFake, w watch.Interface, _ context.CancelFunc) { synctest.Wait(); w.Stop() },
		"stop after a change": func(t *testing.T, f *podFake, w watch.Interface, _ context.CancelFunc) {
			mustDo(t)(f.Create(pod("ns", "z", nil)))
			w.Stop()
		},
	}
	for name, end := range ends {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := sourcetest.NewFake(podOptions{Objects: []*corev1.Pod{pod("ns", "a", nil), pod("ns", "b", nil)}})
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				w, err := f.ListerWatcher().WatchWithContext(ctx, metav1.ListOptions{TimeoutSeconds: new(int64(30))})
				if err != nil {
					t.Fatal(err)
				}
				// Nobody reads: the pump is blocked sending the first event.
				end(t, f, w, cancel)
				synctest.Wait()
				if n := f.OpenWatches(); n != 0 {
					t.Errorf("OpenWatches() = %d, want 0", n)
				}
				// Whatever was on its way, the channel is closed soon after.
				for n := 0; ; n++ {
					if _, open := recv(t, w); !open {
						break
					}
					if n > 3 {
						t.Fatal("stream not closed")
					}
				}
				w.Stop()
				// synctest.Test fails if the pump goroutine is still there.
			})
		})
	}
}

// TestListerWatcherInjectedEventsBecomeErrors feeds the contract-breaking
// events InjectEvent delivers through the ListerWatcher and
// source.FromListerWatcher: each one is the error Next returns.
func TestListerWatcherInjectedEventsBecomeErrors(t *testing.T) {
	tests := []struct {
		name string
		ev   podEvent
		want error
	}{
		{name: "no object", ev: podEvent{Type: watch.Added}, want: source.ErrNilObject},
		{name: "unknown type", ev: podEvent{Type: "WEIRD", Object: pod("ns", "a", nil)}, want: source.ErrMalformed},
		{name: "error without status", ev: podEvent{Type: watch.Error}, want: source.ErrMalformed},
		{name: "error with a pod", ev: podEvent{Type: watch.Error, Object: pod("ns", "a", nil)}, want: source.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := sourcetest.NewFake(podOptions{})
				src, err := source.FromListerWatcher[*corev1.Pod](f.ListerWatcher())
				if err != nil {
					t.Fatal(err)
				}
				w, err := src.Watch(t.Context(), metav1.ListOptions{ResourceVersion: "100"})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
				f.InjectEvent(tt.ev)
				_, err = w.Next(t.Context())
				var serr *source.Error
				if !errors.Is(err, tt.want) || !errors.As(err, &serr) || serr.Phase != source.PhaseWatch {
					t.Errorf("Next = %v, want an *source.Error in phase watch wrapping %v", err, tt.want)
				}
			})
		})
	}
}

// TestListerWatcherFeedsClientGoInformer runs a client-go shared informer
// on the fake, with and without streaming lists: it syncs, sees later
// changes, and leaves nothing running once stopped.
func TestListerWatcherFeedsClientGoInformer(t *testing.T) {
	for _, noWatchList := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoWatchList=%v", noWatchList), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testInformer(t, noWatchList) })
		})
	}
}

func testInformer(t *testing.T, noWatchList bool) {
	f := sourcetest.NewFake(podOptions{
		Resource:    schema.GroupResource{Resource: "pods"},
		NoWatchList: noWatchList,
		Objects:     []*corev1.Pod{pod("ns", "a", nil), pod("ns", "b", nil)},
	})
	inf := clientcache.NewSharedIndexInformer(f.ListerWatcher(), &corev1.Pod{}, 0, clientcache.Indexers{})
	var mu sync.Mutex
	var events []string
	record := func(verb string, obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			t.Errorf("%s of a %T", verb, obj)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		events = append(events, fmt.Sprintf("%s %s@%s", verb, p.Name, p.ResourceVersion))
	}
	taken := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := events
		events = nil
		return out
	}
	if _, err := inf.AddEventHandler(clientcache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { record("add", obj) },
		UpdateFunc: func(_, obj any) { record("update", obj) },
		DeleteFunc: func(obj any) { record("delete", obj) },
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	if !clientcache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	synctest.Wait()
	initial := taken()
	slices.Sort(initial)
	if diff := cmp.Diff([]string{"add a@101", "add b@102"}, initial); diff != "" {
		t.Errorf("initial events (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ns/a", "ns/b"}, sortedKeys(inf.GetStore())); diff != "" {
		t.Errorf("store after sync (-want +got)\n%s", diff)
	}
	// With streaming lists the informer syncs from a watch alone; without,
	// the refused streaming watch falls back to one list.
	if want := map[bool]int{false: 0, true: 1}[noWatchList]; f.ListCalls() != want {
		t.Errorf("ListCalls() after sync = %d, want %d", f.ListCalls(), want)
	}

	mustDo(t)(f.Create(pod("ns", "c", nil)))
	mustDo(t)(f.Update(pod("ns", "a", map[string]string{"v": "2"})))
	mustDo(t)(f.Delete(key("ns", "b")))
	synctest.Wait()
	if diff := cmp.Diff([]string{"add c@103", "update a@104", "delete b@105"}, taken()); diff != "" {
		t.Errorf("later events (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ns/a", "ns/c"}, sortedKeys(inf.GetStore())); diff != "" {
		t.Errorf("store after the changes (-want +got)\n%s", diff)
	}
	if got := inf.LastSyncResourceVersion(); got != "105" {
		t.Errorf("LastSyncResourceVersion() = %q, want 105", got)
	}

	// A cut watch is resumed from the last version seen: nothing is lost.
	f.CutWatches()
	mustDo(t)(f.Create(pod("ns", "d", nil)))
	time.Sleep(5 * time.Second) // past the reflector's backoff, in the bubble's clock
	synctest.Wait()
	if diff := cmp.Diff([]string{"add d@106"}, taken()); diff != "" {
		t.Errorf("events across a cut watch (-want +got)\n%s", diff)
	}

	cancel()
	<-done
	synctest.Wait()
	if n := f.OpenWatches(); n != 0 {
		t.Errorf("OpenWatches() after the informer stopped = %d, want 0", n)
	}
}

func sortedKeys(s clientcache.Store) []string {
	keys := s.ListKeys()
	slices.Sort(keys)
	return keys
}
