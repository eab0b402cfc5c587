package httpinfo

import (
	"errors"
	"fmt"
	"time"

	"github.com/typedinformer/informer/reconcile"
)

// Controller is what the registry reads of a reconcile loop:
// *reconcile.Controller of any type implements it.
type Controller interface {
	Name() string
	Status() reconcile.Status
}

// ControllerStatus is the state of one controller: its queue, its
// workers and what its reconciles came to.
type ControllerStatus struct {
	// Name is the controller's name.
	Name string `json:"name"`
	// Started says its caches synced and its workers run; Stopped that
	// its Run returned.
	Started bool `json:"started"`
	Stopped bool `json:"stopped"`
	// Workers, Active and Queued: workers, those in a Reconcile call now,
	// keys waiting for one.
	Workers int `json:"workers"`
	Active  int `json:"active"`
	Queued  int `json:"queued"`
	// Reconciles counts finished reconciles by outcome; Dropped the keys
	// given up after too many retries.
	Reconciles reconcile.Outcomes `json:"reconciles"`
	Dropped    uint64             `json:"dropped"`
	// MeanSeconds is the mean reconcile time, and P99Seconds the upper
	// bound of the latency bucket that holds the 99th percentile (0 before
	// the first reconcile, +Inf past the last bucket: then -1 in JSON).
	MeanSeconds float64 `json:"meanSeconds"`
	P99Seconds  float64 `json:"p99Seconds"`
	// Error is the last failed reconcile, as the page shows errors.
	Error *ErrorStatus `json:"error,omitempty"`
}

// AddController registers c under its Name, to be shown on the page and
// checked by the readiness check (ready once started, not ready once
// stopped). It fails for a nil registry or controller and with
// ErrDuplicate for a controller name already registered.
func AddController(r *Registry, c Controller) error {
	if r == nil {
		return ErrNilRegistry
	}
	if c == nil {
		return fmt.Errorf("%w: nil controller", ErrNilHandler)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, have := range r.controllers {
		if have.Name() == c.Name() {
			return fmt.Errorf("%w: controller %q", ErrDuplicate, c.Name())
		}
	}
	r.controllers = append(r.controllers, c)
	return nil
}

func (r *Registry) controllerStatus(c Controller) ControllerStatus {
	s := c.Status()
	cs := ControllerStatus{
		Name: s.Name, Started: s.Started, Stopped: s.Stopped,
		Workers: s.Workers, Active: s.Active, Queued: s.Queued,
		Reconciles: s.Reconciles, Dropped: s.Dropped,
	}
	if n := s.Latency.Count; n > 0 {
		cs.MeanSeconds = s.Latency.Sum.Seconds() / float64(n)
		var seen uint64
		cs.P99Seconds = -1 // past the last bucket
		for i, c := range s.Latency.Counts {
			seen += c
			if seen*100 >= n*99 && i < len(reconcile.LatencyBuckets) {
				cs.P99Seconds = reconcile.LatencyBuckets[i]
				break
			}
		}
	}
	if s.LastError != nil {
		cs.Error = &ErrorStatus{Text: r.keyErrorText(s.LastError), Since: s.LastErrorTime, Last: s.LastErrorTime}
	}
	return cs
}

// keyErrorText names the key, the attempt and what became of the key, and
// gives Reconcile's own error by the registry's rule (Options.ErrorText):
// the key is the controller's, not an object's content.
func (r *Registry) keyErrorText(err error) string {
	var ke *reconcile.KeyError
	if !errors.As(err, &ke) {
		return r.text(err)
	}
	what := "retried"
	switch {
	case ke.Dropped:
		what = "dropped"
	case ke.Terminal:
		what = "terminal, not retried"
	}
	cause := r.text(ke.Err)
	if errors.Is(ke.Err, reconcile.ErrPanic) {
		cause = "Reconcile panicked (the stack is in the logs)"
	}
	return bound(fmt.Sprintf("%s, attempt %d, %s: %s", ke.Key, ke.Attempts, what, cause), r.maxError)
}

// seconds shows a duration in seconds the way the page does.
func seconds(s float64) string {
	if s < 0 {
		return "> 60s"
	}
	return roundAge(time.Duration(s * float64(time.Second)))
}
