package prometheus_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/metrics"
	promadapter "github.com/typedinformer/informer/metrics/prometheus"
)

// apiReasons are the reasons of k8s.io/apimachinery/pkg/apis/meta/v1
// (v0.37.2), StatusReasonUnknown ("") aside.
var apiReasons = []metav1.StatusReason{
	metav1.StatusReasonUnauthorized, metav1.StatusReasonForbidden, metav1.StatusReasonNotFound,
	metav1.StatusReasonAlreadyExists, metav1.StatusReasonConflict, metav1.StatusReasonGone,
	metav1.StatusReasonInvalid, metav1.StatusReasonServerTimeout, metav1.StatusReasonStoreReadError,
	metav1.StatusReasonTimeout, metav1.StatusReasonTooManyRequests, metav1.StatusReasonBadRequest,
	metav1.StatusReasonMethodNotAllowed, metav1.StatusReasonNotAcceptable,
	metav1.StatusReasonRequestEntityTooLarge, metav1.StatusReasonUnsupportedMediaType,
	metav1.StatusReasonInternalError, metav1.StatusReasonExpired, metav1.StatusReasonServiceUnavailable,
}

// TestErrorReasonsBounded: informer_errors_total has a series per reason of
// the API's set, "Unknown" for an error that is not an API status, and one
// "Other" series for every other reason, however many distinct ones an
// informer reports.
func TestErrorReasonsBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := promadapter.New(reg, promadapter.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := m.Register(metrics.Informer{Name: "pods", Resource: "pods"}, func(*metrics.Snapshot) {})
	defer rec.Unregister()
	for i := range 300 {
		rec.ObserveError(fmt.Sprintf("MadeUpReason%d", i))
	}
	want := map[string]float64{
		pods("informer_errors_total", "reason=Other"): 300,
	}
	rec.ObserveError("")
	want[pods("informer_errors_total", "reason=Unknown")] = 1
	for _, r := range apiReasons {
		rec.ObserveError(string(r))
		want[pods("informer_errors_total", "reason="+string(r))] = 1
	}
	got := gather(t, reg, "informer_errors_total")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("informer_errors_total (-want +got):\n%s", diff)
	}
	if len(got) > len(apiReasons)+2 {
		t.Errorf("%d series of informer_errors_total, want at most %d", len(got), len(apiReasons)+2)
	}
}
