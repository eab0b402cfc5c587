package httpinfo_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/httpinfo"
	"github.com/typedinformer/informer/typed"
)

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// probe asks h as a kubelet probe does and returns the status and body.
func probe(t *testing.T, h http.Handler, target string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

// responses returns every answer of page and ready that may show an
// informer's error: the page, its JSON, /readyz, /readyz?verbose, and
// ready.Check's error ("Check"), by where.
func responses(t *testing.T, page *httpinfo.Page, ready *httpinfo.Readiness) map[string]string {
	t.Helper()
	bodies := map[string]string{}
	for _, target := range []string{"/debug/informers", "/debug/informers?format=json"} {
		b, _ := io.ReadAll(fetchPage(t, page, http.MethodGet, target, "").Body)
		bodies[target] = string(b)
	}
	for _, target := range []string{"/readyz", "/readyz?verbose"} {
		_, bodies[target] = probe(t, ready, target)
	}
	if err := ready.Check(nil); err != nil {
		bodies["Check"] = err.Error()
	}
	return bodies
}

// reasons returns the reasons of a failed check, nil for a passed one.
func reasons(t *testing.T, c *httpinfo.Readiness) []string {
	t.Helper()
	err := c.Check(httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if err == nil {
		return nil
	}
	var nre *httpinfo.NotReadyError
	if !errors.As(err, &nre) {
		t.Fatalf("Check error %T %v, want a *NotReadyError", err, err)
	}
	return nre.Reasons
}

func forever(f func(int, error), err error) { f(1<<30, err) }

// TestReadinessLifecycle: not ready while the first list is refused, ready
// once synced, still ready while a revoked permission is younger than the
// threshold, not ready past it with the informer, the error and since when
// in the body, ready again once the permission is back.
func TestReadinessLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := secretFake(3)
		forever(fake.FailLists, forbidden())
		forever(fake.FailWatches, forbidden())
		inf := newInformer(t, fake, typed.Options[*corev1.Secret]{})
		reg := newRegistry(t)
		add(t, reg, inf)
		ready, err := httpinfo.NewReadiness(reg, httpinfo.ReadinessOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := ready.Name(); got != "informers" {
			t.Errorf("Name() = %q, want the default %q", got, "informers")
		}
		run(t, inf)
		time.Sleep(10 * time.Second)
		synctest.Wait()

		// Refused before sync.
		st := inf.Status()
		if st.LastError == nil {
			t.Fatal("the fake's Forbidden did not reach the informer's status")
		}
		code, body := probe(t, ready, "/readyz")
		wantLine := fmt.Sprintf(`informer "secrets": not synced: failing since %s: `, stamp(st.StaleSince))
		if code != http.StatusServiceUnavailable || !strings.Contains(body, wantLine) || !strings.Contains(body, "secrets is forbidden") {
			t.Errorf("before sync: %d %q, want 503 with %q and the Forbidden message", code, body, wantLine)
		}

		// Permission granted: synced and ready.
		fake.FailLists(0, nil)
		fake.FailWatches(0, nil)
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if !inf.HasSynced() {
			t.Fatalf("not synced after the failures stopped: %+v", inf.Status())
		}
		if got := reasons(t, ready); got != nil {
			t.Errorf("synced and healthy: reasons %q, want none", got)
		}
		if code, body := probe(t, ready, "/readyz"); code != http.StatusOK || body != "ok\n" {
			t.Errorf("synced and healthy: %d %q, want 200 %q", code, body, "ok\n")
		}

		// Permission revoked after sync: ready while the error is young.
		forever(fake.FailLists, forbidden())
		forever(fake.FailWatches, forbidden())
		fake.CutWatches()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		st = inf.Status()
		if st.LastError == nil {
			t.Fatal("revoked permission not in the informer's status")
		}
		if got := reasons(t, ready); got != nil {
			t.Errorf("error younger than the threshold: reasons %q, want none", got)
		}

		// Past the threshold: not ready, saying why and since when.
		time.Sleep(httpinfo.DefaultErrorThreshold)
		synctest.Wait()
		got := reasons(t, ready)
		wantPrefix := fmt.Sprintf(`informer "secrets": failing since %s (`, stamp(st.StaleSince))
		if len(got) != 1 || !strings.HasPrefix(got[0], wantPrefix) || !strings.Contains(got[0], "secrets is forbidden") {
			t.Errorf("error older than the threshold: reasons %q, want one starting %q with the Forbidden message", got, wantPrefix)
		}
		if code, body := probe(t, ready, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, wantPrefix) {
			t.Errorf("error older than the threshold: %d %q, want 503 with %q", code, body, wantPrefix)
		}

		// Permission back: ready again.
		fake.FailLists(0, nil)
		fake.FailWatches(0, nil)
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if got := reasons(t, ready); got != nil {
			t.Errorf("after recovery: reasons %q, want none (status %+v)", got, inf.Status())
		}
	})
}

