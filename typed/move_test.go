package typed_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/informertest"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// namespaces is a shard of the objects of some namespaces; the fake does
// not apply its selector, so the informer filters on the client.
type namespaces []string

func (n namespaces) Selector() string { return "ns in (" + strings.Join(n, ",") + ")" }

func (n namespaces) Contains(obj metav1.Object) bool { return slices.Contains(n, obj.GetNamespace()) }

// keysOf names what a recorder holds, by key, sorted.
func keysOf(r *informertest.Recorder[*corev1.Pod]) []string {
	var out []string
	for k := range r.Replay() {
		out = append(out, k.String())
	}
	slices.Sort(out)
	return out
}

// TestMove moves an informer from namespaces a and b to b and c, the way
// package sharding does: first to what it keeps (b) with nothing to list,
// then to b and c. The handler is told that a's pods moved out (and of
// nothing else of a from then on), hears nothing while the informer is
// between shards, then gets c's pods as adds, b's as updates, and a b pod
// deleted meanwhile as a deletion with final state unknown; every call
// keeps the recorder's invariants.
func TestMove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: true},
			it.Pod("a", "a1", nil), it.Pod("b", "b1", nil), it.Pod("b", "b2", nil), it.Pod("c", "c1", nil))
		inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{Shard: namespaces{"a", "b"}})
		rec := it.NewRecorder()
		reg, err := inf.AddHandler(rec)
		if err != nil {
			t.Fatal(err)
		}
		it.Run(t, inf)
		if err := typed.WaitForCacheSync(t.Context(), inf, reg); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if diff := cmp.Diff([]string{"a/a1", "b/b1", "b/b2"}, keysOf(rec)); diff != "" {
			t.Fatalf("before the move (-want +got):\n%s", diff)
		}
		if !inf.Status().Shard.Synced {
			t.Error("Shard.Synced false with the shard's list in the cache")
		}

		if err := inf.Move(t.Context(), namespaces{"b"}, nil); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if diff := cmp.Diff([]string{"b/b1", "b/b2"}, keysOf(rec)); diff != "" {
			t.Errorf("after moving to b, nothing listed (-want +got):\n%s", diff)
		}
		if evs := rec.Events(cache.Key{Namespace: "a", Name: "a1"}); len(evs) != 2 || !evs[1].Moved || evs[1].FSU {
			t.Errorf("a/a1 events %+v, want an add then a moved-out deletion", evs)
		}
		if st := inf.Status(); st.Shard.Synced || st.Shard.Selector != "" || inf.Store().Len() != 2 {
			t.Errorf("between shards: Synced %v, selector %q, %d cached; want false, none, 2", st.Shard.Synced, st.Shard.Selector, inf.Store().Len())
		}
		// Between shards nothing is heard.
		calls := rec.Counts().Total()
		if _, err := fake.Delete(cache.Key{Namespace: "b", Name: "b2"}); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, fake, it.Pod("a", "a2", nil))
		synctest.Wait()
		if rec.Counts().Total() != calls {
			t.Errorf("%d calls between shards, want none", rec.Counts().Total()-calls)
		}

		if err := inf.Move(t.Context(), namespaces{"b", "c"}, namespaces{"b", "c"}); err != nil {
			t.Fatal(err)
		}
		it.Eventually(t, "the list of b and c", func() bool { return inf.Status().Shard.Synced })
		synctest.Wait()
		if diff := cmp.Diff([]string{"b/b1", "c/c1"}, keysOf(rec)); diff != "" {
			t.Errorf("after moving to b and c (-want +got):\n%s", diff)
		}
		if evs := rec.Events(cache.Key{Namespace: "b", Name: "b2"}); len(evs) != 2 || !evs[1].FSU || evs[1].Moved {
			t.Errorf("b/b2 events %+v, want an add, then a deletion with final state unknown", evs)
		}
		if evs := rec.Events(cache.Key{Namespace: "b", Name: "b1"}); len(evs) != 2 || evs[1].Kind != "update" {
			t.Errorf("b/b1 events %+v, want an add, then an update", evs)
		}
		if v := rec.Violations(); len(v) != 0 {
			t.Errorf("violations: %v", v)
		}
		if sel := inf.Status().Shard.Selector; sel != "ns in (b,c)" {
			t.Errorf("selector %q after the move", sel)
		}
	})
}

// TestMoveFencesQueuedNotifications: notifications queued for objects
// the informer no longer holds are dropped at once; Move waits for a call
// in progress (here stuck until the test lets it go) and, bounded by its
// context, says which handler it waited for.
func TestMoveFencesQueuedNotifications(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: true}, it.Pod("a", "a1", nil), it.Pod("b", "b1", nil))
		inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{Shard: namespaces{"a", "b"}})
		release := make(chan struct{})
		var got []string
		reg, err := inf.AddHandlerWithOptions(handler.Funcs[*corev1.Pod]{
			UpdateFunc: func(_, p *corev1.Pod) {
				got = append(got, "update "+p.Namespace+"/"+p.Name+"@"+p.ResourceVersion)
				if len(got) == 1 {
					<-release
				}
			},
			DeleteFunc: func(d handler.Deleted[*corev1.Pod]) {
				got = append(got, fmt.Sprintf("delete %v moved=%v", d.Key, d.MovedOut))
			},
		}, typed.HandlerOptions{Name: "slow"})
		if err != nil {
			t.Fatal(err)
		}
		it.Run(t, inf)
		if err := typed.WaitForCacheSync(t.Context(), inf, reg); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := fake.Update(it.Pod("a", "a1", map[string]string{"n": fmt.Sprint(i)})); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait() // the first update's call is stuck; two more are queued
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		err = inf.Move(ctx, namespaces{"b"}, nil)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "handler slow") {
			t.Errorf("Move with a stuck handler = %v, want the deadline naming the handler", err)
		}
		close(release)
		synctest.Wait()
		if want := []string{"update a/a1@103", "delete a/a1 moved=true"}; !slices.Equal(got, want) {
			t.Errorf("calls %q, want %q: the queued updates of a moved object are dropped", got, want)
		}
		if n := reg.Pending(); n != 0 {
			t.Errorf("%d pending after the move, want 0", n)
		}
	})
}

// TestMoveErrors: an informer without a shard cannot move; one that
// stopped says so.
func TestMoveErrors(t *testing.T) {
	plain := mustInformer(t, fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}), typed.Options[*corev1.Pod]{})
	if err := plain.Move(t.Context(), nil, nil); !errors.Is(err, typed.ErrNotSharded) {
		t.Errorf("Move of an informer without a shard = %v, want ErrNotSharded", err)
	}
	sharded := mustInformer(t, fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}), typed.Options[*corev1.Pod]{Shard: namespaces{"a"}})
	stop := it.Run(t, sharded)
	stop()
	if err := sharded.Move(t.Context(), nil, nil); !errors.Is(err, typed.ErrStopped) {
		t.Errorf("Move after Run returned = %v, want ErrStopped", err)
	}
}

func mustCreate(t *testing.T, f *sourcetest.Fake[*corev1.Pod], p *corev1.Pod) {
	t.Helper()
	if _, err := f.Create(p); err != nil {
		t.Fatal(err)
	}
}
