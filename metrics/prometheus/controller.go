package prometheus

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/typedinformer/informer/reconcile"
)

// ErrNilController is returned by RegisterController for a nil
// controller.
var ErrNilController = errors.New("prometheus: nil controller")

// ControllerStatuser reports a reconcile loop's state: a
// *reconcile.Controller of any type has it.
type ControllerStatuser interface {
	Name() string
	Status() reconcile.Status
}

// controllerCollector reads a controller's Status at collection, under
// controller-runtime's metric names, with the controller's name as the
// constant label controller.
type controllerCollector struct {
	c                                    ControllerStatuser
	total, errors, terminal, panics      *prometheus.Desc
	latency, maxConcurrent, activeWorker *prometheus.Desc
}

// RegisterController exports a controller's counters under the names
// controller-runtime exports for its controllers, so that dashboards and
// alerts made for those work: controller_runtime_reconcile_total (label
// result: success, error, requeue, requeue_after),
// controller_runtime_reconcile_errors_total (terminal errors and panics
// included), controller_runtime_terminal_reconcile_errors_total,
// controller_runtime_reconcile_panics_total,
// controller_runtime_reconcile_time_seconds (a histogram over
// reconcile.LatencyBuckets), controller_runtime_max_concurrent_reconciles
// and controller_runtime_active_workers, each with the label controller.
// They are read from Controller.Status when reg is gathered. For the
// workqueue_* metrics, set the controller's reconcile.Options.MetricsProvider
// to Metrics.WorkqueueProvider. It fails for a nil registerer or
// controller and when reg refuses the collector (a name registered twice).
func RegisterController(reg prometheus.Registerer, c ControllerStatuser) error {
	if reg == nil {
		return ErrNilRegisterer
	}
	if c == nil {
		return ErrNilController
	}
	l := prometheus.Labels{"controller": c.Name()}
	desc := func(name, help string, variable ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, variable, l)
	}
	cc := controllerCollector{
		c:             c,
		total:         desc("controller_runtime_reconcile_total", "Total number of reconciliations per controller", "result"),
		errors:        desc("controller_runtime_reconcile_errors_total", "Total number of reconciliation errors per controller"),
		terminal:      desc("controller_runtime_terminal_reconcile_errors_total", "Total number of terminal reconciliation errors per controller"),
		panics:        desc("controller_runtime_reconcile_panics_total", "Total number of reconciliation panics per controller"),
		latency:       desc("controller_runtime_reconcile_time_seconds", "Length of time per reconciliation per controller"),
		maxConcurrent: desc("controller_runtime_max_concurrent_reconciles", "Maximum number of concurrent reconciles per controller"),
		activeWorker:  desc("controller_runtime_active_workers", "Number of currently used workers per controller"),
	}
	if err := reg.Register(cc); err != nil {
		return fmt.Errorf("prometheus: register controller %s: %w", c.Name(), err)
	}
	return nil
}

// Describe implements prometheus.Collector.
func (c controllerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.total, c.errors, c.terminal, c.panics, c.latency, c.maxConcurrent, c.activeWorker} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c controllerCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.c.Status()
	r := s.Reconciles
	counter := func(d *prometheus.Desc, v uint64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), lv...)
	}
	counter(c.total, r.Success, "success")
	counter(c.total, r.Error, "error")
	counter(c.total, r.Requeue, "requeue")
	counter(c.total, r.RequeueAfter, "requeue_after")
	counter(c.errors, r.Error)
	counter(c.terminal, r.Terminal)
	counter(c.panics, r.Panic)
	buckets := make(map[float64]uint64, len(reconcile.LatencyBuckets))
	var cum uint64
	for i, le := range reconcile.LatencyBuckets {
		cum += s.Latency.Counts[i]
		buckets[le] = cum
	}
	ch <- prometheus.MustNewConstHistogram(c.latency, s.Latency.Count, s.Latency.Sum.Seconds(), buckets)
	ch <- prometheus.MustNewConstMetric(c.maxConcurrent, prometheus.GaugeValue, float64(s.Workers))
	ch <- prometheus.MustNewConstMetric(c.activeWorker, prometheus.GaugeValue, float64(s.Active))
}
