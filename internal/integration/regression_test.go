//go:build integration

package integration

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

	"github.com/typedinformer/informer/source"
)

// Regression tests, without a cluster, for bugs the suite found against the
// real API server.

// stopRacingWatch behaves like client-go's watch.StreamWatcher when Stop
// closes the response body under a reader: the decoder fails ("http2:
// response body closed") and StreamWatcher.receive selects between its done
// channel and sending an ERROR event; when a Next is waiting on ResultChan,
// either may win. This fake always takes the unlucky branch.
type stopRacingWatch struct {
	result  chan watch.Event
	done    chan struct{}
	reading chan struct{} // closed once ResultChan was called
}

func newStopRacingWatch() *stopRacingWatch {
	w := &stopRacingWatch{result: make(chan watch.Event), done: make(chan struct{}), reading: make(chan struct{})}
	go func() {
		<-w.done
		w.result <- watch.Event{Type: watch.Error, Object: &apierrors.NewInternalError(
			fmt.Errorf("unable to decode an event from the watch stream: http2: response body closed")).ErrStatus}
		close(w.result)
	}()
	return w
}

func (w *stopRacingWatch) Stop() { close(w.done) }

func (w *stopRacingWatch) ResultChan() <-chan watch.Event {
	select {
	case <-w.reading:
	default:
		close(w.reading)
	}
	return w.result
}

type stubPods struct{ w watch.Interface }

func (s stubPods) List(context.Context, metav1.ListOptions) (*corev1.PodList, error) {
	return &corev1.PodList{}, nil
}

func (s stubPods) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return s.w, nil
}

// TestWatcherStopDuringNext: Watcher.Stop is documented as safe to call
// concurrently with Next, and Next as returning ErrWatchClosed once Stop
// was called. With client-go's StreamWatcher a Next blocked when Stop is
// called could instead return the ERROR event ("unable to decode an event
// from the watch stream: http2: response body closed", a 500) that the
// closing of the body provokes; the reflector then reported a spurious
// internal error and backed off before re-watching. Found by
// TestGoneAfterCompaction, whose test source cuts the informer's watch.
func TestWatcherStopDuringNext(t *testing.T) {
	fw := newStopRacingWatch()
	src, err := source.FromClient[*corev1.Pod](stubPods{w: fw})
	if err != nil {
		t.Fatal(err)
	}
	w, err := src.Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		ev  source.Event[*corev1.Pod]
		err error
	}
	got := make(chan result, 1)
	go func() {
		ev, err := w.Next(context.Background())
		got <- result{ev, err}
	}()
	<-fw.reading
	time.Sleep(10 * time.Millisecond) // let Next block in its select
	w.Stop()
	select {
	case r := <-got:
		if !errors.Is(r.err, source.ErrWatchClosed) {
			t.Errorf("Next during Stop = (%s event, err %v), want ErrWatchClosed", r.ev.Type, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Next did not return after Stop")
	}
}
