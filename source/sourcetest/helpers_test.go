package sourcetest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

var _ source.Source[*corev1.Pod] = (*sourcetest.Fake[*corev1.Pod])(nil)

type (
	podFake    = sourcetest.Fake[*corev1.Pod]
	podOptions = sourcetest.FakeOptions[*corev1.Pod]
	podEvent   = source.Event[*corev1.Pod]
	podWatcher = source.Watcher[*corev1.Pod]
)

func pod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
}

func key(ns, name string) cache.Key { return cache.Key{Namespace: ns, Name: name} }

// ids summarises objects as "namespace/name@resourceVersion".
func ids(items []*corev1.Pod) []string {
	out := []string{}
	for _, p := range items {
		out = append(out, cache.KeyOf(p).String()+"@"+p.ResourceVersion)
	}
	return out
}

func mustDo(t *testing.T) func(*corev1.Pod, error) *corev1.Pod {
	return func(p *corev1.Pod, err error) *corev1.Pod {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
}

func isTooLarge(err error) bool {
	return apierrors.IsTimeout(err) && apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
}

func isExpired(err error) bool { return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) }

// describe summarises an event: "TYPE ns/name@rv", "TYPE <nil>" or
// "BOOKMARK @rv [end]".
func describe(ev podEvent) string {
	switch {
	case ev.Object == nil:
		return fmt.Sprintf("%s <nil>", ev.Type)
	case ev.Type == watch.Bookmark:
		s := "BOOKMARK @" + ev.Object.ResourceVersion
		if ev.Object.Annotations[metav1.InitialEventsAnnotationKey] == "true" {
			s += " end"
		}
		if ev.Object.Name != "" || ev.Object.Namespace != "" {
			s += " named " + ev.Object.Name
		}
		return s
	}
	return fmt.Sprintf("%s %s/%s@%s", ev.Type, ev.Object.Namespace, ev.Object.Name, ev.Object.ResourceVersion)
}

// describeErr summarises an in-stream error as "ERROR <reason>", after
// checking that it is an *source.Error in phase watch.
func describeErr(t *testing.T, err error) string {
	t.Helper()
	var serr *source.Error
	if !errors.As(err, &serr) || serr.Phase != source.PhaseWatch {
		t.Fatalf("Next: %v, want an *source.Error in phase watch", err)
	}
	if reason := apierrors.ReasonForError(err); reason != metav1.StatusReasonUnknown {
		return fmt.Sprintf("ERROR %s", reason)
	}
	return fmt.Sprintf("ERROR %v", serr.Err)
}

// drain reads every event available now; in a synctest bubble "now" is
// exact. An in-stream error is "ERROR <reason>"; a closed stream ends with
// "CLOSED".
func drain(t *testing.T, w podWatcher) []string {
	t.Helper()
	out := []string{}
	for len(out) < 10000 {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		ev, err := w.Next(ctx)
		cancel()
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return out
		case errors.Is(err, source.ErrWatchClosed):
			return append(out, "CLOSED")
		case err != nil:
			out = append(out, describeErr(t, err))
		default:
			out = append(out, describe(ev))
		}
	}
	t.Fatalf("drain: more than 10000 events: %v...", out[:10])
	return nil
}

func mustWatch(t *testing.T, f *podFake, opts metav1.ListOptions) podWatcher {
	t.Helper()
	w, err := f.Watch(t.Context(), opts)
	if err != nil {
		t.Fatalf("Watch(%+v): %v", opts, err)
	}
	t.Cleanup(w.Stop)
	return w
}
