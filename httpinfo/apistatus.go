package httpinfo

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/metrics"
)

// serverText says, for every reason of the API (metav1's StatusReason
// constants), whether the message of a status with that reason is shown:
// true where the API server writes it from a fixed text about the request
// (who may not do what, what was not found, what to retry), false where it
// carries text that another party wrote and that may quote an object.
// A reason outside this table is shown as metrics.Reason names it
// ("Other"), without its message.
var serverText = map[metav1.StatusReason]bool{
	metav1.StatusReasonUnauthorized:          true, // "Unauthorized"
	metav1.StatusReasonForbidden:             true, // the authorizer's verdict on user, verb and resource
	metav1.StatusReasonNotFound:              true, // `secrets "x" not found`
	metav1.StatusReasonAlreadyExists:         true, // `secrets "x" already exists`
	metav1.StatusReasonGone:                  true, // "too old resource version"
	metav1.StatusReasonExpired:               true, // "too old resource version"
	metav1.StatusReasonServerTimeout:         true, // "could not be completed at this time"
	metav1.StatusReasonTimeout:               true, // "request did not complete within..."
	metav1.StatusReasonTooManyRequests:       true, // "too many requests, try again later"
	metav1.StatusReasonServiceUnavailable:    true, // "unable to handle the request"
	metav1.StatusReasonMethodNotAllowed:      true, // fixed text
	metav1.StatusReasonNotAcceptable:         true, // the media types it can send
	metav1.StatusReasonUnsupportedMediaType:  true, // the media types it accepts
	metav1.StatusReasonRequestEntityTooLarge: true, // the limit
	// An admission or conversion webhook's text, a precondition's error,
	// a field error quoting the rejected value, a decoder's message about
	// a stored object, or "an error on the server (%q)" quoting a reply.
	metav1.StatusReasonInternalError:  false,
	metav1.StatusReasonInvalid:        false,
	metav1.StatusReasonBadRequest:     false,
	metav1.StatusReasonConflict:       false,
	metav1.StatusReasonStoreReadError: false,
	metav1.StatusReasonUnknown:        false, // anything
}

// apiStatus is the status err carries, if it is an API server error.
func apiStatus(err error) (metav1.Status, bool) {
	var s apierrors.APIStatus
	if !errors.As(err, &s) {
		return metav1.Status{}, false
	}
	return s.Status(), true
}

// statusText is what is shown of a status: "Forbidden (403)" and, for a
// reason whose message is the server's own text, ": " and the message.
func statusText(st metav1.Status) string {
	s := metrics.Reason(st.Reason)
	if st.Code != 0 {
		s = fmt.Sprintf("%s (%d)", s, st.Code)
	}
	if !serverText[st.Reason] || quotesReply(st) {
		return s + " " + withheld
	}
	return s + ": " + st.Message
}

// quotesReply reports a message that quotes a reply that was not a Status
// (a proxy's or a load balancer's body): client-go keeps such a body as a
// cause of type UnexpectedServerResponse and, for Forbidden and the
// media-type reasons, as the message too.
func quotesReply(st metav1.Status) bool {
	if st.Details == nil {
		return false
	}
	for _, c := range st.Details.Causes {
		if c.Type == metav1.CauseTypeUnexpectedServerResponse && c.Message != "" && strings.Contains(st.Message, c.Message) {
			return true
		}
	}
	return false
}
