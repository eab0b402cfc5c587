package reconcile

import (
	"errors"
	"fmt"
	"time"
)

// ErrTerminal is wrapped by the errors Terminal makes: errors.Is(err,
// ErrTerminal) says Reconcile gave up on the key for good.
var ErrTerminal = errors.New("reconcile: terminal error")

// RequeueAfter is what Reconcile returns to have its key reconciled again
// after d, though nothing failed: polling an external system, waiting for
// a deadline, a certificate to renew. The key's failures are forgotten
// (its backoff starts again from the first step), nothing is reported,
// and a change to the object in the meantime reconciles it at once. A d
// of zero or below requeues the key now, behind the keys already waiting.
// The value may be wrapped (fmt.Errorf("...: %w", RequeueAfter(d))); a
// nil error still means done, and any other error a retry with backoff.
func RequeueAfter(d time.Duration) error { return &Requeue{After: max(d, 0)} }

// Requeue is the value RequeueAfter returns; use errors.As to read it.
type Requeue struct {
	// After is how long the key waits; 0 requeues it now.
	After time.Duration
}

// Error says when the key comes back: a Requeue is not a failure, but it
// may be logged by a caller that wraps it.
func (r *Requeue) Error() string {
	if r.After == 0 {
		return "reconcile: requeue now"
	}
	return fmt.Sprintf("reconcile: requeue after %v", r.After)
}

// Terminal marks err as one that a retry cannot fix (an invalid spec, a
// missing permission the controller will not get): the key is not
// retried, the error is reported (a *KeyError with Terminal set) and
// counted, and the next change to the object reconciles it again.
// Terminal(nil) is ErrTerminal itself.
func Terminal(err error) error {
	if err == nil {
		return ErrTerminal
	}
	return &terminal{err: err}
}

type terminal struct{ err error }

func (t *terminal) Error() string   { return "terminal: " + t.err.Error() }
func (t *terminal) Unwrap() []error { return []error{ErrTerminal, t.err} }

// outcome is what one Reconcile call came to.
type outcome uint8

const (
	outcomeSuccess outcome = iota
	outcomeError
	outcomeTerminal
	outcomePanic
	outcomeRequeue      // requeue now
	outcomeRequeueAfter // requeue after a delay
	numOutcomes
)

// classify reads Reconcile's error: the outcome and, for a requeue, the
// delay. A terminal error wins over a requeue wrapped in it.
func classify(err error, panicked bool) (outcome, time.Duration) {
	var rq *Requeue
	switch {
	case err == nil:
		return outcomeSuccess, 0
	case panicked:
		return outcomePanic, 0
	case errors.Is(err, ErrTerminal):
		return outcomeTerminal, 0
	case errors.As(err, &rq):
		if rq.After <= 0 {
			return outcomeRequeue, 0
		}
		return outcomeRequeueAfter, rq.After
	}
	return outcomeError, 0
}
