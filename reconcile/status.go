package reconcile

import (
	"sync"
	"sync/atomic"
	"time"
)

// LatencyBuckets are the upper bounds, in seconds, of Status.Latency's
// buckets: those of controller-runtime's
// controller_runtime_reconcile_time_seconds, so that dashboards made for
// it read this controller's figures too.
var LatencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
	1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60}

// Status is what a controller has done, for metrics, health and the debug
// page: read it with Controller.Status, as often as you like (it takes no
// lock the workers wait on).
type Status struct {
	// Name is the controller's name (Controller.Name).
	Name string
	// Workers is Options.Workers; Active is how many of them are in a
	// Reconcile call now.
	Workers, Active int
	// Queued is how many keys wait for a worker (Controller.Len).
	Queued int
	// Started says the caches synced and the workers run; Stopped that
	// Run returned.
	Started, Stopped bool
	// Reconciles counts finished Reconcile calls by what they came to.
	Reconciles Outcomes
	// Dropped counts keys given up after Options.MaxRetries.
	Dropped uint64
	// LastError is the last failed reconcile (a *KeyError), with the time
	// it came; nil if none has failed.
	LastError     error
	LastErrorTime time.Time
	// Latency is how long Reconcile calls took.
	Latency Histogram
	// Watches are the Options.Watches, in order.
	Watches []WatchStatus
}

// Outcomes counts Reconcile calls by outcome. Success, Error, Requeue and
// RequeueAfter are the result label values of controller-runtime's
// controller_runtime_reconcile_total; Error counts every failure,
// Terminal and Panic included.
type Outcomes struct {
	// Success: a nil error.
	Success uint64 `json:"success"`
	// Error: any failure: an error (retried), a terminal error (not
	// retried) or a panic (retried).
	Error uint64 `json:"error"`
	// Terminal: errors marked with Terminal.
	Terminal uint64 `json:"terminal"`
	// Panic: recovered panics.
	Panic uint64 `json:"panic"`
	// Requeue and RequeueAfter: RequeueAfter with no delay, and with one.
	Requeue      uint64 `json:"requeue"`
	RequeueAfter uint64 `json:"requeueAfter"`
}

// Histogram is a distribution of durations over LatencyBuckets.
type Histogram struct {
	// Counts[i] counts the observations of at most LatencyBuckets[i]
	// seconds and more than the bucket before: not cumulative. The last
	// element counts those above the last bucket.
	Counts []uint64
	// Count and Sum are the number of observations and their total.
	Count uint64
	Sum   time.Duration
}

// counters are a controller's Status counters, updated by its workers.
type counters struct {
	outcomes [numOutcomes]atomic.Uint64
	dropped  atomic.Uint64
	buckets  []atomic.Uint64 // len(LatencyBuckets)+1
	sumNanos atomic.Int64

	mu      sync.Mutex
	lastErr error
	lastAt  time.Time
}

func newCounters() *counters {
	return &counters{buckets: make([]atomic.Uint64, len(LatencyBuckets)+1)}
}

// observe counts one Reconcile call.
func (c *counters) observe(o outcome, took time.Duration) {
	c.outcomes[o].Add(1)
	s := took.Seconds()
	i := 0
	for i < len(LatencyBuckets) && s > LatencyBuckets[i] {
		i++
	}
	c.buckets[i].Add(1)
	c.sumNanos.Add(int64(took))
}

func (c *counters) failed(err error) {
	c.mu.Lock()
	c.lastErr, c.lastAt = err, time.Now()
	c.mu.Unlock()
}

// fill copies the counters into s.
func (c *counters) fill(s *Status) {
	o := func(x outcome) uint64 { return c.outcomes[x].Load() }
	s.Reconciles = Outcomes{
		Success:      o(outcomeSuccess),
		Terminal:     o(outcomeTerminal),
		Panic:        o(outcomePanic),
		Requeue:      o(outcomeRequeue),
		RequeueAfter: o(outcomeRequeueAfter),
	}
	s.Reconciles.Error = o(outcomeError) + s.Reconciles.Terminal + s.Reconciles.Panic
	s.Dropped = c.dropped.Load()
	s.Latency.Counts = make([]uint64, len(c.buckets))
	for i := range c.buckets {
		s.Latency.Counts[i] = c.buckets[i].Load()
		s.Latency.Count += s.Latency.Counts[i]
	}
	s.Latency.Sum = time.Duration(c.sumNanos.Load())
	c.mu.Lock()
	s.LastError, s.LastErrorTime = c.lastErr, c.lastAt
	c.mu.Unlock()
}

// Status returns what the controller has done so far.
func (c *Controller[T]) Status() Status {
	s := Status{
		Name:    c.name,
		Workers: c.opts.Workers,
		Active:  int(c.active.Load()),
		Queued:  c.Len(),
		Started: c.started.Load(),
		Stopped: c.done.Load(),
	}
	c.stats.fill(&s)
	for _, w := range c.watches {
		s.Watches = append(s.Watches, w.status())
	}
	return s
}

// Name returns the controller's name: Options.Name, else its informer's.
func (c *Controller[T]) Name() string { return c.name }
