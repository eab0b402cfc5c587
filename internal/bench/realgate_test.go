package bench_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// watchGate stands between an informer's client and the API server. It
// can end every open watch as the server ends one (the stream stops, with
// no error) and hold back the requests that follow until it is released,
// and it notes when the first list (a LIST or a streaming list) after the
// release passes.
type watchGate struct {
	mu      sync.Mutex
	gen     int           // counts holds; a watch admitted before the last one is cut
	held    chan struct{} // closed by release; nil when nothing is held
	watches map[*gatedBody]int
	opened  time.Time // when the oldest open watch opened; zero if none is open
	lists   int       // lists since the last hold
	first   time.Time // when the first of them passed
}

func newWatchGate() *watchGate { return &watchGate{watches: map[*gatedBody]int{}} }

// wrap is the gate as a rest.Config transport wrapper.
func (g *watchGate) wrap(next http.RoundTripper) http.RoundTripper {
	return gateTransport{g: g, next: next}
}

// hold ends the open watches and holds back every request from now on.
func (g *watchGate) hold() {
	g.mu.Lock()
	g.gen++
	g.held = make(chan struct{})
	g.lists, g.first = 0, time.Time{}
	open := make([]*gatedBody, 0, len(g.watches))
	for w := range g.watches {
		open = append(open, w)
	}
	g.mu.Unlock()
	for _, w := range open {
		w.end()
	}
}

// release lets the held requests, and those that follow, through.
func (g *watchGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held != nil {
		close(g.held)
		g.held = nil
	}
}

// firstList is when the first list since the last hold passed, and
// whether one did.
func (g *watchGate) firstList() (time.Time, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.first, g.lists > 0
}

// listsSinceRelease is the number of lists since the last hold.
func (g *watchGate) listsSinceRelease() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lists
}

// admit waits while the gate holds and returns the generation the
// request passed in.
func (g *watchGate) admit(ctx context.Context, list bool) (int, error) {
	g.mu.Lock()
	held := g.held
	g.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if list {
		if g.lists == 0 {
			g.first = time.Now()
		}
		g.lists++
	}
	return g.gen, nil
}

// open registers a watch's body, ending it at once if a hold came after
// the watch was admitted.
func (g *watchGate) open(w *gatedBody, gen int) {
	g.mu.Lock()
	stale := gen != g.gen
	if !stale {
		g.watches[w] = gen
		if len(g.watches) == 1 {
			g.opened = time.Now()
		}
	}
	g.mu.Unlock()
	if stale {
		w.end()
	}
}

func (g *watchGate) close(w *gatedBody) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.watches, w)
	if len(g.watches) == 0 {
		g.opened = time.Time{}
	}
}

// watchOpenFor waits until a watch has been open for d, as an informer's
// watch is when a server ends it: both sides reopen a watch that ended
// sooner only after a backoff.
func (g *watchGate) watchOpenFor(ctx context.Context, d time.Duration) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		g.mu.Lock()
		opened := g.opened
		g.mu.Unlock()
		if !opened.IsZero() && time.Since(opened) >= d {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no watch open for %v: %w", d, ctx.Err())
		case <-tick.C:
		}
	}
}

type gateTransport struct {
	g    *watchGate
	next http.RoundTripper
}

func (t gateTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	watching := q.Get("watch") == "true" || q.Get("watch") == "1"
	list := req.Method == http.MethodGet && (!watching || q.Get("sendInitialEvents") == "true")
	gen, err := t.g.admit(req.Context(), list)
	if err != nil {
		return nil, fmt.Errorf("held back: %w", err)
	}
	if !watching {
		return t.next.RoundTrip(req)
	}
	ctx, cancel := context.WithCancel(req.Context())
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	w := &gatedBody{ReadCloser: resp.Body, cancel: cancel, g: t.g}
	resp.Body = w
	t.g.open(w, gen)
	return resp, nil
}

