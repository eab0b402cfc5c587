package source_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

// undecodable is what the tests compare of an *source.UndecodableError.
type undecodable struct {
	Key   cache.Key
	RV    string
	Event watch.EventType
	Index int
}

func undecodableOf(u *source.UndecodableError) undecodable {
	return undecodable{Key: u.Key(), RV: u.ResourceVersion, Event: u.Event, Index: u.Index}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// encodings are the wire formats of FromConfig over a podserver.
var encodings = []struct {
	name string
	opts source.RESTOptions
}{
	{"json", source.RESTOptions{}},
	{"json/workers=2", source.RESTOptions{DecodeWorkers: 2}},
	{"protobuf", source.RESTOptions{Protobuf: true}},
}

// podserverWithBad is a podserver of five pods ns/p-0... that sends those
// in bad undecodable, and FromConfig over it with opts.
func podserverWithBad(t *testing.T, opts source.RESTOptions, bad *badSet) (*sourcetest.Fake[*corev1.Pod], source.Source[*corev1.Pod]) {
	t.Helper()
	f := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
	for _, n := range []string{"p-0", "p-1", "p-2", "p-3", "p-4"} {
		if _, err := f.Create(pod("ns", n, nil)); err != nil {
			t.Fatal(err)
		}
	}
	srv := podserver.New(t, f)
	srv.Undecodable = bad.has
	opts.Mapper = podserver.Mapper()
	src, err := source.FromConfig[*corev1.Pod](srv.Config(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return f, src
}

// TestUndecodableListItem: a list item that does not decode into T (JSON
// and protobuf) is in List.Undecodable, named, with its index in the page;
// the other items, the list's resourceVersion and its paging are as
// without it.
func TestUndecodableListItem(t *testing.T) {
	for _, e := range encodings {
		t.Run(e.name, func(t *testing.T) {
			bad := &badSet{}
			bad.set("p-2", true)
			f, src := podserverWithBad(t, e.opts, bad)
			p2, err := f.Get(cache.Key{Namespace: "ns", Name: "p-2"})
			if err != nil {
				t.Fatal(err)
			}
			l, err := src.List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			if diff := cmp.Diff([]string{"p-0", "p-1", "p-3", "p-4"}, names(l.Items)); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
			if len(l.Undecodable) != 1 {
				t.Fatalf("Undecodable = %v, want p-2", l.Undecodable)
			}
			u := l.Undecodable[0]
			want := undecodable{Key: cache.KeyOf(p2), RV: p2.ResourceVersion, Index: 2}
			if diff := cmp.Diff(want, undecodableOf(u)); diff != "" {
				t.Errorf("Undecodable[0] (-want +got):\n%s", diff)
			}
			if !errors.Is(u, source.ErrUndecodable) || u.Err == nil {
				t.Errorf("%v does not wrap ErrUndecodable and the decoder's error", u)
			}
			if msg := u.Error(); !strings.Contains(msg, "list item 2 ns/p-2 at resourceVersion "+p2.ResourceVersion+" does not decode: ") || strings.Contains(msg, "watch") {
				t.Errorf("message %q does not say what the object is", msg)
			}
			if l.ResourceVersion != f.ResourceVersion() || l.Continue != "" {
				t.Errorf("list at %q continue %q, want the fake's %q and no continue", l.ResourceVersion, l.Continue, f.ResourceVersion())
			}

			// In pages of two: the same, page by page.
			var got []string
			var gotBad []undecodable
			opts := metav1.ListOptions{Limit: 2}
			for page := 0; ; page++ {
				l, err := src.List(t.Context(), opts)
				if err != nil {
					t.Fatalf("page %d: %v", page, err)
				}
				got = append(got, names(l.Items)...)
				for _, u := range l.Undecodable {
					gotBad = append(gotBad, undecodableOf(u))
				}
				if l.Continue == "" {
					break
				}
				opts.Continue = l.Continue
			}
			if diff := cmp.Diff([]string{"p-0", "p-1", "p-3", "p-4"}, got); diff != "" {
				t.Errorf("paged items (-want +got):\n%s", diff)
			}
			want.Index = 0 // the first item of the second page
			if diff := cmp.Diff([]undecodable{want}, gotBad); diff != "" {
				t.Errorf("paged Undecodable (-want +got):\n%s", diff)
			}
		})
	}
}

// bodySourceWith is bodySource with opts.
func bodySourceWith(t *testing.T, body string, opts source.RESTOptions) source.Source[*corev1.Pod] {
	t.Helper()
	opts.Mapper = podserver.Mapper()
	opts.HTTPClient = &http.Client{Transport: bodyTransport{[]byte(body)}}
	src, err := source.FromConfig[*corev1.Pod](&rest.Config{Host: "http://body.invalid"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// TestUndecodableListBody: hand-written JSON list bodies. A label of the
// wrong type makes the item undecodable, named; an item whose name cannot
// be read is the error of the list, which says it is a list item and its
// index, and calls nothing a watch event; a body that is not JSON is
// still ErrMalformed.
func TestUndecodableListBody(t *testing.T) {
	const head = `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":"c"},"items":[`
	good := `{"metadata":{"name":"a","namespace":"ns","resourceVersion":"5"}}`

	l, err := bodySourceWith(t, head+good+`,{"metadata":{"name":"b","namespace":"ns","resourceVersion":"6","labels":{"x":5}}}]}`, source.RESTOptions{}).
		List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if diff := cmp.Diff([]string{"a"}, names(l.Items)); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	var gotBad []undecodable
	for _, u := range l.Undecodable {
		gotBad = append(gotBad, undecodableOf(u))
	}
	if diff := cmp.Diff([]undecodable{{Key: cache.Key{Namespace: "ns", Name: "b"}, RV: "6", Index: 1}}, gotBad); diff != "" {
		t.Errorf("Undecodable (-want +got):\n%s", diff)
	}
	if l.ResourceVersion != "9" || l.Continue != "c" {
		t.Errorf("list at %q continue %q, want 9 and c", l.ResourceVersion, l.Continue)
	}

	_, err = bodySourceWith(t, head+good+`,{"metadata":{"name":5},"spec":{"containers":"oops"}}]}`, source.RESTOptions{}).
		List(t.Context(), metav1.ListOptions{})
	var u *source.UndecodableError
	var se *source.Error
	switch {
	case !errors.As(err, &se) || se.Phase != source.PhaseList:
		t.Errorf("List = %v, want an *source.Error in phase list", err)
	case !errors.As(err, &u) || u.Name != "" || u.Index != 1:
		t.Errorf("List = %v, want an *source.UndecodableError for item 1, without a name", err)
	case errors.Is(err, source.ErrMalformed) || strings.Contains(err.Error(), "watch") || !strings.Contains(err.Error(), "list item 1 (no readable name) does not decode"):
		t.Errorf("List = %q, want it to say it is list item 1, and nothing of a watch", err)
	}

	_, err = bodySourceWith(t, head+good+`,{"metadata":`, source.RESTOptions{}).List(t.Context(), metav1.ListOptions{})
	if !errors.Is(err, source.ErrMalformed) || errors.Is(err, source.ErrUndecodable) {
		t.Errorf("List of a cut body = %v, want ErrMalformed", err)
	}
}

// TestUndecodableWatchEvent: a MODIFIED event whose object does not
// decode (JSON on one goroutine or on workers, protobuf) is an
// *source.UndecodableError from Next naming the object, in an *Error with
// PhaseWatch; the next Next returns the event after it.
func TestUndecodableWatchEvent(t *testing.T) {
	for _, e := range encodings {
		t.Run(e.name, func(t *testing.T) {
			bad := &badSet{}
			f, src := podserverWithBad(t, e.opts, bad)
			w, err := src.Watch(t.Context(), metav1.ListOptions{ResourceVersion: f.ResourceVersion()})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			bad.set("p-2", true)
			p2, err := f.Get(cache.Key{Namespace: "ns", Name: "p-2"})
			if err != nil {
				t.Fatal(err)
			}
			p2.Labels = map[string]string{"v": "bad"}
			if p2, err = f.Update(p2); err != nil {
				t.Fatal(err)
			}
			p3, err := f.Get(cache.Key{Namespace: "ns", Name: "p-3"})
			if err != nil {
				t.Fatal(err)
			}
			p3.Labels = map[string]string{"v": "good"}
			if p3, err = f.Update(p3); err != nil {
				t.Fatal(err)
			}

			_, err = nextErr(t, w)
			wantStreamError(t, err, source.ErrUndecodable)
			var u *source.UndecodableError
			if !errors.As(err, &u) {
				t.Fatalf("Next = %v, want an *source.UndecodableError", err)
			}
			want := undecodable{Key: cache.KeyOf(p2), RV: p2.ResourceVersion, Event: watch.Modified}
			if diff := cmp.Diff(want, undecodableOf(u)); diff != "" {
				t.Errorf("UndecodableError (-want +got):\n%s", diff)
			}
			if msg := err.Error(); !strings.Contains(msg, "MODIFIED watch event object ns/p-2 at resourceVersion "+p2.ResourceVersion+" does not decode") {
				t.Errorf("message %q does not name the event and the object", msg)
			}
			ev := next(t, w)
			if ev.Type != watch.Modified || ev.Object.Name != "p-3" || ev.Object.ResourceVersion != p3.ResourceVersion {
				t.Errorf("after the undecodable event: %s %s@%s, want MODIFIED p-3@%s", ev.Type, ev.Object.Name, ev.Object.ResourceVersion, p3.ResourceVersion)
			}
		})
	}
}

// TestUndecodableWatchStream: a hand-written JSON watch body through each
// JSON path (line by line, the general decoder after a line with its
// members in another order, decode workers): undecodable objects with a
// name, without one, and in a DELETED event are errors of their events
// alone; the events between them arrive; an unknown event type stays
// ErrMalformed even when its object does not decode.
func TestUndecodableWatchStream(t *testing.T) {
	body := strings.Join([]string{
		`{"type":"ADDED","object":{"metadata":{"name":"a","namespace":"ns","resourceVersion":"5"}}}`,
		`{"type":"MODIFIED","object":{"metadata":{"name":"b","namespace":"ns","resourceVersion":"6","labels":{"x":5}}}}`,
		`{"type":"MODIFIED","object":{"metadata":{"name":5},"spec":{"containers":"oops"}}}`,
		`{"type":"ADDED","object":{"metadata":{"name":"c","namespace":"ns","resourceVersion":"8"}}}`,
		`{"object":{"metadata":{"name":"d","namespace":"ns","resourceVersion":"9"},"spec":{"containers":"oops"}},"type":"DELETED"}`,
		`{"type":"ADDED","object":{"metadata":{"name":"e","namespace":"ns","resourceVersion":"10"}}}`,
		`{"type":"WEIRD","object":{"metadata":{"name":"f","namespace":"ns"},"spec":{"containers":"oops"}}}`,
	}, "\n") + "\n"
	type got struct {
		Event string // "ADDED a@5", or for an error what it names
		Err   *undecodable
	}
	want := []got{
		{Event: "ADDED a@5"},
		{Err: &undecodable{Key: cache.Key{Namespace: "ns", Name: "b"}, RV: "6", Event: watch.Modified}},
		{Err: &undecodable{Event: watch.Modified}},
		{Event: "ADDED c@8"},
		{Err: &undecodable{Key: cache.Key{Namespace: "ns", Name: "d"}, RV: "9", Event: watch.Deleted}},
		{Event: "ADDED e@10"},
	}
	for _, workers := range []int{0, 2} {
		w, err := bodySourceWith(t, body, source.RESTOptions{DecodeWorkers: workers}).Watch(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []got
		for range want {
			ev, err := nextErr(t, w)
			var u *source.UndecodableError
			switch {
			case errors.As(err, &u):
				wantStreamError(t, err, source.ErrUndecodable)
				g := undecodableOf(u)
				out = append(out, got{Err: &g})
			case err != nil:
				t.Fatalf("workers=%d: Next = %v after %v", workers, err, out)
			default:
				out = append(out, got{Event: string(ev.Type) + " " + ev.Object.Name + "@" + ev.Object.ResourceVersion})
			}
		}
		if diff := cmp.Diff(want, out); diff != "" {
			t.Errorf("workers=%d: events (-want +got):\n%s", workers, diff)
		}
		_, err = nextErr(t, w)
		if !errors.Is(err, source.ErrMalformed) || errors.Is(err, source.ErrUndecodable) || !strings.Contains(err.Error(), "WEIRD") {
			t.Errorf("workers=%d: Next of an unknown type = %v, want ErrMalformed naming it", workers, err)
		}
		w.Stop()
	}
}
