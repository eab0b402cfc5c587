// Package informertest is the test harness the module's informer tests
// share, the unit tests on fake sources and the integration suite on a
// real server: pod builders, helpers over informertest.Recorder (which
// checks the invariants of every handler call, I2 to I4),
// helpers to run an informer for the length of a test and to wait for
// convergence (I1), and an error sink.
package informertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
)

// Pod returns a pod with the given namespace, name and labels.
func Pod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
}

// Pods returns n pods p-0... spread over namespaces ns-0, ns-1, ns-2.
func Pods(n int) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, n)
	for i := range n {
		out = append(out, Pod(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("p-%d", i), nil))
	}
	return out
}

// Runner is what Run runs: an informer, or anything with the same Run.
type Runner interface {
	Run(ctx context.Context) error
}

// Run runs r until the returned stop is called or the test ends; stop
// cancels Run, waits for it and checks that it returned nil. The bound is
// a deadlock guard, not a performance assertion (in a synctest bubble it
// is virtual and fires only if Run hangs).
func Run(t testing.TB, r Runner) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run returned %v, want nil", err)
				}
			case <-time.After(2 * time.Minute):
				t.Errorf("I6: Run did not return after cancel (deadlock guard)")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// Eventually polls cond until it holds, every 5ms; after ten minutes
// (virtual inside a synctest bubble, where backoffs of up to a minute pass
// in no real time) it fails the test saying what it waited for. The bound
// only guards against a hang; it is not a performance assertion.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !poll(cond) {
		t.Fatalf("gave up waiting: %s", what)
	}
}

// NewRecorder returns a recorder of pods that checks I2 to I4
// (informertest.Recorder), what most of the module's tests use.
func NewRecorder() *informertest.Recorder[*corev1.Pod] {
	return informertest.NewRecorder[*corev1.Pod](informertest.RecorderOptions{})
}

// Count returns how many calls of kind ("add", "update", "delete") r got.
func Count[T cache.Object](r *informertest.Recorder[T], kind string) int {
	n := 0
	for _, evs := range r.All() {
		for _, e := range evs {
			if e.Kind == kind {
				n++
			}
		}
	}
	return n
}

// Kinds counts r's calls by kind, with final-state-unknown deletes as
// "delete(fsu)" and initial adds as "add(initial)": a summary for test
// logs.
func Kinds[T cache.Object](r *informertest.Recorder[T]) map[string]int {
	out := map[string]int{}
	for _, evs := range r.All() {
		for _, e := range evs {
			k := e.Kind
			if e.FSU {
				k += "(fsu)"
			}
			if e.Initial {
				k += "(initial)"
			}
			out[k]++
		}
	}
	return out
}

// ErrSink is an Options.ErrorHandler that keeps every error.
type ErrSink struct {
	mu   sync.Mutex
	errs []error
}

// Handle records err.
func (s *ErrSink) Handle(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, err)
}

// All returns a copy of the errors so far.
func (s *ErrSink) All() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.errs)
}

// Count returns how many errors satisfy match.
func (s *ErrSink) Count(match func(error) bool) int {
	n := 0
	for _, err := range s.All() {
		if match(err) {
			n++
		}
	}
	return n
}

// Is returns a match for errors.Is(err, target).
func Is(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

// Converge waits until store and every recorder hold exactly fake's
// content, then checks I1 (the cache) and, per recorder, I2-I4.
func Converge(t testing.TB, fake *sourcetest.Fake[*corev1.Pod], store *cache.Store[*corev1.Pod], recs ...*informertest.Recorder[*corev1.Pod]) {
	t.Helper()
	ConvergeTo(t, informertest.StateOf(fake.Items()), store, recs...)
}

// ConvergeTo waits until store and every recorder hold exactly want (the
// source's final state, such as a LIST from a real server), then checks
// I1 (the cache) and, per recorder, I2-I4. Like Eventually, it gives up
// after ten minutes, and then fails the test with the difference.
func ConvergeTo[T cache.Object](t testing.TB, want informertest.State, store *cache.Store[T], recs ...*informertest.Recorder[T]) {
	t.Helper()
	if !poll(func() bool { return maps.Equal(want, informertest.StateOf(store.List())) }) {
		t.Fatalf("I1: cache did not converge (-want +got):\n%s", truncate(cmp.Diff(want, informertest.StateOf(store.List()))))
	}
	for i, r := range recs {
		if !poll(func() bool { return maps.Equal(want, r.Replay()) }) {
			t.Fatalf("I2: handler %d did not converge (-want +got):\n%s", i, truncate(cmp.Diff(want, r.Replay())))
		}
	}
	if got := informertest.StateOf(store.List()); !maps.Equal(want, got) {
		t.Errorf("I1: cache differs from the server (-want +got):\n%s", truncate(cmp.Diff(want, got)))
	}
	for _, r := range recs {
		r.Check(t, want)
	}
}

// waitBound is how long Eventually and ConvergeTo wait: a hang guard,
// shorter than go test's default timeout of 10 minutes, so that a wait
// that never ends fails its test by name, not the whole package.
const waitBound = 3 * time.Minute

// poll polls cond every 5ms until it holds (true) or waitBound passes.
func poll(cond func() bool) bool {
	deadline := time.Now().Add(waitBound)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// maxDiff bounds the diffs in failure messages: a diff of two caches of
// thousands of objects says no more than its first lines.
const maxDiff = 8000

func truncate(s string) string {
	if len(s) <= maxDiff {
		return s
	}
	return s[:maxDiff] + fmt.Sprintf("\n... (%d more bytes)", len(s)-maxDiff)
}
