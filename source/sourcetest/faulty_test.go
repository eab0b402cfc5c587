package sourcetest_test

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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

type podFaulty = sourcetest.Faulty[*corev1.Pod]

// faultyFake is a fake of three pods behind a Faulty with opts.
func faultyFake(t *testing.T, opts sourcetest.FaultOptions) (*podFake, *podFaulty) {
	t.Helper()
	fake := sourcetest.NewFake(podOptions{Objects: []*corev1.Pod{pod("a", "p0", nil), pod("a", "p1", nil), pod("a", "p2", nil)}})
	f, err := sourcetest.NewFaulty[*corev1.Pod](fake, opts)
	if err != nil {
		t.Fatal(err)
	}
	return fake, f
}

// classify names an error by what a client must tell of it: its phase,
// its API reason or content sentinel, and whether it forces a relist.
func classify(err error) string {
	var se *source.Error
	if !errors.As(err, &se) {
		if errors.Is(err, source.ErrWatchClosed) {
			return "closed"
		}
		return fmt.Sprintf("not a source.Error: %v", err)
	}
	what := string(apierrors.ReasonForError(err))
	for _, s := range []error{source.ErrWrongType, source.ErrNilObject, source.ErrMalformed} {
		if errors.Is(err, s) {
			what = s.Error()
		}
	}
	if apierrors.IsTimeout(err) && strings.Contains(err.Error(), "Too large resource version") {
		what += " too-large" // any of the server's three forms
	}
	return string(se.Phase) + ": " + what
}

