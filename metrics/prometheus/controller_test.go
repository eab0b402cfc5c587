package prometheus_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	promadapter "github.com/typedinformer/informer/metrics/prometheus"
	"github.com/typedinformer/informer/reconcile"
)

// staticController reports a fixed status.
type staticController struct {
	name string
	st   reconcile.Status
}

func (s staticController) Name() string             { return s.name }
func (s staticController) Status() reconcile.Status { return s.st }

// TestRegisterController: controller-runtime's names, labels and values,
// for two controllers in one registry; a name registered twice is refused.
func TestRegisterController(t *testing.T) {
	counts := make([]uint64, len(reconcile.LatencyBuckets)+1)
	counts[0], counts[4], counts[len(counts)-1] = 3, 1, 1 // <=5ms, <=100ms, >60s
	st := reconcile.Status{
		Workers: 4, Active: 2,
		Reconciles: reconcile.Outcomes{Success: 10, Error: 4, Terminal: 1, Panic: 1, Requeue: 2, RequeueAfter: 3},
		Latency:    reconcile.Histogram{Counts: counts, Count: 5, Sum: 61 * time.Second},
	}
	reg := prometheus.NewRegistry()
	for _, name := range []string{"foos", "bars"} {
		if err := promadapter.RegisterController(reg, staticController{name, st}); err != nil {
			t.Fatal(err)
		}
	}
	if err := promadapter.RegisterController(reg, staticController{"foos", st}); err == nil {
		t.Error("a controller name registered twice was accepted")
	}
	if err := promadapter.RegisterController(reg, nil); !errors.Is(err, promadapter.ErrNilController) {
		t.Errorf("nil controller: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			switch {
			case m.GetCounter() != nil:
				got[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				got[key] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				h := m.GetHistogram()
				got[key+",count"] = float64(h.GetSampleCount())
				got[key+",sum"] = h.GetSampleSum()
				got[key+",le=0.1"] = float64(h.GetBucket()[4].GetCumulativeCount())
				got[key+",le=60"] = float64(h.GetBucket()[len(h.GetBucket())-1].GetCumulativeCount())
			}
		}
	}
	want := map[string]float64{}
	for _, c := range []string{"bars", "foos"} {
		l := ",controller=" + c
		for k, v := range map[string]float64{
			"controller_runtime_reconcile_total" + l + ",result=success":       10,
			"controller_runtime_reconcile_total" + l + ",result=error":         4,
			"controller_runtime_reconcile_total" + l + ",result=requeue":       2,
			"controller_runtime_reconcile_total" + l + ",result=requeue_after": 3,
			"controller_runtime_reconcile_errors_total" + l:                    4,
			"controller_runtime_terminal_reconcile_errors_total" + l:           1,
			"controller_runtime_reconcile_panics_total" + l:                    1,
			"controller_runtime_max_concurrent_reconciles" + l:                 4,
			"controller_runtime_active_workers" + l:                            2,
			"controller_runtime_reconcile_time_seconds" + l + ",count":         5,
			"controller_runtime_reconcile_time_seconds" + l + ",sum":           61,
			"controller_runtime_reconcile_time_seconds" + l + ",le=0.1":        4,
			"controller_runtime_reconcile_time_seconds" + l + ",le=60":         4,
		} {
			want[k] = v
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gathered (-want +got):\n%s", diff)
	}
}
