package httpinfo_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/httpinfo"
	"github.com/typedinformer/informer/reconcile"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "write the browser test's screenshot to docs/observability.png")

// chromiumPath is where Debian's chromium package puts the browser; CI
// installs it (.ci/run).
const chromiumPath = "/usr/bin/chromium"

// browser starts headless Chromium for the test and stops it, and every
// goroutine of chromedp, when the test ends. Without Chromium the test is
// skipped on a workstation and fails in CI (CI set).
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and %s is missing (%v): install Debian's chromium package", chromiumPath, err)
		}
		t.Skipf("%s is missing (%v): apt-get install chromium to run the browser test", chromiumPath, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1500, 760), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		if err := chromedp.Cancel(bctx); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("stop the browser: %v", err)
		}
		bcancel()
		acancel()
	})
	if err := chromedp.Do(bctx); err != nil { // starts the browser
		t.Fatalf("start %s: %v", chromiumPath, err)
	}
	return bctx
}

// demoInformers are the informers the page shows: pods with a handler, and
// secrets.
func demoInformers(t *testing.T) (*sourcetest.Fake[*corev1.Pod], *sourcetest.Fake[*corev1.Secret], *typed.Registration, *httpinfo.Registry, <-chan struct{}) {
	t.Helper()
	var pods []*corev1.Pod
	for i := range 12 {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: fmt.Sprintf("web-%d", i)}})
	}
	podFake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{
		Resource: schema.GroupResource{Resource: "pods"}, Scope: cache.ScopeNamespaced, Objects: pods,
	})
	secretFake := secretFake(4)
	podInf := newInformer(t, podFake, typed.Options[*corev1.Pod]{})
	secretErrs := make(chan struct{}, 1)
	secretInf := newInformer(t, secretFake, typed.Options[*corev1.Secret]{ErrorHandler: func(error) {
		select {
		case secretErrs <- struct{}{}:
		default:
		}
	}})
	h, err := podInf.AddHandler(handler.Funcs[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t)
	if err := add(t, reg, podInf).AddHandler("reconcile", h); err != nil {
		t.Fatal(err)
	}
	add(t, reg, secretInf)
	run(t, podInf)
	run(t, secretInf)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := typed.WaitForCacheSync(ctx, podInf, h, secretInf); err != nil {
		t.Fatal(err)
	}
	return podFake, secretFake, h, reg, secretErrs
}

