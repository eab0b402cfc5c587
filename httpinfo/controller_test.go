package httpinfo_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/httpinfo"
	"github.com/typedinformer/informer/reconcile"
	"github.com/typedinformer/informer/typed"
)

// fakeController reports the status it is given.
type fakeController struct {
	name string
	st   reconcile.Status
}

func (c *fakeController) Name() string             { return c.name }
func (c *fakeController) Status() reconcile.Status { return c.st }

// TestControllers: a controller waiting for its caches fails readiness,
// a started one passes, a stopped one fails; its last error is shown by
// key, attempt and outcome, with Reconcile's error redacted as any other
// (a Forbidden's message kept, a plain error's withheld, a panic's stack
// never shown); the latency's mean and p99 bucket are derived from the
// histogram; two controllers of one name are refused.
func TestControllers(t *testing.T) {
	reg, _ := httpinfo.NewRegistry(httpinfo.Options{})
	ready, _ := httpinfo.NewReadiness(reg, httpinfo.ReadinessOptions{})
	page, _ := httpinfo.NewPage(reg, httpinfo.PageOptions{Readiness: ready})
	c := &fakeController{name: "foos", st: reconcile.Status{Name: "foos", Workers: 2}}
	if err := httpinfo.AddController(reg, c); err != nil {
		t.Fatal(err)
	}
	if err := httpinfo.AddController(reg, &fakeController{name: "foos"}); !errors.Is(err, httpinfo.ErrDuplicate) {
		t.Errorf("a second controller named foos: %v, want ErrDuplicate", err)
	}
	if code, body := probe(t, ready, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, `controller "foos": waiting for its caches to sync`) {
		t.Errorf("before start: %d %q", code, body)
	}
	c.st.Started = true
	if code, body := probe(t, ready, "/readyz?verbose"); code != http.StatusOK || !strings.Contains(body, "[+]controller foos ok") {
		t.Errorf("started: %d %q", code, body)
	}

	key := cache.Key{Namespace: "shop", Name: "web"}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", errors.New("no RBAC"))
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&reconcile.KeyError{Key: key, Attempts: 3, Err: forbidden}, "shop/web, attempt 3, retried: Forbidden (403)"},
		{&reconcile.KeyError{Key: key, Attempts: 1, Terminal: true, Err: reconcile.Terminal(errors.New("secret value xyz"))}, "shop/web, attempt 1, terminal, not retried: error (text withheld"},
		{&reconcile.KeyError{Key: key, Attempts: 9, Dropped: true, Err: fmt.Errorf("%w: boom\ngoroutine 1 [running]", reconcile.ErrPanic)}, "shop/web, attempt 9, dropped: Reconcile panicked (the stack is in the logs)"},
	} {
		c.st.LastError, c.st.LastErrorTime = tc.err, time.Now()
		s := reg.Snapshot()
		if len(s.Controllers) != 1 || s.Controllers[0].Error == nil || !strings.HasPrefix(s.Controllers[0].Error.Text, tc.want) {
			t.Errorf("error text for %v = %+v, want it to start %q", tc.err, s.Controllers[0].Error, tc.want)
		}
		for _, leak := range []string{"xyz", "goroutine"} {
			if strings.Contains(s.Controllers[0].Error.Text, leak) {
				t.Errorf("error text %q shows %q", s.Controllers[0].Error.Text, leak)
			}
		}
	}

	counts := make([]uint64, len(reconcile.LatencyBuckets)+1)
	counts[0], counts[10] = 98, 2 // 98 at most 5ms, 2 in (0.35s, 0.4s]
	c.st.Latency = reconcile.Histogram{Counts: counts, Count: 100, Sum: time.Second}
	s := reg.Snapshot().Controllers[0]
	if s.MeanSeconds != 0.01 || s.P99Seconds != 0.4 {
		t.Errorf("mean %v, p99 %v; want 0.01 and 0.4", s.MeanSeconds, s.P99Seconds)
	}
	resp := fetchPage(t, page, http.MethodGet, "/debug/informers", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("page: %d", resp.StatusCode)
	}

	c.st.Stopped = true
	if code, body := probe(t, ready, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, `controller "foos": stopped`) {
		t.Errorf("stopped: %d %q", code, body)
	}
}

// TestQuarantinedOnPage: an object the cache refused is listed by key
// on the page and in the JSON, with its reason redacted, never its
// content; the rest syncs and the check stays ready.
func TestQuarantinedOnPage(t *testing.T) {
	fake := secretFake(3)
	inf := newInformer(t, fake, typed.Options[*corev1.Secret]{Transform: func(s *corev1.Secret) (*corev1.Secret, error) {
		if s.Name == "db-1" {
			return nil, errors.New("cannot parse password hunter2")
		}
		return s, nil
	}})
	reg := newRegistry(t)
	add(t, reg, inf)
	ready, _ := httpinfo.NewReadiness(reg, httpinfo.ReadinessOptions{})
	page, _ := httpinfo.NewPage(reg, httpinfo.PageOptions{Readiness: ready})
	run(t, inf)
	if err := inf.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	is := reg.Snapshot().Informers[0]
	if is.QuarantinedCount != 1 || len(is.Quarantined) != 1 || is.Quarantined[0].Key != "shop/db-1" || is.Objects != 2 {
		t.Fatalf("snapshot: %d objects, quarantined %d %+v; want 2 objects and shop/db-1", is.Objects, is.QuarantinedCount, is.Quarantined)
	}
	b, _ := io.ReadAll(fetchPage(t, page, http.MethodGet, "/debug/informers", "").Body)
	html := string(b)
	if !strings.Contains(html, `data-key="shop/db-1"`) || strings.Contains(html, "hunter2") {
		t.Errorf("the page does not list shop/db-1, or shows the reason's text:\n%s", html)
	}
	if err := ready.Check(nil); err != nil {
		t.Errorf("a quarantined object made the check fail: %v", err)
	}
}
