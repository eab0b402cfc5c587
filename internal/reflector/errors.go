package reflector

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/typedinformer/informer/source"
)

// refusal is an object Prepare refused, on its way from where it was met
// up to Run: the reflector stops before the object and relists after a
// backoff. Run reports Prepare's own error, not this wrapper.
type refusal struct{ err error }

func (r *refusal) Error() string { return r.err.Error() }

func (r *refusal) Unwrap() error { return r.err }

func isRefusal(err error) bool {
	var r *refusal
	return errors.As(err, &r)
}

// reportable is the error Run reports for err: Prepare's for a refusal.
func reportable(err error) error {
	var r *refusal
	if errors.As(err, &r) {
		return r.err
	}
	return err
}

// isExpired reports a 410: the resourceVersion is older than the server
// keeps.
func isExpired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// isTooLarge reports any of the server's forms of "resourceVersion newer
// than I have": the ResourceVersionTooLarge cause, or a timeout whose cause
// or message says so.
func isTooLarge(err error) bool {
	if apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return true
	}
	if !apierrors.IsTimeout(err) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			if c.Message == "Too large resource version" {
				return true
			}
		}
	}
	return strings.Contains(s.Message, "Too large resource version")
}

// needsRelist reports the errors after which the resourceVersion cannot be
// used any more, so only a new list can go on.
func needsRelist(err error) bool { return isExpired(err) || isTooLarge(err) }

// isTransient reports errors of a moment: the connection, an overloaded or
// restarting server. The same request is retried after a backoff.
func isTransient(err error) bool {
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsServerTimeout(err) || (apierrors.IsTimeout(err) && !isTooLarge(err))
}

// refusesWatchList reports errors that mean the server does not support a
// streaming list at all, so LIST should be used from now on.
func refusesWatchList(err error) bool {
	return apierrors.IsBadRequest(err) || apierrors.IsInvalid(err) ||
		apierrors.IsMethodNotSupported(err) || apierrors.IsNotAcceptable(err)
}

// isMalformedRequest reports a request the server refuses as such:
// retrying the same request cannot succeed.
func isMalformedRequest(err error) bool {
	return apierrors.IsBadRequest(err) || apierrors.IsInvalid(err) ||
		apierrors.IsMethodNotSupported(err) || apierrors.IsNotAcceptable(err) ||
		apierrors.IsUnsupportedMediaType(err)
}

// NeedsIntervention reports errors that retrying will not fix until someone
// changes something elsewhere: RBAC, credentials, a missing resource (CRD).
// Waits for sync return at once on them.
func NeedsIntervention(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsNotFound(err)
}

// isBadContent reports an error about what a stream carried rather than
// about the stream: a frame that makes no sense, an object of the wrong
// type, or none, an object that does not decode and has no name to
// quarantine it by.
func isBadContent(err error) bool {
	return errors.Is(err, source.ErrMalformed) || errors.Is(err, source.ErrWrongType) || errors.Is(err, source.ErrNilObject) ||
		errors.Is(err, source.ErrUndecodable)
}

// namedUndecodable returns the *source.UndecodableError err is, or
// wraps, if the object has a name to quarantine it by.
func namedUndecodable(err error) (*source.UndecodableError, bool) {
	if err == nil {
		return nil, false // the usual case, without the allocation errors.As's target costs
	}
	var u *source.UndecodableError
	if errors.As(err, &u) && u.Name != "" {
		return u, true
	}
	return nil, false
}

// badKey identifies a bad frame or object by what it said and the version
// it came after: the same key twice is the server replaying it.
func badKey(rv string, err error) string { return rv + "\x00" + err.Error() }

// malformedEvent is the error for an event that breaks the source contract.
func malformedEvent(format string, args ...any) error {
	return &source.Error{Phase: source.PhaseWatch, Err: fmt.Errorf("%w: "+format, append([]any{source.ErrMalformed}, args...)...)}
}
