package source_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/source"
)

// bodyTransport answers every request with body, as a server whose
// response is those bytes would: no network, so a fuzzer runs fast.
type bodyTransport struct{ body []byte }

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(b.body)), Request: r, ContentLength: -1,
	}, nil
}

// bodySource is FromConfig for pods over a transport that answers body.
func bodySource(t *testing.T, body []byte) source.Source[*corev1.Pod] {
	t.Helper()
	src, err := source.FromConfig[*corev1.Pod](&rest.Config{Host: "http://fuzz.invalid"}, source.RESTOptions{
		Mapper:     podserver.Mapper(),
		HTTPClient: &http.Client{Transport: bodyTransport{body}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// maxFuzzEvents bounds the events read from one input; an input is at
// most a few kilobytes, so a decoder that makes progress never gets near.
const maxFuzzEvents = 1 << 16

// FuzzWatchFrames feeds arbitrary bytes to FromConfig's JSON watch-frame
// decoder as a watch response body. It must not panic, and every Next must
// give an ADDED, MODIFIED, DELETED or BOOKMARK event with a pod, or an
// error: ErrWatchClosed at the end, or an *source.Error in PhaseWatch that
// wraps ErrMalformed, ErrWrongType, ErrNilObject, ErrUndecodable or an API
// status. After an error the stream is stopped, as the contract says the
// caller does, but after an *source.UndecodableError, after which the
// stream goes on.
// The seed corpus is in testdata/fuzz/FuzzWatchFrames.
func FuzzWatchFrames(f *testing.F) {
	f.Add([]byte(`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"a","resourceVersion":"5"}}}`))
	f.Add([]byte(`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx := context.Background()
		w, err := bodySource(t, body).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("Watch: %v (the transport answered 200)", err)
		}
		defer w.Stop()
		for range maxFuzzEvents {
			ev, err := w.Next(ctx)
			if errors.Is(err, source.ErrWatchClosed) {
				return
			}
			if err != nil {
				checkStreamError(t, err)
				var u *source.UndecodableError
				if errors.As(err, &u) {
					continue // the event was read whole
				}
				return
			}
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
			default:
				t.Fatalf("event of type %q delivered", ev.Type)
			}
			if ev.Object == nil {
				t.Fatalf("%s event without an object", ev.Type)
			}
			if gvk := ev.Object.GroupVersionKind(); !gvk.Empty() {
				t.Fatalf("%s event: kind %v left on the object", ev.Type, gvk)
			}
		}
		t.Fatalf("more than %d events from %d bytes", maxFuzzEvents, len(body))
	})
}

// checkStreamError fails t unless err is what Next may return for bad
// bytes.
func checkStreamError(t *testing.T, err error) {
	t.Helper()
	var se *source.Error
	if !errors.As(err, &se) || se.Phase != source.PhaseWatch {
		t.Fatalf("Next: %v (%T), want an *source.Error in phase %q", err, err, source.PhaseWatch)
	}
	if !isContentOrStatus(err) {
		t.Fatalf("Next: %v wraps neither a content sentinel nor an API status", err)
	}
}

func isContentOrStatus(err error) bool {
	var status interface{ Status() metav1.Status }
	return errors.Is(err, source.ErrMalformed) || errors.Is(err, source.ErrWrongType) ||
		errors.Is(err, source.ErrNilObject) || errors.Is(err, source.ErrUndecodable) || errors.As(err, &status)
}

// FuzzListBody feeds arbitrary bytes to FromConfig's list decoder as a
// list response body: no panic, and either a list of non-nil pods without
// their kind (and named undecodable items), or an *source.Error in
// PhaseList wrapping a content sentinel. The seed corpus is in testdata/fuzz/FuzzListBody.
func FuzzListBody(f *testing.F) {
	f.Add([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":"x"},"items":[{"metadata":{"name":"p"}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		l, err := bodySource(t, body).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			var se *source.Error
			if !errors.As(err, &se) || se.Phase != source.PhaseList || !isContentOrStatus(err) {
				t.Fatalf("List: %v (%T), want an *source.Error in phase %q wrapping a content sentinel", err, err, source.PhaseList)
			}
			if len(l.Items) != 0 || l.ResourceVersion != "" {
				t.Fatalf("List failed with %v and returned %+v", err, l)
			}
			return
		}
		for i, p := range l.Items {
			if p == nil {
				t.Fatalf("item %d: nil", i)
			}
			if gvk := p.GroupVersionKind(); !gvk.Empty() {
				t.Fatalf("item %d: kind %v left on the object", i, gvk)
			}
		}
		for _, u := range l.Undecodable {
			if u == nil || u.Name == "" || !errors.Is(u, source.ErrUndecodable) {
				t.Fatalf("Undecodable holds %v, want named *source.UndecodableErrors", u)
			}
		}
	})
}
