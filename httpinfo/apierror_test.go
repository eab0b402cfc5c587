package httpinfo_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/typedinformer/informer/httpinfo"
	"github.com/typedinformer/informer/typed"
)

// leaked is what an error quotes of an object, or of a proxy's reply.
const leaked = "password=hunter2"

// TestErrorsWithheldFromResponses: errors whose message is not the API
// server's own fixed text (a conversion webhook's InternalError, a proxy's
// reply body, a forged reason, a wrapper quoting a frame, a long plain
// error) reach neither the page, its JSON, /readyz nor Check: those show the
// reason and HTTP code, and a bounded text.
func TestErrorsWithheldFromResponses(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		shows  []string // in every response
		reason string   // ErrorStatus.Reason
		code   int32    // ErrorStatus.Code
		stops  bool     // the informer gives up: /readyz and Check say "stopped"
	}{
		{name: "conversion webhook InternalError",
			err:    apierrors.NewInternalError(fmt.Errorf("conversion webhook for v1, Kind=Secret failed: %s", leaked)),
			shows:  []string{"InternalError (500)"},
			reason: "InternalError", code: 500},
		{name: "a proxy's 403 body, not a Status",
			err:    apierrors.NewGenericServerResponse(http.StatusForbidden, http.MethodGet, secretsGR, "", "proxy: "+leaked, 0, true),
			shows:  []string{"Forbidden (403)"},
			reason: "Forbidden", code: 403},
		{name: "a proxy's 502 body",
			err:    apierrors.NewGenericServerResponse(http.StatusBadGateway, http.MethodGet, secretsGR, "", "upstream said "+leaked, 0, true),
			shows:  []string{"InternalError (502)"},
			reason: "InternalError", code: 502},
		{name: "a reason outside the API's set",
			err:    &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500, Reason: leaked, Message: leaked}},
			shows:  []string{"Other (500)"},
			reason: "Other", code: 500},
		{name: "Invalid quotes the rejected value",
			err: apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "db-0",
				field.ErrorList{field.Invalid(field.NewPath("data"), leaked, "not base64")}),
			shows:  []string{"Invalid (422)"},
			reason: "Invalid", code: 422, stops: true},
		{name: "BadRequest quotes the request",
			err:    apierrors.NewBadRequest("unable to decode " + leaked),
			shows:  []string{"BadRequest (400)"},
			reason: "BadRequest", code: 400, stops: true},
		{name: "a wrapper quoting a frame around unexpected EOF",
			err:   fmt.Errorf("decode frame %q: %w", leaked, io.ErrUnexpectedEOF),
			shows: []string{"list: unexpected EOF"}},
		{name: "long plain error",
			err: errors.New(strings.Repeat("decode: "+leaked+" ", 100))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := secretFake(2)
				forever(fake.FailLists, tc.err)
				inf := newInformer(t, fake, typed.Options[*corev1.Secret]{NoWatchList: true})
				reg := newRegistry(t)
				add(t, reg, inf)
				ready, _ := httpinfo.NewReadiness(reg, httpinfo.ReadinessOptions{})
				page, _ := httpinfo.NewPage(reg, httpinfo.PageOptions{Readiness: ready})
				ctx, cancel := contextWithCancel()
				done := make(chan error, 1)
				go func() { done <- inf.Run(ctx) }()
				defer func() {
					cancel()
					if err := <-done; (err != nil) != tc.stops {
						t.Errorf("Run: %v, want an error %v", err, tc.stops)
					}
				}()
				time.Sleep(time.Second)
				synctest.Wait()

				e := reg.Snapshot().Informers[0].Error
				if e == nil {
					t.Fatalf("no error in the snapshot; status %+v", inf.Status())
				}
				if e.Reason != tc.reason || e.Code != tc.code {
					t.Errorf("reason %q code %d, want %q %d", e.Reason, e.Code, tc.reason, tc.code)
				}
				if len(e.Text) > httpinfo.DefaultMaxErrorBytes || !utf8.ValidString(e.Text) {
					t.Errorf("text of %d bytes (valid UTF-8 %v), want at most %d", len(e.Text), utf8.ValidString(e.Text), httpinfo.DefaultMaxErrorBytes)
				}
				bodies := responses(t, page, ready)
				for _, where := range []string{"/debug/informers", "/debug/informers?format=json", "/readyz", "/readyz?verbose", "Check"} {
					body := bodies[where]
					if strings.Contains(body, "hunter2") {
						t.Errorf("%s leaks the error's content:\n%s", where, body)
					}
					shows := tc.shows
					if tc.stops && !strings.HasPrefix(where, "/debug/") {
						shows = []string{`informer "secrets": stopped`}
					}
					for _, s := range shows {
						if !strings.Contains(body, s) {
							t.Errorf("%s lacks %q:\n%s", where, s, body)
						}
					}
				}
				if json := bodies["/debug/informers?format=json"]; tc.code != 0 && !strings.Contains(json, fmt.Sprintf(`"code": %d`, tc.code)) {
					t.Errorf("JSON lacks the code %d:\n%s", tc.code, json)
				}
			})
		})
	}
}

// TestServerMessagesSanitised: the fixed texts of the API server are shown
// with the reason and code, with control characters replaced, as valid
// UTF-8 and bounded.
func TestServerMessagesSanitised(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"forbidden", forbidden(),
			`list: Forbidden (403): secrets is forbidden: User "system:serviceaccount:shop:ctrl" cannot watch resource "secrets"`},
		{"expired", apierrors.NewResourceExpired("too old resource version: 1 (5)"),
			`list: Expired (410): too old resource version: 1 (5)`},
		{"control characters and invalid UTF-8", &apierrors.StatusError{ErrStatus: metav1.Status{
			Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound, Message: "secrets \"db\x00\n\xff\u2028x\" not found"}},
			`list: NotFound (404): secrets "db    x" not found`},
		{"a 404 whose body was not a Status", apierrors.NewGenericServerResponse(http.StatusNotFound, http.MethodGet, secretsGR, "", "<html>"+leaked, 0, true),
			`list: NotFound (404): the server could not find the requested resource (get secrets)`},
		{"a status without a code", &apierrors.StatusError{ErrStatus: metav1.Status{Reason: metav1.StatusReasonTooManyRequests, Message: "slow down"}},
			`list: TooManyRequests: slow down`},
		{"long", apierrors.NewForbidden(secretsGR, "", errors.New(strings.Repeat("é", 400))), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := secretFake(1)
				forever(fake.FailLists, tc.err)
				inf := newInformer(t, fake, typed.Options[*corev1.Secret]{NoWatchList: true})
				reg := newRegistry(t)
				add(t, reg, inf)
				run(t, inf)
				time.Sleep(time.Second)
				synctest.Wait()
				e := reg.Snapshot().Informers[0].Error
				if e == nil {
					t.Fatalf("no error in the snapshot; status %+v", inf.Status())
				}
				if tc.want != "" && e.Text != tc.want {
					t.Errorf("text %q\nwant %q", e.Text, tc.want)
				}
				if len(e.Text) > httpinfo.DefaultMaxErrorBytes || !utf8.ValidString(e.Text) || strings.IndexFunc(e.Text, unicode.IsControl) >= 0 {
					t.Errorf("text %q: %d bytes (at most %d), valid UTF-8 %v", e.Text, len(e.Text), httpinfo.DefaultMaxErrorBytes, utf8.ValidString(e.Text))
				}
			})
		})
	}
}
