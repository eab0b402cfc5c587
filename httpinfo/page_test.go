package httpinfo_test

import (
	"encoding/json"
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

	"github.com/typedinformer/informer/httpinfo"
	"github.com/typedinformer/informer/typed"
)

// pageJSON is the JSON the page serves.
type pageJSON struct {
	httpinfo.Snapshot
	Readiness *httpinfo.ReadinessStatus `json:"readiness"`
}

func fetchPage(t *testing.T, h http.Handler, method, target, accept string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func TestPageFormats(t *testing.T) {
	reg := newRegistry(t)
	add(t, reg, newInformer(t, secretFake(2), typed.Options[*corev1.Secret]{}))
	page, err := httpinfo.NewPage(reg, httpinfo.PageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	cases := []struct {
		method, target, accept string
		code                   int
		contentType            string
		body                   bool
	}{
		{"GET", "/debug/informers", "", 200, "text/html; charset=utf-8", true},
		{"GET", "/debug/informers", browser, 200, "text/html; charset=utf-8", true},
		{"GET", "/debug/informers", "application/json", 200, "application/json", true},
		{"GET", "/debug/informers", "text/html;q=0.5, application/json", 200, "application/json", true},
		{"GET", "/debug/informers", "application/json;q=0.5, text/html", 200, "text/html; charset=utf-8", true},
		{"GET", "/debug/informers?format=json", browser, 200, "application/json", true},
		{"GET", "/debug/informers?format=html", "application/json", 200, "text/html; charset=utf-8", true},
		{"HEAD", "/debug/informers?format=json", "", 200, "application/json", false},
		{"POST", "/debug/informers", "", 405, "text/plain; charset=utf-8", true},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s %s %s", tc.method, tc.target, tc.accept), func(t *testing.T) {
			resp := fetchPage(t, page, tc.method, tc.target, tc.accept)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code || resp.Header.Get("Content-Type") != tc.contentType || (len(body) > 0) != tc.body {
				t.Errorf("%d %q, %d bytes; want %d %q, body %v", resp.StatusCode, resp.Header.Get("Content-Type"), len(body), tc.code, tc.contentType, tc.body)
			}
			if tc.contentType == "application/json" && tc.body {
				var got pageJSON
				if err := json.Unmarshal(body, &got); err != nil || len(got.Informers) != 1 || got.Informers[0].Name != "secrets" {
					t.Errorf("JSON %s: %v", body, err)
				}
			}
		})
	}
}

func TestNewPageErrors(t *testing.T) {
	reg := newRegistry(t)
	cases := []struct {
		name string
		reg  *httpinfo.Registry
		opts httpinfo.PageOptions
		want error
	}{
		{"nil registry", nil, httpinfo.PageOptions{}, httpinfo.ErrNilRegistry},
		{"refresh below a second", reg, httpinfo.PageOptions{Refresh: time.Millisecond}, httpinfo.ErrInvalidOptions},
		{"negative refresh", reg, httpinfo.PageOptions{Refresh: -time.Second}, httpinfo.ErrInvalidOptions},
		{"defaults", reg, httpinfo.PageOptions{}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := httpinfo.NewPage(tc.reg, tc.opts)
			if !errors.Is(err, tc.want) || (err == nil) != (p != nil) {
				t.Errorf("NewPage = %v, %v; want error %v", p, err, tc.want)
			}
		})
	}
}

// TestPageShows: the JSON carries the snapshot and the verdict; the HTML
// has a row per informer with its counts and, while it fails, an error row
// with the reason.
func TestPageShows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := secretFake(3)
		inf := newInformer(t, fake, typed.Options[*corev1.Secret]{})
		reg := newRegistry(t)
		add(t, reg, inf)
		ready, _ := httpinfo.NewReadiness(reg, httpinfo.ReadinessOptions{})
		page, err := httpinfo.NewPage(reg, httpinfo.PageOptions{Readiness: ready, Title: "shop controller", Refresh: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		run(t, inf)
		synctest.Wait()

		resp := fetchPage(t, page, "GET", "/?format=json", "")
		var got pageJSON
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		want := pageJSON{Snapshot: reg.Snapshot(), Readiness: &httpinfo.ReadinessStatus{Ready: true}}
		want.Time = got.Time
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("JSON (-want +got):\n%s", diff)
		}

		fake.FailWatches(1<<30, forbidden())
		fake.FailLists(1<<30, forbidden())
		fake.CutWatches()
		time.Sleep(httpinfo.DefaultErrorThreshold + time.Minute)
		synctest.Wait()
		st := inf.Status()
		body, _ := io.ReadAll(fetchPage(t, page, "GET", "/", "").Body)
		html := string(body)
		for _, w := range []string{
			`<title>shop controller</title>`,
			`<meta http-equiv="refresh" content="5">`,
			`<tr class="informer" data-informer="secrets">`,
			`<td class="synced"><span class="yes">yes</span></td>`,
			`<td class="num objects">3</td>`,
			fmt.Sprintf(`<td class="rv"><code>%s</code></td>`, inf.LastSyncResourceVersion()),
			fmt.Sprintf(`<td class="num errors">%d</td>`, st.Stats.Errors),
			`<tr class="error" data-informer="secrets">`,
			fmt.Sprintf(`Error (Forbidden) since %s`, stamp(st.StaleSince)),
			`secrets is forbidden: User &#34;system:serviceaccount:shop:ctrl&#34; cannot watch resource &#34;secrets&#34;`,
			`<span class="verdict notready" id="verdict">not ready</span>`,
		} {
			if !strings.Contains(html, w) {
				t.Errorf("page lacks %s", w)
			}
		}
		if t.Failed() {
			t.Logf("page:\n%s", html)
		}
	})
}