// TestBrowser loads the page in headless Chromium against live informers
// and checks what a person sees: the informers, their sync state and
// counts, and an error row once the secrets informer is refused.
func TestBrowser(t *testing.T) {
	ctx := browser(t)
	podFake, secrets, podHandler, reg, secretErrs := demoInformers(t)
	counts := make([]uint64, len(reconcile.LatencyBuckets)+1)
	counts[2] = 40
	if err := httpinfo.AddController(reg, &fakeController{name: "shop-pods", st: reconcile.Status{
		Name: "shop-pods", Started: true, Workers: 4, Active: 1, Queued: 12,
		Reconciles: reconcile.Outcomes{Success: 1180, Error: 23, Terminal: 2, Requeue: 5, RequeueAfter: 310},
		Latency:    reconcile.Histogram{Counts: counts, Count: 40, Sum: 600 * time.Millisecond},
	}}); err != nil {
		t.Fatal(err)
	}
	ready, err := httpinfo.NewReadiness(reg, httpinfo.ReadinessOptions{ErrorThreshold: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	page, err := httpinfo.NewPage(reg, httpinfo.PageOptions{Readiness: ready, Title: "shop controller: informers"})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/informers", page)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	if _, err := podFake.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-new"}}); err != nil {
		t.Fatal(err)
	}

	type seen struct{ names, podSynced, podObjects, podHandler, secretSynced, secretObjects, verdict string }
	// text is the visible text of the first element css selects.
	text := func(css string) string {
		t.Helper()
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		s, err := chromedp.Run(actx, chromedp.Text(chromedp.CSS(css)))
		if err != nil {
			t.Fatalf("read %s: %v", css, err)
		}
		return strings.TrimSpace(s)
	}
	look := func() seen {
		t.Helper()
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(actx, chromedp.Navigate(srv.URL+"/debug/informers"), chromedp.WaitVisible(chromedp.CSS("#informers"))); err != nil {
			t.Fatalf("load the page: %v", err)
		}
		names, err := chromedp.Run(actx, chromedp.Evaluate[string](`[...document.querySelectorAll("tr.informer td.name")].map(e => e.textContent).join(",")`))
		if err != nil {
			t.Fatalf("read the names: %v", err)
		}
		return seen{
			names:         names,
			podSynced:     text(`tr[data-informer="pods"] td.synced`),
			podObjects:    text(`tr[data-informer="pods"] td.objects`),
			podHandler:    text(`tr[data-informer="pods"] tr[data-handler="reconcile"]`),
			secretSynced:  text(`tr[data-informer="secrets"] td.synced`),
			secretObjects: text(`tr[data-informer="secrets"] td.objects`),
			verdict:       text(`#verdict`),
		}
	}
	merged := "n/a" // a registration without a merged count
	if m, ok := any(podHandler).(interface{ Merged() int64 }); ok {
		merged = fmt.Sprint(m.Merged())
	}
	want := seen{names: "pods,secrets", podSynced: "yes", podObjects: "13", podHandler: "reconcile\tyes\t0\t0\t" + merged,
		secretSynced: "yes", secretObjects: "4", verdict: "ready"}
	// The new pod reaches the cache, and then the handler, a moment
	// after Create: look until the page settles, as a person would
	// reload. (Stopping at the cache's count alone once caught the
	// handler with the new pod still pending.)
	var got seen
	for range 50 {
		if got = look(); got == want {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got != want {
		t.Errorf("healthy page shows %+v\nwant %+v", got, want)
	}

	// Revoke the secrets informer's permission.
	forever(secrets.FailWatches, forbidden())
	forever(secrets.FailLists, forbidden())
	secrets.CutWatches()
	<-secretErrs
	got = look()
	want.verdict = "not ready"
	if got != want {
		t.Errorf("page after the Forbidden shows %+v\nwant %+v", got, want)
	}
	errorRow := text(`tr.error[data-informer="secrets"]`)
	for _, w := range []string{"Error (Forbidden) since ", `secrets is forbidden: User "system:serviceaccount:shop:ctrl" cannot watch resource "secrets"`} {
		if !strings.Contains(errorRow, w) {
			t.Errorf("error row %q lacks %q", errorRow, w)
		}
	}
	errorRows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("tr.error").length`))
	if err != nil {
		t.Fatal(err)
	}
	if errorRows != 1 {
		t.Errorf("%d error rows, want 1 (secrets only)", errorRows)
	}

	// At 1200 px, a laptop's browser beside an editor, every column is in
	// view, the handlers and the error text included: nothing to scroll to.
	if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(1200, 760)); err != nil {
		t.Fatal(err)
	}
	overflow, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const w = document.documentElement.clientWidth, out = [];
		for (const css of ["td.handlers", "tr.error td", "th:last-child"]) {
			for (const el of document.querySelectorAll(css)) {
				const r = el.getBoundingClientRect().right;
				if (r > w + 1) out.push(css + " ends at " + Math.round(r) + " px");
			}
		}
		for (const el of document.querySelectorAll("div.scroll")) {
			if (el.scrollWidth > el.clientWidth + 1) out.push("a table is " + el.scrollWidth + " px wide in " + el.clientWidth);
		}
		return out.join("; ");
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if overflow != "" {
		t.Errorf("at 1200 px the page is cut off: %s", overflow)
	}

	if *updateScreenshot {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join("..", "docs", "observability.png")
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", out, len(png))
	}
}
