package metrics

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The reasons Reason gives besides the API's own.
const (
	// ReasonUnknown is the reason of an error that is not an API status,
	// and of an API status with the empty reason
	// (metav1.StatusReasonUnknown).
	ReasonUnknown = "Unknown"
	// ReasonOther is the reason of an API status whose reason is none of
	// metav1's (a proxy's or an extension server's own): a reason is the
	// server's free text, so taking it as it is would let one misbehaving
	// server make any number of metric series or page entries.
	ReasonOther = "Other"
)

// apiReasons are the reasons of k8s.io/apimachinery/pkg/apis/meta/v1,
// StatusReasonUnknown aside.
var apiReasons = map[metav1.StatusReason]bool{
	metav1.StatusReasonUnauthorized:          true,
	metav1.StatusReasonForbidden:             true,
	metav1.StatusReasonNotFound:              true,
	metav1.StatusReasonAlreadyExists:         true,
	metav1.StatusReasonConflict:              true,
	metav1.StatusReasonGone:                  true,
	metav1.StatusReasonInvalid:               true,
	metav1.StatusReasonServerTimeout:         true,
	metav1.StatusReasonStoreReadError:        true,
	metav1.StatusReasonTimeout:               true,
	metav1.StatusReasonTooManyRequests:       true,
	metav1.StatusReasonBadRequest:            true,
	metav1.StatusReasonMethodNotAllowed:      true,
	metav1.StatusReasonNotAcceptable:         true,
	metav1.StatusReasonRequestEntityTooLarge: true,
	metav1.StatusReasonUnsupportedMediaType:  true,
	metav1.StatusReasonInternalError:         true,
	metav1.StatusReasonExpired:               true,
	metav1.StatusReasonServiceUnavailable:    true,
}

// Reason bounds an error's reason to a fixed set, for a metric label or a
// status page: the reason itself if it is one of the API's, else
// ReasonUnknown (empty) or ReasonOther. It gives at most 21 values.
func Reason(reason metav1.StatusReason) string {
	switch {
	case reason == metav1.StatusReasonUnknown:
		return ReasonUnknown
	case apiReasons[reason]:
		return string(reason)
	default:
		return ReasonOther
	}
}