// TestFaultyScript: each scripted fault happens at its call, in the form a
// server gives it (phase, API reason or sentinel), and is logged there.
func TestFaultyScript(t *testing.T) {
	tests := []struct {
		name  string
		fault sourcetest.Fault
		// call makes the calls and describes what the faulted one gave.
		call func(t *testing.T, fake *podFake, f *podFaulty) string
		want string
	}{
		{"list 429", sourcetest.Fault{Kind: sourcetest.FaultTooManyRequests, Op: sourcetest.OpList, At: 1}, listOnce, "list: TooManyRequests"},
		{"list 500", sourcetest.Fault{Kind: sourcetest.FaultInternal, Op: sourcetest.OpList, At: 1}, listOnce, "list: InternalError"},
		{"list 403", sourcetest.Fault{Kind: sourcetest.FaultForbidden, Op: sourcetest.OpList, At: 1}, listOnce, "list: Forbidden"},
		{"list wrong type", sourcetest.Fault{Kind: sourcetest.FaultWrongType, Op: sourcetest.OpList, At: 1}, listOnce, "list: " + source.ErrWrongType.Error()},
		{"list nil", sourcetest.Fault{Kind: sourcetest.FaultNilObject, Op: sourcetest.OpList, At: 1}, listOnce, "list: " + source.ErrNilObject.Error()},
		{"list malformed", sourcetest.Fault{Kind: sourcetest.FaultMalformed, Op: sourcetest.OpList, At: 1}, listOnce, "list: " + source.ErrMalformed.Error()},
		{"second page 410", sourcetest.Fault{Kind: sourcetest.FaultGone, Op: sourcetest.OpList, At: 2}, listPages, "list: Expired"},
		{"first page 410 cannot happen", sourcetest.Fault{Kind: sourcetest.FaultGone, Op: sourcetest.OpList, At: 1}, listOnce, "ok"},
		{"list too large", sourcetest.Fault{Kind: sourcetest.FaultTooLarge, Op: sourcetest.OpList, At: 1}, listAtVersion, "list: Timeout too-large"},
		{"watch 429", sourcetest.Fault{Kind: sourcetest.FaultTooManyRequests, Op: sourcetest.OpWatch, At: 1}, watchFirst, "watch start: TooManyRequests"},
		{"watch 403", sourcetest.Fault{Kind: sourcetest.FaultForbidden, Op: sourcetest.OpWatch, At: 1}, watchFirst, "watch start: Forbidden"},
		{"watch 410", sourcetest.Fault{Kind: sourcetest.FaultGone, Op: sourcetest.OpWatch, At: 1}, watchFirst, "Expired"},
		{"watch too large", sourcetest.Fault{Kind: sourcetest.FaultTooLarge, Op: sourcetest.OpWatch, At: 1}, watchFirst, "Timeout too-large"},
		{"cut", sourcetest.Fault{Kind: sourcetest.FaultCut, Op: sourcetest.OpNext, At: 2}, watchFirst, "ADDED a/p0 closed"},
		{"in-stream 500", sourcetest.Fault{Kind: sourcetest.FaultInternal, Op: sourcetest.OpNext, At: 1}, watchFirst, "watch: InternalError"},
		{"in-stream 403", sourcetest.Fault{Kind: sourcetest.FaultForbidden, Op: sourcetest.OpNext, At: 1}, watchFirst, "watch: Forbidden"},
		{"in-stream 410", sourcetest.Fault{Kind: sourcetest.FaultGone, Op: sourcetest.OpNext, At: 1}, watchFirst, "watch: Expired"},
		{"wrong type", sourcetest.Fault{Kind: sourcetest.FaultWrongType, Op: sourcetest.OpNext, At: 1}, watchFirst, "watch: " + source.ErrWrongType.Error()},
		{"nil object", sourcetest.Fault{Kind: sourcetest.FaultNilObject, Op: sourcetest.OpNext, At: 1}, watchFirst, "ADDED <nil>"},
		{"duplicate", sourcetest.Fault{Kind: sourcetest.FaultDuplicate, Op: sourcetest.OpNext, At: 1}, watchFirst, "ADDED a/p0 ADDED a/p0 ADDED a/p1"},
		{"delay", sourcetest.Fault{Kind: sourcetest.FaultDelay, Op: sourcetest.OpNext, At: 1, For: time.Minute}, watchFirst, "ADDED a/p0 ADDED a/p1 ADDED a/p2"},
		{"stall", sourcetest.Fault{Kind: sourcetest.FaultStall, Op: sourcetest.OpNext, At: 2, For: time.Hour}, watchFirst, "ADDED a/p0 closed"},
		{"drop, then the resume is 410", sourcetest.Fault{Kind: sourcetest.FaultDrop, Op: sourcetest.OpNext, At: 2}, dropAndResume, "ADDED a/p0 closed, resume: watch: Expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake, f := faultyFake(t, sourcetest.FaultOptions{Script: []sourcetest.Fault{tt.fault}})
				got := tt.call(t, fake, f)
				if !strings.Contains(tt.want, ":") {
					// At start or as the first event: either is a server's form.
					got = got[strings.LastIndex(got, ":")+1:]
					got = strings.TrimSpace(got)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("%v gave (-want +got):\n%s", tt.fault, diff)
				}
				log := f.Log()
				if tt.want == "ok" {
					if len(log) != 0 {
						t.Errorf("fault that cannot happen was logged: %v", log)
					}
					return
				}
				wantLen := 1
				if tt.fault.Kind == sourcetest.FaultDrop {
					wantLen = 2 // and the 410 of the resume
				}
				if len(log) != wantLen || log[0].Fault != tt.fault || log[0].Seq != 1 || !log[0].Scripted {
					t.Errorf("log = %v, want %d records, the first %v, scripted", log, wantLen, tt.fault)
				}
				if r := f.Requests(); r.Faults != len(log) {
					t.Errorf("Requests().Faults = %d, want %d", r.Faults, len(log))
				}
			})
		})
	}
}

func listOnce(t *testing.T, _ *podFake, f *podFaulty) string {
	if _, err := f.List(t.Context(), metav1.ListOptions{}); err != nil {
		return classify(err)
	}
	return "ok"
}

func listPages(t *testing.T, _ *podFake, f *podFaulty) string {
	l, err := f.List(t.Context(), metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatalf("first page: %v", err)
	}
	if _, err := f.List(t.Context(), metav1.ListOptions{Limit: 1, Continue: l.Continue}); err != nil {
		return classify(err)
	}
	return "ok"
}

