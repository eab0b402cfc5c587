package informertest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/informertest"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

type podChecker = informertest.Checker[*corev1.Pod]

func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, ResourceVersion: rv, UID: types.UID("u-" + name)}}
}

func fakeOf(n int) *sourcetest.Fake[*corev1.Pod] {
	var pods []*corev1.Pod
	for i := range n {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: fmt.Sprintf("p-%d", i)}})
	}
	return sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: pods})
}

// run runs inf until the test ends.
func run(t *testing.T, inf *typed.Informer[*corev1.Pod]) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// setup is an informer on src with a checker of truth, its handler added,
// running.
func setup(t *testing.T, truth, src source.Source[*corev1.Pod], opts informertest.Options[*corev1.Pod], report bool) (*podChecker, *typed.Informer[*corev1.Pod]) {
	t.Helper()
	if opts.PollInterval == 0 {
		opts.PollInterval = time.Second // virtual: polls cost no real time
	}
	chk, err := informertest.NewChecker(truth, opts)
	if err != nil {
		t.Fatal(err)
	}
	var iopts typed.Options[*corev1.Pod]
	if report {
		iopts.ErrorHandler = chk.ErrorHandler
	}
	inf, err := typed.NewInformer(src, iopts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chk.AddHandler(inf, typed.HandlerOptions{}); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	return chk, inf
}

// converge runs Converge with a bound, a hang guard that the bubble's
// virtual clock reaches only if nothing can move any more.
func converge(t *testing.T, chk *podChecker, inf *typed.Informer[*corev1.Pod]) error {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	return chk.Converge(ctx, inf)
}

// TestConvergeHolds: an informer on a faulty fake that churns converges,
// and the checker says so, with every handler's calls counted.
func TestConvergeHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(50)
		faulty, err := sourcetest.NewFaulty[*corev1.Pod](fake, sourcetest.FaultOptions{Seed: 3, ListRate: 0.2, WatchRate: 0.3, NextRate: 0.05})
		if err != nil {
			t.Fatal(err)
		}
		chk, inf := setup(t, fake, faulty, informertest.Options[*corev1.Pod]{Faults: faulty}, true)
		for i := range 200 {
			k := cache.Key{Namespace: "a", Name: fmt.Sprintf("p-%d", i%60)}
			if _, err := fake.Get(k); err != nil {
				_, _ = fake.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}})
			} else if i%3 == 0 {
				_, _ = fake.Delete(k)
			} else {
				_, _ = fake.Update(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name, Labels: map[string]string{"i": fmt.Sprint(i)}}})
			}
			time.Sleep(100 * time.Millisecond)
		}
		faulty.Heal()
		if err := converge(t, chk, inf); err != nil {
			t.Fatal(err)
		}
		if len(faulty.Log()) == 0 || chk.Counts().Total() == 0 {
			t.Errorf("faults %d, calls %+v: the test tested nothing", len(faulty.Log()), chk.Counts())
		}
	})
}

