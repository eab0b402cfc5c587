package source

import (
	"bytes"
	"context"
	gojson "encoding/json"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// stream is n watch events, one per line; bad, if in range, is a line
// that does not decode into a pod.
func stream(t *testing.T, n, bad int) []byte {
	t.Helper()
	var b bytes.Buffer
	for i := range n {
		if i == bad {
			b.WriteString(`{"type":"MODIFIED","object":{"metadata":{"name":7}}}` + "\n")
			continue
		}
		ev, err := gojson.Marshal(wireEvent{Type: watch.Modified, Object: benchPod(i)})
		if err != nil {
			t.Fatal(err)
		}
		b.Write(ev)
		b.WriteString("\n\n") // blank lines are skipped
	}
	return b.Bytes()
}

func parallel(data []byte, workers int) *parallelWatcher[*corev1.Pod] {
	s := &restSource[*corev1.Pod]{gvk: corev1.SchemeGroupVersion.WithKind("Pod"), workers: workers}
	ctx, cancel := context.WithCancel(context.Background())
	body := io.NopCloser(iotest.HalfReader(bytes.NewReader(data)))
	return newParallelWatcher(s, ctx, cancel, body, false)
}

// TestParallelKeepsOrder: with several workers, events come out in the
// order of the stream, then ErrWatchClosed at its end.
func TestParallelKeepsOrder(t *testing.T) {
	const n = 200
	w := parallel(stream(t, n, -1), 4)
	defer w.Stop()
	ctx := context.Background()
	var got []string
	for {
		ev, err := w.Next(ctx)
		if errors.Is(err, ErrWatchClosed) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Object.Name)
	}
	var want []string
	for i := range n {
		want = append(want, benchPod(i).Name)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestParallelBadEvent: an event whose object does not decode is reported
// in its place, after every event before it, as ErrUndecodable, and the
// events after it follow.
func TestParallelBadEvent(t *testing.T) {
	w := parallel(stream(t, 50, 30), 3)
	defer w.Stop()
	ctx := context.Background()
	for i := range 50 {
		_, err := w.Next(ctx)
		switch {
		case i == 30 && !errors.Is(err, ErrUndecodable):
			t.Fatalf("event 30: %v, want ErrUndecodable", err)
		case i != 30 && err != nil:
			t.Fatalf("event %d: %v", i, err)
		}
	}
	if _, err := w.Next(ctx); !errors.Is(err, ErrWatchClosed) {
		t.Fatalf("after the last event: %v, want ErrWatchClosed", err)
	}
}

// TestParallelStop: Stop in the middle of a stream ends Next and every
// goroutine (the package's leak check fails otherwise), and a context that
// ends returns its error.
func TestParallelStop(t *testing.T) {
	w := parallel(stream(t, 100, -1), 2)
	if _, err := w.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Next with an ended context: %v", err)
	}
	w.Stop()
	for {
		_, err := w.Next(context.Background())
		if errors.Is(err, ErrWatchClosed) {
			break
		}
		if err != nil {
			t.Fatalf("after Stop: %v", err)
		}
	}
	w.Stop() // twice is fine
}
