package source_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/source"
)

type (
	podEvent   = source.Event[*corev1.Pod]
	podWatcher = source.Watcher[*corev1.Pod]
)

func pod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
}

// next reads one event, failing the test after a few seconds (of the
// bubble's clock in a synctest bubble).
func next(t *testing.T, w podWatcher) podEvent {
	t.Helper()
	ev, err := nextErr(t, w)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return ev
}

// nextErr is next that returns Next's error, failing the test only if
// Next blocks for a few seconds.
func nextErr(t *testing.T, w podWatcher) (podEvent, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	ev, err := w.Next(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("Next blocked for 5s")
	}
	return ev, err
}

// wantStreamError checks that err is an *source.Error in phase watch that
// wraps target (if not nil).
func wantStreamError(t *testing.T, err, target error) {
	t.Helper()
	var serr *source.Error
	if !errors.As(err, &serr) || serr.Phase != source.PhaseWatch {
		t.Fatalf("Next = %v, want an *source.Error in phase watch", err)
	}
	if target != nil && !errors.Is(err, target) {
		t.Errorf("error %v does not wrap %v", err, target)
	}
}