// TestConvergeCatches: each broken invariant is reported, by name.
func TestConvergeCatches(t *testing.T) {
	tests := []struct {
		name string
		// broken sets up an informer that breaks an invariant, and returns
		// the checker and the informer to converge.
		broken func(t *testing.T) (*podChecker, *typed.Informer[*corev1.Pod])
		want   []string // prefixes of the expected violations
	}{
		{"I1 and I2: the informer serves another source", func(t *testing.T) (*podChecker, *typed.Informer[*corev1.Pod]) {
			return setup(t, fakeOf(3), fakeOf(2), informertest.Options[*corev1.Pod]{}, true)
		}, []string{"I1:", "I2 handler 0:"}},
		{"I4: a second Add", func(t *testing.T) (*podChecker, *typed.Informer[*corev1.Pod]) {
			chk, inf := setup(t, fakeOf(0), fakeOf(0), informertest.Options[*corev1.Pod]{}, true)
			h := chk.Handler()
			h.OnAdd(pod("x", "5"), false)
			h.OnAdd(pod("x", "6"), false)
			h.OnDelete(handler.Deleted[*corev1.Pod]{Key: cache.Key{Namespace: "a", Name: "x"}, Object: pod("x", "7")})
			return chk, inf
		}, []string{"handler 1: I4 a/x: Add"}},
		{"I4: Update and Delete of unknown keys", func(t *testing.T) (*podChecker, *typed.Informer[*corev1.Pod]) {
			chk, inf := setup(t, fakeOf(0), fakeOf(0), informertest.Options[*corev1.Pod]{}, true)
			h := chk.Handler()
			h.OnUpdate(pod("x", "5"), pod("x", "6"))
			h.OnDelete(handler.Deleted[*corev1.Pod]{Key: cache.Key{Namespace: "a", Name: "y"}, Object: pod("y", "7")})
			return chk, inf
		}, []string{"I2 handler 1:", "handler 1: I4 a/x: Update", "handler 1: I4 a/y: Delete"}},
		{"I3: a version goes back", func(t *testing.T) (*podChecker, *typed.Informer[*corev1.Pod]) {
			chk, inf := setup(t, fakeOf(0), fakeOf(0), informertest.Options[*corev1.Pod]{}, true)
			h := chk.Handler()
			p := pod("x", "9")
			h.OnAdd(p, false)
			h.OnUpdate(p, pod("x", "4"))
			h.OnDelete(handler.Deleted[*corev1.Pod]{Key: cache.KeyOf(p), Object: p})
			return chk, inf
		}, []string{"handler 1: I3 a/x: update at RV 4 after RV 9"}},
		{"an Update from another object than the one delivered", func(t *testing.T) (*podChecker, *typed.Informer[*corev1.Pod]) {
			chk, inf := setup(t, fakeOf(0), fakeOf(0), informertest.Options[*corev1.Pod]{}, true)
			h := chk.Handler()
			p := pod("x", "1")
			h.OnAdd(p, false)
			h.OnUpdate(pod("x", "1"), pod("x", "2"))
			h.OnDelete(handler.Deleted[*corev1.Pod]{Key: cache.KeyOf(p), Object: p})
			return chk, inf
		}, []string{"handler 1: a/x: Update's old object"}},
		{"I7: a delivered object is mutated", func(t *testing.T) (*podChecker, *typed.Informer[*corev1.Pod]) {
			chk, inf := setup(t, fakeOf(1), fakeOf(1), informertest.Options[*corev1.Pod]{}, true)
			if err := inf.WaitForSync(t.Context()); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			p, err := inf.Lister().Namespace("a").Get("p-0")
			if err != nil {
				t.Fatal(err)
			}
			p.Labels = map[string]string{"mutated": "yes"}
			return chk, inf
		}, []string{"handler 0: I7 a/p-0"}},
		{"I6: an injected error is not reported", func(t *testing.T) (*podChecker, *typed.Informer[*corev1.Pod]) {
			fake := fakeOf(2)
			faulty, err := sourcetest.NewFaulty[*corev1.Pod](fake, sourcetest.FaultOptions{
				Script: []sourcetest.Fault{{Kind: sourcetest.FaultTooManyRequests, Op: sourcetest.OpWatch, At: 1}},
			})
			if err != nil {
				t.Fatal(err)
			}
			return setup(t, fake, faulty, informertest.Options[*corev1.Pod]{Faults: faulty}, false)
		}, []string{"I6: injected error did not reach"}},
		{"I6: a nil object the informer does not report", func(t *testing.T) (*podChecker, *typed.Informer[*corev1.Pod]) {
			fake := fakeOf(2)
			faulty, err := sourcetest.NewFaulty[*corev1.Pod](fake, sourcetest.FaultOptions{
				Script: []sourcetest.Fault{{Kind: sourcetest.FaultNilObject, Op: sourcetest.OpNext, At: 1}},
			})
			if err != nil {
				t.Fatal(err)
			}
			return setup(t, fake, faulty, informertest.Options[*corev1.Pod]{Faults: faulty}, false)
		}, []string{"I6: injected error did not reach the ErrorHandler: 1 events with a nil object"}},
		{"I8: lists without a reason", func(t *testing.T) (*podChecker, *typed.Informer[*corev1.Pod]) {
			fake := fakeOf(2)
			faulty, err := sourcetest.NewFaulty[*corev1.Pod](fake, sourcetest.FaultOptions{})
			if err != nil {
				t.Fatal(err)
			}
			chk, inf := setup(t, fake, faulty, informertest.Options[*corev1.Pod]{Faults: faulty}, true)
			for range 2 {
				if _, err := faulty.List(t.Context(), metav1.ListOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			return chk, inf
		}, []string{"I8: 3 lists completed, want at most 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				chk, inf := tt.broken(t)
				err := converge(t, chk, inf)
				var d *informertest.Divergence
				if !errors.As(err, &d) || !errors.Is(err, informertest.ErrDiverged) {
					t.Fatalf("Converge = %v, want a *Divergence", err)
				}
				var got []string
				for _, want := range tt.want {
					for _, v := range d.Violations {
						if strings.HasPrefix(v, want) {
							got = append(got, want)
							break
						}
					}
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("violations found (-want +got):\n%s\nall: %v", diff, err)
				}
			})
		})
	}
}

// TestDivergencePrintsThePlan: the error names the plan and the faults,
// so that a failure replays.
func TestDivergencePrintsThePlan(t *testing.T) {
	d := &informertest.Divergence{
		Violations: []string{"I1: the cache differs"},
		Plan:       "fault plan: Seed 42",
		Faults:     []sourcetest.FaultRecord{{Fault: sourcetest.Fault{Kind: sourcetest.FaultCut, Op: sourcetest.OpNext, At: 3}, Seq: 1}},
	}
	want := "informertest: invariants violated: 1 violations\n  I1: the cache differs\nreplay with fault plan: Seed 42\n  #1 cut@next#3 after rv \"\""
	if diff := cmp.Diff(want, d.Error()); diff != "" {
		t.Errorf("Error() (-want +got):\n%s", diff)
	}
}

// TestNewCheckerRefuses: a nil truth fails at construction.
func TestNewCheckerRefuses(t *testing.T) {
	for _, truth := range []source.Source[*corev1.Pod]{nil, (*sourcetest.Fake[*corev1.Pod])(nil)} {
		if c, err := informertest.NewChecker(truth, informertest.Options[*corev1.Pod]{}); !errors.Is(err, informertest.ErrNilTruth) || c != nil {
			t.Errorf("NewChecker(%#v) = %v, %v; want ErrNilTruth", truth, c, err)
		}
	}
}
