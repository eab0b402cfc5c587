package sourcetest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

func TestFakeWatchCopies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sourcetest.NewFake(podOptions{})
		w1 := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100"})
		w2 := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100"})
		added := mustDo(t)(f.Create(pod("ns", "a", map[string]string{"k": "v"})))
		e1, err1 := w1.Next(t.Context())
		e2, err2 := w2.Next(t.Context())
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if e1.Object == e2.Object || e1.Object == added {
			t.Fatal("watchers share objects")
		}
		e1.Object.Labels["k"] = "changed by watcher 1"
		e3, err := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100"}).Next(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		stored, _ := f.Get(key("ns", "a"))
		for name, p := range map[string]*corev1.Pod{"watcher 2": e2.Object, "replay": e3.Object, "store": stored} {
			if p.Labels["k"] != "v" {
				t.Errorf("%s sees a change made by watcher 1: %v", name, p.Labels)
			}
		}
	})
}

func TestFakeWatchStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sourcetest.NewFake(podOptions{})
		w := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "100"})
		mustDo(t)(f.Create(pod("ns", "a", nil)))
		blocked := make(chan error, 1)
		w2 := mustWatch(t, f, metav1.ListOptions{ResourceVersion: "101"})
		go func() {
			_, err := w2.Next(context.Background())
			blocked <- err
		}()
		synctest.Wait()
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(w.Stop)
			wg.Go(w2.Stop)
		}
		wg.Wait()
		if err := <-blocked; !errors.Is(err, source.ErrWatchClosed) {
			t.Errorf("blocked Next: %v, want ErrWatchClosed", err)
		}
		if _, err := w.Next(t.Context()); !errors.Is(err, source.ErrWatchClosed) {
			t.Errorf("Next after Stop with an event pending: %v, want ErrWatchClosed", err)
		}
		if n := f.OpenWatches(); n != 0 {
			t.Errorf("OpenWatches() = %d, want 0", n)
		}

		// The watch's context ends the stream too; Next's context only
		// ends the call.
		ctx, cancel := context.WithCancel(t.Context())
		w3, err := f.Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nextCtx, cancelNext := context.WithCancel(t.Context())
		cancelNext()
		if _, err := w3.Next(nextCtx); !errors.Is(err, context.Canceled) {
			t.Errorf("Next with a cancelled context: %v", err)
		}
		if ev, err := w3.Next(t.Context()); err != nil || ev.Type != watch.Added {
			t.Errorf("Next after a cancelled Next: %v, %v", ev, err)
		}
		cancel()
		synctest.Wait()
		if _, err := w3.Next(t.Context()); !errors.Is(err, source.ErrWatchClosed) {
			t.Errorf("Next after the watch context ended: %v, want ErrWatchClosed", err)
		}
		if n := f.OpenWatches(); n != 0 {
			t.Errorf("OpenWatches() = %d, want 0", n)
		}
		if _, err := f.Watch(ctx, metav1.ListOptions{}); !errors.Is(err, context.Canceled) {
			t.Errorf("Watch with an ended context: %v", err)
		}
	})
}

// TestFakeConcurrent runs writers, watchers, lists and faults at once; each
// watcher must end with exactly the fake's final state.
func TestFakeConcurrent(t *testing.T) {
	const writers, perWriter, watchers = 3, 200, 3
	f := sourcetest.NewFake(podOptions{Window: 50})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	type result struct {
		state map[cache.Key]string
		err   error
	}
	results := make(chan result, watchers)
	started := make(chan struct{}, watchers)
	var done sync.WaitGroup
	final := make(chan string, watchers) // the last resourceVersion, once writers are done
	for range watchers {
		done.Go(func() {
			state := map[cache.Key]string{}
			w, err := f.Watch(ctx, metav1.ListOptions{AllowWatchBookmarks: true})
			started <- struct{}{}
			if err != nil {
				results <- result{err: err}
				return
			}
			defer w.Stop()
			var last string
			for {
				ev, err := w.Next(ctx)
				if err != nil {
					results <- result{err: err}
					return
				}
				switch ev.Type {
				case watch.Added, watch.Modified:
					state[cache.KeyOf(ev.Object)] = ev.Object.ResourceVersion
				case watch.Deleted:
					delete(state, cache.KeyOf(ev.Object))
				case watch.Bookmark:
					if last == "" {
						last = <-final
					}
					if ev.Object.ResourceVersion == last {
						results <- result{state: state}
						return
					}
				default:
					results <- result{err: fmt.Errorf("unexpected event type %q", ev.Type)}
					return
				}
			}
		})
	}
	for range watchers {
		<-started
	}
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			for j := range perWriter {
				p := pod("ns", fmt.Sprintf("w%d-%d", i, j%7), map[string]string{"j": fmt.Sprint(j)})
				if _, err := f.Create(p); err != nil {
					if _, err := f.Update(p); err != nil {
						t.Errorf("update: %v", err)
					}
				}
				if j%5 == 0 {
					_, _ = f.Delete(cache.KeyOf(p))
				}
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			if _, err := f.List(ctx, metav1.ListOptions{Limit: 3}); err != nil {
				t.Errorf("list: %v", err)
			}
			f.Bookmark()
			_ = f.OpenWatches()
			short, err := f.Watch(ctx, metav1.ListOptions{})
			if err != nil {
				t.Errorf("watch: %v", err)
				continue
			}
			wg.Go(short.Stop) // concurrently with the rest, and waited for
		}
	})
	wg.Wait()
	rv := f.ResourceVersion()
	for range watchers {
		final <- rv
	}
	f.Bookmark()
	done.Wait()
	want := map[cache.Key]string{}
	for _, p := range f.Items() {
		want[cache.KeyOf(p)] = p.ResourceVersion
	}
	for range watchers {
		r := <-results
		if r.err != nil {
			t.Fatalf("watcher: %v", r.err)
		}
		if diff := cmp.Diff(want, r.state); diff != "" {
			t.Errorf("watcher state (-want +got)\n%s", diff)
		}
	}
}