// TestReadinessHandlersAndStop: a registered handler that has not handled
// the initial list keeps the check failing; so does a stopped informer.
func TestReadinessHandlersAndStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := secretFake(4)
		inf := newInformer(t, fake, typed.Options[*corev1.Secret]{})
		release := make(chan struct{})
		regH, err := inf.AddHandler(handler.Funcs[*corev1.Secret]{
			AddFunc: func(*corev1.Secret, bool) { <-release },
		})
		if err != nil {
			t.Fatal(err)
		}
		reg := newRegistry(t)
		e := add(t, reg, inf)
		if err := e.AddHandler("slow", regH); err != nil {
			t.Fatal(err)
		}
		ready, err := httpinfo.NewReadiness(reg, httpinfo.ReadinessOptions{Name: "caches"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := contextWithCancel()
		done := make(chan error, 1)
		go func() { done <- inf.Run(ctx) }()
		synctest.Wait()

		if !inf.HasSynced() {
			t.Fatal("informer not synced")
		}
		want := []string{fmt.Sprintf(`informer "secrets": handler "slow" not synced (%d pending)`, regH.Pending())}
		if diff := cmp.Diff(want, reasons(t, ready)); diff != "" {
			t.Errorf("handler stuck in the initial list (-want +got):\n%s", diff)
		}
		code, body := probe(t, ready, "/readyz?verbose")
		wantBody := "[-]secrets\n    " + want[0] + "\ncaches check failed\n"
		if code != http.StatusServiceUnavailable || body != wantBody {
			t.Errorf("verbose: %d %q, want 503 %q", code, body, wantBody)
		}

		close(release)
		synctest.Wait()
		if got := reasons(t, ready); got != nil {
			t.Errorf("handler synced: reasons %q, want none", got)
		}
		if code, body := probe(t, ready, "/readyz?verbose"); code != http.StatusOK || body != "[+]secrets ok\ncaches check passed\n" {
			t.Errorf("verbose, ready: %d %q", code, body)
		}

		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{`informer "secrets": stopped`}, reasons(t, ready)); diff != "" {
			t.Errorf("stopped informer (-want +got):\n%s", diff)
		}
		if err := reg.Remove(e); err != nil {
			t.Fatal(err)
		}
		if got := reasons(t, ready); got != nil {
			t.Errorf("after Remove: reasons %q, want none", got)
		}
	})
}

func TestNewReadinessErrors(t *testing.T) {
	reg := newRegistry(t)
	cases := []struct {
		name string
		reg  *httpinfo.Registry
		opts httpinfo.ReadinessOptions
		want error
	}{
		{"nil registry", nil, httpinfo.ReadinessOptions{}, httpinfo.ErrNilRegistry},
		{"negative threshold", reg, httpinfo.ReadinessOptions{ErrorThreshold: -time.Second}, httpinfo.ErrInvalidOptions},
		{"defaults", reg, httpinfo.ReadinessOptions{}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := httpinfo.NewReadiness(tc.reg, tc.opts)
			if !errors.Is(err, tc.want) || (err == nil) != (c != nil) {
				t.Errorf("NewReadiness = %v, %v; want error %v", c, err, tc.want)
			}
		})
	}
}

// TestReadinessMethods: the check answers GET and HEAD; any other method
// gets 405 with an Allow header, as the page does.
func TestReadinessMethods(t *testing.T) {
	ready, err := httpinfo.NewReadiness(newRegistry(t), httpinfo.ReadinessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		method string
		code   int
		allow  string
	}{
		{http.MethodGet, http.StatusOK, ""},
		{http.MethodHead, http.StatusOK, ""},
		{http.MethodPost, http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodPut, http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodDelete, http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodOptions, http.StatusMethodNotAllowed, "GET, HEAD"},
	}
	for _, tc := range cases {
		rec := httptest.NewRecorder()
		ready.ServeHTTP(rec, httptest.NewRequest(tc.method, "/readyz", nil))
		if rec.Code != tc.code || rec.Header().Get("Allow") != tc.allow {
			t.Errorf("%s: %d, Allow %q; want %d, Allow %q", tc.method, rec.Code, rec.Header().Get("Allow"), tc.code, tc.allow)
		}
	}
}
