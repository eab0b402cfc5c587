package reflector

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// WriteError is a queue write that failed: the object could not be taken
// (transform error, bad key). The reflector relists after a backoff rather
// than move its resourceVersion past it.
type WriteError struct {
	Op  string
	Err error
}

func (e *WriteError) Error() string { return fmt.Sprintf("queue %s: %v", e.Op, e.Err) }

// Unwrap returns the queue's error.
func (e *WriteError) Unwrap() error { return e.Err }

func isWriteError(err error) bool {
	var we *WriteError
	return errors.As(err, &we)
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

// isRetriable reports errors after which the same request is retried after a
// backoff, without a relist.
func isRetriable(err error) bool {
	return utilnet.IsConnectionRefused(err) || apierrors.IsTooManyRequests(err)
}

// refusesWatchList reports errors that mean the server does not support a
// streaming list at all, so LIST should be used from now on.
func refusesWatchList(err error) bool {
	return apierrors.IsBadRequest(err) || apierrors.IsInvalid(err) ||
		apierrors.IsMethodNotSupported(err) || apierrors.IsNotAcceptable(err)
}

// isMalformed reports a frame the source could not make sense of: an unknown
// event type, an error event without a status, an object of the wrong type
// or a nil object.
func isMalformed(err error) bool {
	var we *WriteError
	if errors.As(err, &we) {
		return false
	}
	return errors.Is(err, source.ErrMalformed) || errors.Is(err, source.ErrWrongType) || errors.Is(err, cache.ErrNilObject)
}