// gatedBody is a watch's response body that the gate can end.
type gatedBody struct {
	io.ReadCloser
	cancel context.CancelFunc
	g      *watchGate
	ended  atomic.Bool
}

// Read reads the stream until the gate ends it, then reports its end.
func (w *gatedBody) Read(p []byte) (int, error) {
	n, err := w.ReadCloser.Read(p)
	if w.ended.Load() {
		return 0, io.EOF
	}
	return n, err
}

// end ends the stream: a Read blocked on it returns at once.
func (w *gatedBody) end() {
	w.ended.Store(true)
	w.cancel()
}

func (w *gatedBody) Close() error {
	w.cancel()
	w.g.close(w)
	return w.ReadCloser.Close()
}

// compactEtcd compacts the etcd at url (its v3 JSON gateway) physically,
// past every revision handed out before the call: it first writes a key
// outside the API server's prefix twice, since a watch from
// resourceVersion X reads etcd from revision X+1.
func compactEtcd(ctx context.Context, url string) error {
	var rev int64
	for range 2 {
		var err error
		rev, err = etcdCall(ctx, url+"/v3/kv/put", map[string]any{
			"key":   base64.StdEncoding.EncodeToString([]byte("/bench/compaction-marker")),
			"value": base64.StdEncoding.EncodeToString([]byte(time.Now().Format(time.RFC3339Nano))),
		})
		if err != nil {
			return fmt.Errorf("compact etcd: %w", err)
		}
	}
	if _, err := etcdCall(ctx, url+"/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}); err != nil {
		return fmt.Errorf("compact etcd at revision %d: %w", rev, err)
	}
	return nil
}

// etcdCall posts req to an etcd gateway endpoint and returns the revision
// in the response's header (0 if it has none).
func etcdCall(ctx context.Context, url string, req any) (int64, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return 0, fmt.Errorf("etcd %s: %w", url, err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("etcd %s: %w", url, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return 0, fmt.Errorf("etcd %s: %w", url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, fmt.Errorf("etcd %s: read the response: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("etcd %s: %s: %s", url, resp.Status, bytes.TrimSpace(data))
	}
	// The gateway writes 64-bit integers as JSON strings.
	var out struct {
		Header struct {
			Revision json.RawMessage `json:"revision"`
		} `json:"header"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return 0, fmt.Errorf("etcd %s: decode the response %q: %w", url, data, err)
	}
	raw := strings.Trim(string(out.Header.Revision), `"`)
	if raw == "" {
		return 0, nil
	}
	rev, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd %s: revision %s: %w", url, raw, err)
	}
	return rev, nil
}

// TestWatchGate: hold ends an open watch as a server does (EOF, no
// error) and holds the next request until release; the first list after
// the hold is noted.
func TestWatchGate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "true" {
			_, _ = io.WriteString(w, "list")
			return
		}
		_, _ = io.WriteString(w, "event\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	gate := newWatchGate()
	client := &http.Client{Transport: gate.wrap(http.DefaultTransport)}
	defer client.CloseIdleConnections()

	resp, err := client.Get(srv.URL + "/pods?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 6)
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "event\n" {
		t.Fatalf("first event: %q, %v", buf, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := gate.watchOpenFor(ctx, 0); err != nil {
		t.Fatal(err)
	}

	gate.hold()
	if n, err := resp.Body.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("read after hold: %d bytes, %v; want 0, EOF", n, err)
	}
	listed := make(chan error, 1)
	go func() {
		resp, err := client.Get(srv.URL + "/pods")
		if err == nil {
			resp.Body.Close()
		}
		listed <- err
	}()
	select {
	case err := <-listed:
		t.Fatalf("a list passed a held gate (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	if _, ok := gate.firstList(); ok {
		t.Fatal("a list noted while held")
	}
	gate.release()
	if err := <-listed; err != nil {
		t.Fatal(err)
	}
	if _, ok := gate.firstList(); !ok || gate.listsSinceRelease() != 1 {
		t.Fatalf("lists since the hold: %d, want 1", gate.listsSinceRelease())
	}
}
