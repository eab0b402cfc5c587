package prometheus

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// WorkqueueProvider is a client-go workqueue.MetricsProvider that exports
// the metrics of each queue with a name under client-go's workqueue_*
// names, labelled by that name. Get it from [Metrics.WorkqueueProvider];
// client-go does not create metrics for a queue without a name.
type WorkqueueProvider struct {
	adds, retries                 *prometheus.CounterVec
	depthGauge                    *prometheus.GaugeVec
	latency, workDuration         *prometheus.HistogramVec
	unfinished, longestProcessing *prometheus.GaugeVec
}

var _ workqueue.MetricsProvider = (*WorkqueueProvider)(nil)

// defaultWorkqueueBuckets are client-go's: 10ns to 10s, tenfold.
var defaultWorkqueueBuckets = prometheus.ExponentialBuckets(10e-9, 10, 10)

func newWorkqueueProvider(buckets []float64) *WorkqueueProvider {
	if len(buckets) == 0 {
		buckets = defaultWorkqueueBuckets
	}
	name := []string{"name"}
	return &WorkqueueProvider{
		depthGauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "depth", Help: "Current depth of the workqueue.",
		}, name),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "workqueue", Name: "adds_total", Help: "Adds handled by the workqueue.",
		}, name),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "workqueue", Name: "queue_duration_seconds", Buckets: buckets,
			Help: "Seconds an item stays in the workqueue before it is requested.",
		}, name),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "workqueue", Name: "work_duration_seconds", Buckets: buckets,
			Help: "Seconds processing an item from the workqueue takes.",
		}, name),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "unfinished_work_seconds",
			Help: "Seconds of work in progress not yet observed by work_duration_seconds; a large value means stuck workers.",
		}, name),
		longestProcessing: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "longest_running_processor_seconds",
			Help: "Seconds the longest running worker of the workqueue has been running.",
		}, name),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "workqueue", Name: "retries_total", Help: "Retries handled by the workqueue.",
		}, name),
	}
}

func (p *WorkqueueProvider) collectors() []prometheus.Collector {
	return []prometheus.Collector{p.depthGauge, p.adds, p.latency, p.workDuration, p.unfinished, p.longestProcessing, p.retries}
}

// NewDepthMetric implements workqueue.MetricsProvider.
func (p *WorkqueueProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return p.depthGauge.WithLabelValues(name)
}

// NewAddsMetric implements workqueue.MetricsProvider.
func (p *WorkqueueProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return p.adds.WithLabelValues(name)
}

// NewLatencyMetric implements workqueue.MetricsProvider.
func (p *WorkqueueProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return p.latency.WithLabelValues(name)
}

// NewWorkDurationMetric implements workqueue.MetricsProvider.
func (p *WorkqueueProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return p.workDuration.WithLabelValues(name)
}

// NewUnfinishedWorkSecondsMetric implements workqueue.MetricsProvider.
func (p *WorkqueueProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.unfinished.WithLabelValues(name)
}

// NewLongestRunningProcessorSecondsMetric implements
// workqueue.MetricsProvider.
func (p *WorkqueueProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.longestProcessing.WithLabelValues(name)
}

// NewRetriesMetric implements workqueue.MetricsProvider.
func (p *WorkqueueProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return p.retries.WithLabelValues(name)
}
