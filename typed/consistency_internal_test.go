package typed

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source/sourcetest"
)

// The helpers of this file's tests, which see the informer's inside: the
// shared harness (internal/informertest) imports package typed through
// package informertest, so a test of package typed cannot use it.

func testPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func testPods(n int) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, n)
	for i := range n {
		out = append(out, testPod(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("p-%d", i)))
	}
	return out
}

// errSink keeps the errors an informer reports.
type errSink struct {
	mu   sync.Mutex
	errs []error
}

func (s *errSink) handle(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, err)
}

func (s *errSink) all() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.errs)
}

// runInformer runs inf for the test; stopping it must return nil.
func runInformer(t *testing.T, inf *Informer[*corev1.Pod]) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	})
}

// converge waits, in the bubble, until the cache holds what the fake does.
func converge(t *testing.T, fake *sourcetest.Fake[*corev1.Pod], inf *Informer[*corev1.Pod]) {
	t.Helper()
	state := func(ps []*corev1.Pod) map[cache.Key]string {
		m := map[cache.Key]string{}
		for _, p := range ps {
			m[cache.KeyOf(p)] = p.ResourceVersion + "/" + string(p.UID)
		}
		return m
	}
	for range 600 {
		if maps.Equal(state(fake.Items()), state(inf.Store().List())) {
			return
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("the cache did not converge (-want +got):\n%s", cmp.Diff(state(fake.Items()), state(inf.Store().List())))
}

// corrupt changes the cache behind the writer's back, as a bug in it
// would: the store moves to a new revision and the informer takes it for
// the state at the version it had seen.
func (inf *Informer[T]) corrupt(t *testing.T, changes ...cache.Change[T]) {
	t.Helper()
	rev, err := inf.writer.Apply(changes)
	if err != nil {
		t.Fatal(err)
	}
	inf.seen.mu.Lock()
	inf.seen.rev = rev
	inf.seen.mu.Unlock()
}

// TestConsistencyCheck corrupts a synced cache three ways (a key removed,
// a key added, an object replaced by an older version of it) and checks
// that the next consistency check reports the divergence with the key
// (ErrorHandler, Status().Checks), that the relist it starts repairs the
// cache (I1), and that the checks after the repair find nothing. (The
// corruption bypasses the handlers, so what they hear of the repair is
// relative to a cache they were not told about: no handler is checked.)
func TestConsistencyCheck(t *testing.T) {
	victim := cache.Key{Namespace: "ns-1", Name: "p-1"}
	cases := []struct {
		name    string
		corrupt func(old *corev1.Pod) cache.Change[*corev1.Pod]
		want    ConsistencyError
	}{
		{
			name: "missing",
			corrupt: func(*corev1.Pod) cache.Change[*corev1.Pod] {
				return cache.Change[*corev1.Pod]{Entry: cache.Entry[*corev1.Pod]{Key: victim}, Delete: true}
			},
			want: ConsistencyError{Exact: true, Missing: []cache.Key{victim}, Count: 1},
		},
		{
			name: "extra",
			corrupt: func(*corev1.Pod) cache.Change[*corev1.Pod] {
				p := testPod("ns-0", "ghost")
				p.ResourceVersion = "3"
				return cache.Change[*corev1.Pod]{Entry: cache.Entry[*corev1.Pod]{Object: p}}
			},
			want: ConsistencyError{Exact: true, Extra: []cache.Key{{Namespace: "ns-0", Name: "ghost"}}, Count: 1},
		},
		{
			name: "stale",
			corrupt: func(old *corev1.Pod) cache.Change[*corev1.Pod] {
				p := old.DeepCopy()
				p.ResourceVersion = "1"
				return cache.Change[*corev1.Pod]{Entry: cache.Entry[*corev1.Pod]{Object: p}}
			},
			want: ConsistencyError{Exact: true, Stale: []cache.Key{victim}, Count: 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{
					Objects: testPods(30), Resource: schema.GroupResource{Resource: "pods"},
				})
				var errs errSink
				inf, err := NewInformer(fake, Options[*corev1.Pod]{ErrorHandler: errs.handle, ConsistencyCheck: time.Minute, PageSize: 7})
				if err != nil {
					t.Fatal(err)
				}
				runInformer(t, inf)
				if err := inf.WaitForSync(t.Context()); err != nil {
					t.Fatal(err)
				}
				time.Sleep(90 * time.Second) // one clean check
				synctest.Wait()
				if c := inf.Status().Checks; c.ConsistencyChecks != 1 || c.Divergences != 0 {
					t.Fatalf("a clean cache: Checks %+v, want 1 check and no divergence", c)
				}
				listsBefore := fake.ListCalls()

				old, _ := inf.Store().GetByKey(victim)
				inf.corrupt(t, tc.corrupt(old))
				time.Sleep(time.Minute)
				synctest.Wait()
				var div *ConsistencyError
				for _, err := range errs.all() {
					if errors.As(err, &div) {
						break
					}
				}
				if div == nil {
					t.Fatalf("no divergence reported; errors %v", errs.all())
				}
				want := tc.want
				want.ResourceVersion = div.ResourceVersion
				if diff := cmp.Diff(&want, div); diff != "" {
					t.Errorf("divergence (-want +got):\n%s", diff)
				}
				if !errors.Is(div, ErrInconsistent) {
					t.Errorf("%v does not wrap ErrInconsistent", div)
				}
				converge(t, fake, inf)
				st := inf.Status()
				if st.Checks.Divergences != 1 || st.Stats.Relists != 1 {
					t.Errorf("after the repair: Checks %+v, Relists %d; want 1 divergence repaired by 1 relist", st.Checks, st.Stats.Relists)
				}
				if fake.ListCalls() == listsBefore {
					t.Error("the check listed nothing")
				}
				time.Sleep(3 * time.Minute)
				synctest.Wait()
				if c := inf.Status().Checks; c.Divergences != 1 || c.ConsistencyChecks < 4 {
					t.Errorf("after the repair: Checks %+v, want the later checks clean", c)
				}
			})
		})
	}
}

// compareKeys, inexact: only objects both sides hold at versions no newer
// than both lists can be compared.
func TestCompareKeysInexact(t *testing.T) {
	a, b, c := cache.Key{Name: "a"}, cache.Key{Name: "b"}, cache.Key{Name: "c"}
	cases := []struct {
		name           string
		cached, server map[cache.Key]string
		cacheRV        string
		listRV         string
		want           []cache.Key // stale
	}{
		{"same", map[cache.Key]string{a: "5"}, map[cache.Key]string{a: "5"}, "10", "12", nil},
		{"cache behind at old versions", map[cache.Key]string{a: "5"}, map[cache.Key]string{a: "8"}, "10", "12", []cache.Key{a}},
		{"server changed it after the cache's version", map[cache.Key]string{a: "5"}, map[cache.Key]string{a: "11"}, "10", "12", nil},
		{"missing and extra are not comparable", map[cache.Key]string{a: "5", b: "6"}, map[cache.Key]string{a: "5", c: "7"}, "10", "12", nil},
		{"list older than the cache", map[cache.Key]string{a: "9"}, map[cache.Key]string{a: "5"}, "10", "8", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			div := compareKeys(tc.cached, tc.server, tc.cacheRV, tc.listRV, false)
			var got []cache.Key
			if div != nil {
				got = div.Stale
				if len(div.Missing)+len(div.Extra) > 0 {
					t.Errorf("inexact comparison reported missing %v, extra %v", div.Missing, div.Extra)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("stale keys (-want +got):\n%s", diff)
			}
		})
	}
}
