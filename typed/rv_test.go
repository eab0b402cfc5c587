package typed_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/cache"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// TestReadYourWrites: after each write, WaitForResourceVersion with the
// version the write returned makes the next lister read see that write
// (or a newer state), and WaitForObject returns it; a deletion is seen as
// gone. 1000 cycles, 0 stale reads.
func TestReadYourWrites(t *testing.T) {
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(10)...)
	inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{})
	it.Run(t, inf)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a hang guard
	defer cancel()
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	stale := 0
	for i := range 1000 {
		p := it.Pod("ns-1", fmt.Sprint("w-", i%20), map[string]string{"n": fmt.Sprint(i)})
		var (
			got *corev1.Pod
			err error
		)
		if i%20 == 0 || i < 20 {
			got, err = fake.Create(p)
			if err != nil { // it exists: update it
				cur, gerr := fake.Get(cache.KeyOf(p))
				if gerr != nil {
					t.Fatal(gerr)
				}
				cur = cur.DeepCopy()
				cur.Labels = p.Labels
				got, err = fake.Update(cur)
			}
		} else {
			cur, gerr := fake.Get(cache.KeyOf(p))
			if gerr != nil {
				t.Fatal(gerr)
			}
			cur = cur.DeepCopy()
			cur.Labels = p.Labels
			got, err = fake.Update(cur)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := inf.WaitForResourceVersion(ctx, got.ResourceVersion); err != nil {
			t.Fatal(err)
		}
		cached, err := inf.Lister().Namespace("ns-1").Get(got.Name)
		if err != nil || cached.Labels["n"] != fmt.Sprint(i) {
			stale++
		}
	}
	if stale != 0 {
		t.Errorf("%d stale reads in 1000 write, wait, read cycles", stale)
	}

	// The per-key form, for an update and for a deletion.
	cur, err := fake.Get(cache.Key{Namespace: "ns-1", Name: "w-3"})
	if err != nil {
		t.Fatal(err)
	}
	cur = cur.DeepCopy()
	cur.Labels = map[string]string{"n": "last"}
	upd, err := fake.Update(cur)
	if err != nil {
		t.Fatal(err)
	}
	obj, found, err := inf.WaitForObject(ctx, cache.KeyOf(upd), upd.ResourceVersion)
	if err != nil || !found || obj.Labels["n"] != "last" {
		t.Errorf("WaitForObject after an update = %v, %v, %v; want the updated pod", obj, found, err)
	}
	del, err := fake.Delete(cache.KeyOf(upd))
	if err != nil {
		t.Fatal(err)
	}
	if _, found, err := inf.WaitForObject(ctx, cache.KeyOf(upd), del.ResourceVersion); err != nil || found {
		t.Errorf("WaitForObject after a delete: found %v, %v; want gone", found, err)
	}
}

// TestWaitForResourceVersionEnds: a version the cache has not reached
// waits until ctx ends; a version that is not a number is an error; a
// bookmark newer than the version ends the wait; a stopped informer says
// so.
func TestWaitForResourceVersionEnds(t *testing.T) {
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(3)...)
	inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{LabelSelector: "watched=yes"})
	stop := it.Run(t, inf)
	if err := inf.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := inf.WaitForResourceVersion(ctx, "999999"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("wait for a future version = %v, want the deadline", err)
	}
	if err := inf.WaitForResourceVersion(t.Context(), "abc"); !errors.Is(err, typed.ErrBadResourceVersion) {
		t.Errorf("wait for %q = %v, want ErrBadResourceVersion", "abc", err)
	}
	// A write the informer does not watch (another label) moves the
	// server's version but sends the informer nothing: a bookmark carries
	// the newer version.
	other, err := fake.Create(it.Pod("ns-0", "unwatched", nil))
	if err != nil {
		t.Fatal(err)
	}
	rv := other.ResourceVersion
	done := make(chan error, 1)
	go func() { done <- inf.WaitForResourceVersion(t.Context(), rv) }()
	select {
	case err := <-done:
		t.Fatalf("the wait for an unseen version ended before any bookmark: %v", err)
	case <-time.After(50 * time.Millisecond): // not a timing assertion: it must still wait
	}
	fake.Bookmark()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("wait for the bookmarked version = %v", err)
		}
	case <-time.After(time.Minute): // a hang guard
		t.Fatal("a bookmark at the version did not end the wait")
	}
	go func() { done <- inf.WaitForResourceVersion(context.Background(), "999999") }()
	stop()
	select {
	case err := <-done:
		if !errors.Is(err, typed.ErrStopped) {
			t.Errorf("wait when the informer stops = %v, want ErrStopped", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the wait did not end with the informer")
	}
}
