// Package prometheus exports the metrics of informers (package metrics) and
// of client-go workqueues to a Prometheus registry, under the names
// Kubernetes components export for theirs.
//
//	m, err := prometheus.New(registry, prometheus.Options{})
//	inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{Metrics: m})
//	q := workqueue.NewTypedRateLimitingQueueWithConfig(rl,
//		workqueue.TypedRateLimitingQueueConfig[string]{Name: "pods", MetricsProvider: m.WorkqueueProvider()})
//
// # Informer metrics
//
// Every informer metric has the labels name, group, version and resource
// (empty when unknown). informer_queued_items,
// informer_processing_latency_seconds and informer_store_resource_version
// are the metrics of client-go's informers (exported by
// k8s.io/component-base); the others are this module's: see the table in
// docs/observability.md.
//
// Values the informer keeps (counters, the last error, queue length,
// resourceVersion, handlers) are read from it when the registry is
// gathered; latency, events by type and errors by reason are counted as
// the informer reports them. The reason label of informer_errors_total
// takes only the reasons k8s.io/apimachinery/pkg/apis/meta/v1 defines,
// "Unknown" (not an API status) and "Other" (any other reason a server
// sent), so its series are bounded.
//
// # Workqueue metrics
//
// [Metrics.WorkqueueProvider] is a workqueue.MetricsProvider with client-go's
// workqueue_* names, labelled by the queue's name.
package prometheus

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/metrics"
)

// ErrNilRegisterer is returned by New for a nil registerer.
var ErrNilRegisterer = errors.New("prometheus: nil Registerer")

// DefaultBuckets are the default buckets of
// informer_processing_latency_seconds, those of client-go's informers.
var DefaultBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// Options configures New. The zero value is ready to use.
type Options struct {
	// Buckets are the buckets of informer_processing_latency_seconds.
	// Default: DefaultBuckets.
	Buckets []float64
	// WorkqueueBuckets are the buckets of workqueue_queue_duration_seconds
	// and workqueue_work_duration_seconds. Default: client-go's, 10
	// buckets from 10ns growing tenfold.
	WorkqueueBuckets []float64
}

// informerLabels are the labels of every informer metric.
var informerLabels = []string{"name", "group", "version", "resource"}

// Metrics exports informer and workqueue metrics to a registry. It
// implements metrics.Metrics: set it as typed.Options.Metrics.
type Metrics struct {
	latency *prometheus.HistogramVec
	events  *prometheus.CounterVec
	errs    *prometheus.CounterVec
	wq      *WorkqueueProvider

	mu        sync.Mutex
	informers map[metrics.Informer][]*registration // in registration order; the first is exported
}

// New returns Metrics registered with reg. It fails for a nil reg and when
// reg already has metrics of the same names (another Metrics, or
// k8s.io/component-base's informer metrics on the same registry).
func New(reg prometheus.Registerer, opts Options) (*Metrics, error) {
	if reg == nil {
		return nil, ErrNilRegisterer
	}
	buckets := opts.Buckets
	if len(buckets) == 0 {
		buckets = DefaultBuckets
	}
	m := &Metrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "informer_processing_latency_seconds",
			Help:    "Time taken to apply a batch of changes popped from the informer's queue and hand it to the handlers.",
			Buckets: buckets,
		}, informerLabels),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "informer_watch_events_total",
			Help: "Watch events the informer applied, by type (ADDED, MODIFIED, DELETED, BOOKMARK).",
		}, append(informerLabels[:4:4], "type")),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "informer_errors_total",
			Help: "List, watch and write errors the informer recovered from, by API reason (Unknown when the error is not an API status, Other for a reason the API does not define).",
		}, append(informerLabels[:4:4], "reason")),
		wq:        newWorkqueueProvider(opts.WorkqueueBuckets),
		informers: map[metrics.Informer][]*registration{},
	}
	cs := append([]prometheus.Collector{m.latency, m.events, m.errs, stateCollector{m}}, m.wq.collectors()...)
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, r := range cs[:i] {
				reg.Unregister(r)
			}
			return nil, fmt.Errorf("prometheus: New: %w", err)
		}
	}
	return m, nil
}

// WorkqueueProvider returns the provider of workqueue metrics registered
// with m's registry, for client-go workqueues' MetricsProvider.
func (m *Metrics) WorkqueueProvider() *WorkqueueProvider { return m.wq }

// Register implements metrics.Metrics. An informer with the same name and
// resource as one already registered is exported only once that one has
// unregistered: names must be unique for metrics to tell informers apart.
func (m *Metrics) Register(id metrics.Informer, state metrics.State) metrics.Recorder {
	lv := []string{id.Name, id.Group, id.Version, id.Resource}
	r := &registration{m: m, id: id, state: state, since: time.Now(), labels: lv,
		latency: m.latency.WithLabelValues(lv...),
		added:   m.events.WithLabelValues(append(lv[:4:4], "ADDED")...),
		mod:     m.events.WithLabelValues(append(lv[:4:4], "MODIFIED")...),
		deleted: m.events.WithLabelValues(append(lv[:4:4], "DELETED")...),
		marks:   m.events.WithLabelValues(append(lv[:4:4], "BOOKMARK")...),
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.informers[id] = append(m.informers[id], r)
	return r
}

// registration is one informer's Recorder.
type registration struct {
	m      *Metrics
	id     metrics.Informer
	state  metrics.State
	since  time.Time // Register's time: staleness before the first event
	labels []string

	latency                    prometheus.Observer
	added, mod, deleted, marks prometheus.Counter
	errMu                      sync.Mutex
	errsByReason               map[string]prometheus.Counter
	snap                       metrics.Snapshot // used under m.mu by Collect
}

// ObserveBatch implements metrics.Recorder.
func (r *registration) ObserveBatch(b metrics.Batch) {
	r.latency.Observe(b.Latency.Seconds())
	add(r.added, b.Added)
	add(r.mod, b.Modified)
	add(r.deleted, b.Deleted)
	add(r.marks, b.Bookmarks)
}

func add(c prometheus.Counter, n int) {
	if n > 0 {
		c.Add(float64(n))
	}
}

// ObserveError implements metrics.Recorder. The reason label is one of
// the API's reasons, "Unknown" for an error that is not an API status, or
// "Other" for any other reason (metrics.Reason).
func (r *registration) ObserveError(reason string) {
	reason = metrics.Reason(metav1.StatusReason(reason))
	r.errMu.Lock()
	c, ok := r.errsByReason[reason]
	if !ok {
		if r.errsByReason == nil {
			r.errsByReason = map[string]prometheus.Counter{}
		}
		c = r.m.errs.WithLabelValues(append(r.labels[:4:4], reason)...)
		r.errsByReason[reason] = c
	}
	r.errMu.Unlock()
	c.Inc()
}

// Unregister implements metrics.Recorder: the informer's metrics go away
// unless another informer of the same identity is still registered.
func (r *registration) Unregister() {
	m := r.m
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := m.informers[r.id]
	for i, x := range rs {
		if x == r {
			rs = append(rs[:i], rs[i+1:]...)
			break
		}
	}
	if len(rs) > 0 {
		m.informers[r.id] = rs
		return
	}
	delete(m.informers, r.id)
	lv := prometheus.Labels{"name": r.id.Name, "group": r.id.Group, "version": r.id.Version, "resource": r.id.Resource}
	m.latency.DeletePartialMatch(lv)
	m.events.DeletePartialMatch(lv)
	m.errs.DeletePartialMatch(lv)
}