func listAtVersion(t *testing.T, fake *podFake, f *podFaulty) string {
	if _, err := f.List(t.Context(), metav1.ListOptions{ResourceVersion: fake.ResourceVersion()}); err != nil {
		return classify(err)
	}
	return "ok"
}

// watchFirst watches from the start version (every pod is a change to
// replay) and describes what the stream gives, up to an error, an event
// without an object, or three events.
func watchFirst(t *testing.T, _ *podFake, f *podFaulty) string {
	w, err := f.Watch(t.Context(), metav1.ListOptions{ResourceVersion: "100"})
	if err != nil {
		return classify(err)
	}
	defer w.Stop()
	out := ""
	for range 3 {
		ev, err := w.Next(t.Context())
		if err != nil {
			return join(out, classify(err))
		}
		if ev.Object == nil {
			return join(out, describe(ev))
		}
		out = join(out, fmt.Sprintf("%s %s/%s", ev.Type, ev.Object.Namespace, ev.Object.Name))
	}
	return out
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + " " + b
}

func dropAndResume(t *testing.T, fake *podFake, f *podFaulty) string {
	out := watchFirst(t, fake, f)
	w, err := f.Watch(t.Context(), metav1.ListOptions{ResourceVersion: "101"})
	if err != nil {
		return out + ", resume: " + classify(err)
	}
	defer w.Stop()
	_, err = w.Next(t.Context())
	return out + ", resume: " + classify(err)
}

// TestFaultyPlanReplays: the random plan is a function of the seed: the
// same seed gives the same faults at the same calls, another seed others;
// and Heal ends them.
func TestFaultyPlanReplays(t *testing.T) {
	opts := sourcetest.FaultOptions{Seed: 7, ListRate: 0.5, WatchRate: 0.5, NextRate: 0.2}
	run := func(seed uint64) []string {
		o := opts
		o.Seed = seed
		var faults []string
		synctest.Test(t, func(t *testing.T) {
			_, f := faultyFake(t, o)
			for range 20 {
				_, _ = f.List(t.Context(), metav1.ListOptions{})
				w, err := f.Watch(t.Context(), metav1.ListOptions{ResourceVersion: "100"})
				if err != nil {
					continue
				}
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				for range 4 {
					if _, err := w.Next(ctx); err != nil {
						break
					}
				}
				cancel()
				w.Stop()
			}
			for _, r := range f.Log() {
				faults = append(faults, r.Fault.String())
			}
		})
		return faults
	}
	first, again, other := run(7), run(7), run(8)
	if len(first) < 5 {
		t.Fatalf("seed 7 gave %d faults, want several: %v", len(first), first)
	}
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("seed 7 twice gave different plans (-first +again):\n%s", diff)
	}
	if cmp.Equal(first, other) {
		t.Errorf("seeds 7 and 8 gave the same plan %v", first)
	}
	synctest.Test(t, func(t *testing.T) {
		_, f := faultyFake(t, sourcetest.FaultOptions{Seed: 7, ListRate: 1})
		f.Heal()
		if _, err := f.List(t.Context(), metav1.ListOptions{}); err != nil || len(f.Log()) != 0 {
			t.Errorf("after Heal: List = %v, log %v; want no fault", err, f.Log())
		}
	})
}

// TestFaultyStallEnds: a stall without a bound ends on Stop and on Heal,
// with the stream closed; and a stream's events count, with lists, in
// Requests.
func TestFaultyStallEnds(t *testing.T) {
	for _, end := range []string{"stop", "heal"} {
		t.Run(end, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, f := faultyFake(t, sourcetest.FaultOptions{Script: []sourcetest.Fault{{Kind: sourcetest.FaultStall, Op: sourcetest.OpNext, At: 1}}})
				w, err := f.Watch(t.Context(), metav1.ListOptions{ResourceVersion: "100"})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
				done := make(chan error, 1)
				go func() {
					_, err := w.Next(t.Context())
					done <- err
				}()
				synctest.Wait()
				select {
				case err := <-done:
					t.Fatalf("stalled Next returned %v before the %s", err, end)
				default:
				}
				if end == "stop" {
					w.Stop()
				} else {
					f.Heal()
				}
				if err := <-done; !errors.Is(err, source.ErrWatchClosed) {
					t.Errorf("stalled Next after %s = %v, want ErrWatchClosed", end, err)
				}
			})
		})
	}
}

