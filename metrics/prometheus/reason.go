package prometheus

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The reason label of informer_errors_total for errors outside the API's
// reasons.
const (
	// reasonUnknown labels an error that is not an API status, and an API
	// status with the empty reason (metav1.StatusReasonUnknown).
	reasonUnknown = "Unknown"
	// reasonOther labels an API status whose reason is none of metav1's
	// (a proxy's or an extension server's own): a reason is the server's
	// free text, so taking it as it is would let one misbehaving server
	// make any number of series.
	reasonOther = "Other"
)

// apiReasons are the reasons of k8s.io/apimachinery/pkg/apis/meta/v1,
// StatusReasonUnknown aside: the only values the reason label takes
// besides reasonUnknown and reasonOther.
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

// reasonLabel is the reason label of an error reported with reason: the
// reason itself for one of the API's, else reasonUnknown or reasonOther,
// so that the label has at most len(apiReasons)+2 values.
func reasonLabel(reason string) string {
	switch {
	case reason == "":
		return reasonUnknown
	case apiReasons[metav1.StatusReason(reason)]:
		return reason
	default:
		return reasonOther
	}
}
