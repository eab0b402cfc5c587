package httpinfo_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/httpinfo"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// quoting is what a careless error does: quote the object.
func quoting(s *corev1.Secret) string {
	return fmt.Sprintf("data %q annotation %q labels %v", s.Data["password"], s.Annotations["note"], s.Labels)
}

// TestErrorText: which errors the registry shows in full (the API server's
// own messages, with reason and code, and connection errors), which only by
// kind (what may quote an object), and that every text is bounded.
func TestErrorText(t *testing.T) {
	long := apierrors.NewForbidden(secretsGR, "", errors.New(strings.Repeat("é", 400)))
	const longPrefix = "list: Forbidden (403): secrets is forbidden: "
	cases := []struct {
		name      string
		listErr   error
		transform bool
		opts      httpinfo.Options
		want      string
		reason    string
	}{
		{name: "forbidden", listErr: forbidden(), reason: "Forbidden",
			want: `list: Forbidden (403): secrets is forbidden: User "system:serviceaccount:shop:ctrl" cannot watch resource "secrets"`},
		{name: "not found", listErr: apierrors.NewNotFound(secretsGR, ""), reason: "NotFound",
			want: `list: NotFound (404): secrets "" not found`},
		{name: "connection refused", listErr: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED},
			want: `list: dial tcp: connection refused`},
		{name: "malformed, quoting the object", listErr: fmt.Errorf("%w: %s", source.ErrMalformed, quoting(secret("shop", "x"))),
			want: `list: source: malformed list or watch event (text withheld: it may quote an object; the ErrorHandler gets it)`},
		{name: "unknown error, quoting the object", listErr: errors.New(quoting(secret("shop", "x"))),
			want: `list: error (text withheld: it may quote an object; the ErrorHandler gets it)`},
		{name: "transform quoting the object", transform: true,
			want: `refused shop/db-0 (text withheld: it may quote an object; the ErrorHandler gets it)`},
		{name: "own rule, bounded", listErr: forbidden(), reason: "Forbidden",
			opts: httpinfo.Options{ErrorText: func(err error) string { return "custom:\n" + err.Error() }, MaxErrorBytes: 20},
			want: "custom: list: sec…"},
		{name: "internal error", listErr: apierrors.NewInternalError(errors.New(quoting(secret("shop", "x")))), reason: "InternalError",
			want: `list: InternalError (500) (text withheld: it may quote an object; the ErrorHandler gets it)`},
		{name: "long server message", listErr: long, reason: "Forbidden",
			want: longPrefix + strings.Repeat("é", (httpinfo.DefaultMaxErrorBytes-len(longPrefix)-len("…"))/2) + "…"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := secretFake(2)
				opts := typed.Options[*corev1.Secret]{NoWatchList: true}
				if tc.transform {
					opts.OnRefused = typed.StopAndRelist // a refused object is the informer's error
					opts.Transform = func(s *corev1.Secret) (*corev1.Secret, error) { return nil, errors.New(quoting(s)) }
				} else {
					forever(fake.FailLists, tc.listErr)
				}
				inf := newInformer(t, fake, opts)
				reg, err := httpinfo.NewRegistry(tc.opts)
				if err != nil {
					t.Fatal(err)
				}
				add(t, reg, inf)
				run(t, inf)
				time.Sleep(time.Second)
				synctest.Wait()
				e := reg.Snapshot().Informers[0].Error
				if e == nil {
					t.Fatalf("no error in the snapshot; status %+v", inf.Status())
				}
				if e.Text != tc.want || e.Reason != tc.reason {
					t.Errorf("text %q reason %q\nwant %q reason %q", e.Text, e.Reason, tc.want, tc.reason)
				}
				if limit := cmpOr(tc.opts.MaxErrorBytes, httpinfo.DefaultMaxErrorBytes); len(e.Text) > limit || !utf8.ValidString(e.Text) {
					t.Errorf("text of %d bytes (valid UTF-8 %v), want at most %d", len(e.Text), utf8.ValidString(e.Text), limit)
				}
			})
		})
	}
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// TestNoSecretLeaks: an informer over Secrets with distinctive data,
// string data, annotations and labels, whose errors quote them; neither
// the page, its JSON nor the health body carries a byte of them, healthy or
// failing, right after the fault or once it outlasted the threshold.
func TestNoSecretLeaks(t *testing.T) {
	var needles []string
	for _, v := range []string{secretData, secretStringData, secretAnnotation, secretLabel} {
		needles = append(needles, v, v[len(v)-6:], base64.StdEncoding.EncodeToString([]byte(v)))
	}
	faults := []struct {
		name   string
		inject func(*testing.T, *sourcetestFake)
	}{
		{"healthy", func(*testing.T, *sourcetestFake) {}},
		{"forbidden", func(_ *testing.T, f *sourcetestFake) {
			forever(f.FailWatches, forbidden())
			forever(f.FailLists, forbidden())
			f.CutWatches()
		}},
		{"errors quoting a secret", func(t *testing.T, f *sourcetestFake) {
			s, err := f.Get(keyOf("shop", "db-0"))
			if err != nil {
				t.Fatal(err)
			}
			forever(f.FailWatches, fmt.Errorf("%w: %s", source.ErrMalformed, quoting(s)))
			forever(f.FailLists, errors.New(quoting(s)))
			f.InjectWatchError(errors.New(quoting(s)))
		}},
		{"a bad event quoting a secret", func(t *testing.T, f *sourcetestFake) {
			s := secret("shop", "bad")
			s.ResourceVersion = "not-a-number " + quoting(s)
			f.InjectEvent(source.Event[*corev1.Secret]{Type: watch.EventType("BOGUS " + quoting(s)), Object: s})
		}},
	}
	for _, fault := range faults {
		t.Run(fault.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := secretFake(3)
				inf := newInformer(t, fake, typed.Options[*corev1.Secret]{})
				h, err := inf.AddHandler(handlerFuncs())
				if err != nil {
					t.Fatal(err)
				}
				reg := newRegistry(t)
				if err := add(t, reg, inf).AddHandler("cache-secrets", h); err != nil {
					t.Fatal(err)
				}
				ready, _ := httpinfo.NewReadiness(reg, httpinfo.ReadinessOptions{})
				page, _ := httpinfo.NewPage(reg, httpinfo.PageOptions{Readiness: ready})
				run(t, inf)
				synctest.Wait()
				fault.inject(t, fake)
				sawError := false
				for _, wait := range []time.Duration{0, httpinfo.DefaultErrorThreshold + time.Minute} {
					time.Sleep(wait)
					synctest.Wait()
					bodies := responses(t, page, ready)
					for where, body := range bodies {
						if body != "ok\n" && !strings.Contains(body, "secrets") {
							t.Errorf("%s does not name the informer: %q", where, body)
						}
						for _, n := range needles {
							if strings.Contains(body, n) {
								t.Errorf("after %v, %s leaks %q:\n%s", wait, where, n, body)
							}
						}
					}
					sawError = sawError || strings.Contains(bodies["/debug/informers?format=json"], `"error"`)
				}
				if fault.name != "healthy" && !sawError {
					t.Error("the fault left no error to check")
				}
			})
		})
	}
}