// TestFaultyCounts: lists count once complete, streaming lists at their
// end bookmark, and relist-forcing errors whether injected or the
// source's own.
func TestFaultyCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake, f := faultyFake(t, sourcetest.FaultOptions{})
		ctx := t.Context()
		l, err := f.List(ctx, metav1.ListOptions{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.List(ctx, metav1.ListOptions{Limit: 2, Continue: l.Continue}); err != nil {
			t.Fatal(err)
		}
		send := true
		w, err := f.Watch(ctx, metav1.ListOptions{SendInitialEvents: &send, AllowWatchBookmarks: true,
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
		if err != nil {
			t.Fatal(err)
		}
		for range 4 { // three pods and the end bookmark
			if _, err := w.Next(ctx); err != nil {
				t.Fatal(err)
			}
		}
		w.Stop()
		fake.Compact()
		if _, err := fake.Create(pod("a", "p3", nil)); err != nil {
			t.Fatal(err)
		}
		old, err := f.Watch(ctx, metav1.ListOptions{ResourceVersion: "100"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := old.Next(ctx); !isExpired(err) {
			t.Fatalf("watch from a compacted version: %v, want 410", err)
		}
		old.Stop()
		want := sourcetest.Requests{Lists: 2, Watches: 2, StreamingLists: 1, CompletedLists: 2, Events: 4, Expired: 1}
		if diff := cmp.Diff(want, f.Requests()); diff != "" {
			t.Errorf("Requests (-want +got):\n%s", diff)
		}
		if got := f.Requests().RelistBound(); got != 2 {
			t.Errorf("RelistBound = %d, want 2", got)
		}
	})
}

// TestNewFaultyRefuses: options it cannot follow fail at construction.
func TestNewFaultyRefuses(t *testing.T) {
	fake := sourcetest.NewFake(podOptions{})
	tests := []struct {
		name string
		src  source.Source[*corev1.Pod]
		opts sourcetest.FaultOptions
		want error
	}{
		{"nil source", nil, sourcetest.FaultOptions{}, source.ErrNilSource},
		{"typed nil source", (*podFake)(nil), sourcetest.FaultOptions{}, source.ErrNilSource},
		{"rate above 1", fake, sourcetest.FaultOptions{NextRate: 1.5}, sourcetest.ErrBadFaultOptions},
		{"negative rate", fake, sourcetest.FaultOptions{ListRate: -0.1}, sourcetest.ErrBadFaultOptions},
		{"unknown kind", fake, sourcetest.FaultOptions{Kinds: []sourcetest.FaultKind{99}}, sourcetest.ErrBadFaultOptions},
		{"cut at a list", fake, sourcetest.FaultOptions{Script: []sourcetest.Fault{{Kind: sourcetest.FaultCut, Op: sourcetest.OpList, At: 1}}}, sourcetest.ErrBadFaultOptions},
		{"at 0", fake, sourcetest.FaultOptions{Script: []sourcetest.Fault{{Kind: sourcetest.FaultCut, Op: sourcetest.OpNext}}}, sourcetest.ErrBadFaultOptions},
		{"negative MaxDelay", fake, sourcetest.FaultOptions{MaxDelay: -time.Second}, sourcetest.ErrBadFaultOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := sourcetest.NewFaulty(tt.src, tt.opts)
			if !errors.Is(err, tt.want) || f != nil {
				t.Errorf("NewFaulty = %v, %v; want nil, an error wrapping %v", f, err, tt.want)
			}
		})
	}
	if _, err := sourcetest.NewFaulty[*corev1.Pod](fake, sourcetest.FaultOptions{}); err != nil {
		t.Errorf("zero options: %v", err)
	}
}
