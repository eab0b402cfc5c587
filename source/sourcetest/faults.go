package sourcetest

import (
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// ErrBadFaultOptions is wrapped by the errors of NewFaulty for options it
// cannot follow: a rate outside [0, 1], an unknown kind, a scripted fault
// at a call that cannot take it.
var ErrBadFaultOptions = errors.New("sourcetest: bad fault options")

// Op is the kind of call of a source a fault happens at.
type Op uint8

// The calls faults happen at.
const (
	// OpList is a List call (each page is a call).
	OpList Op = iota + 1
	// OpWatch is a Watch call: a watch or a streaming list starting.
	OpWatch
	// OpNext is a Next call on any watch the source started.
	OpNext
)

// String returns the call's name.
func (o Op) String() string {
	switch o {
	case OpList:
		return "list"
	case OpWatch:
		return "watch"
	case OpNext:
		return "next"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// FaultKind is what goes wrong. Each kind happens only where a real API
// server or connection can make it happen, and in the form it takes
// there: API errors are the server's statuses (apierrors), wrapped in a
// *source.Error with the phase of the call, as the module's adapters
// return them.
type FaultKind uint8

// The faults.
const (
	// FaultCut ends the watch stream (Next returns source.ErrWatchClosed),
	// as a dropped connection does; the events not yet received are lost
	// to that stream only. At OpNext.
	FaultCut FaultKind = iota + 1
	// FaultGone is 410 Gone (reason Expired): for a list page after the
	// first (an expired continue token), for a watch from a version (at
	// start, or as the stream's first event, as the watch cache sends
	// it), and in the stream of such a watch (an ERROR event).
	FaultGone
	// FaultTooLarge is the "Too large resource version" error, in one of
	// the server's three forms (a timeout with the ResourceVersionTooLarge
	// cause, with the cause's message only, or with the message only),
	// for a list or a watch from a version (at start or as the first
	// event).
	FaultTooLarge
	// FaultTooManyRequests is 429 at the start of a list or watch.
	FaultTooManyRequests
	// FaultInternal is 500 ("etcdserver: no leader") at the start of a
	// list or watch, or in a stream as an ERROR event.
	FaultInternal
	// FaultForbidden is 403 at the start of a list or watch, or in a
	// stream. Waits for sync return at once on it, by design.
	FaultForbidden
	// FaultDelay waits Fault.For before the call goes on: a slow server or
	// network. At every call.
	FaultDelay
	// FaultStall blocks Next for Fault.For, then ends the stream: a
	// half-open connection, detected late. With For zero it blocks until
	// the watch is stopped, ctx ends or the faults are healed.
	FaultStall
	// FaultDuplicate delivers the next event twice.
	FaultDuplicate
	// FaultDrop loses the next event, ends the stream, and answers the
	// next watch from a version with 410 Gone, as a server whose history
	// was compacted meanwhile does: only a relist recovers the event, and
	// it can.
	FaultDrop
	// FaultWrongType is an object of another type than T: the error the
	// adapters return for it (wrapping source.ErrWrongType), in a stream
	// or a list.
	FaultWrongType
	// FaultNilObject is a nil object: in a stream, an ADDED event whose
	// object is the zero T (a source breaking the Event contract); in a
	// list, the adapters' error wrapping source.ErrNilObject.
	FaultNilObject
	// FaultMalformed is a frame that makes no sense: in a stream, an event
	// of an unknown type, or the adapters' error for one (wrapping
	// source.ErrMalformed); in a list, an undecodable body.
	FaultMalformed
)

// AllFaults lists every kind, the default of FaultOptions.Kinds.
var AllFaults = []FaultKind{
	FaultCut, FaultGone, FaultTooLarge, FaultTooManyRequests, FaultInternal, FaultForbidden,
	FaultDelay, FaultStall, FaultDuplicate, FaultDrop, FaultWrongType, FaultNilObject, FaultMalformed,
}

var faultNames = map[FaultKind]string{
	FaultCut: "cut", FaultGone: "gone", FaultTooLarge: "too-large", FaultTooManyRequests: "429",
	FaultInternal: "500", FaultForbidden: "403", FaultDelay: "delay", FaultStall: "stall",
	FaultDuplicate: "duplicate", FaultDrop: "drop", FaultWrongType: "wrong-type",
	FaultNilObject: "nil-object", FaultMalformed: "malformed",
}

// String returns the fault's short name.
func (k FaultKind) String() string {
	if s, ok := faultNames[k]; ok {
		return s
	}
	return fmt.Sprintf("FaultKind(%d)", uint8(k))
}

// validAt reports whether kind k can happen at op.
func validAt(k FaultKind, op Op) bool {
	switch op {
	case OpList:
		switch k {
		case FaultGone, FaultTooLarge, FaultTooManyRequests, FaultInternal, FaultForbidden,
			FaultDelay, FaultWrongType, FaultNilObject, FaultMalformed:
			return true
		}
	case OpWatch:
		switch k {
		case FaultGone, FaultTooLarge, FaultTooManyRequests, FaultInternal, FaultForbidden, FaultDelay:
			return true
		}
	case OpNext:
		switch k {
		case FaultCut, FaultGone, FaultInternal, FaultForbidden, FaultDelay, FaultStall,
			FaultDuplicate, FaultDrop, FaultWrongType, FaultNilObject, FaultMalformed:
			return true
		}
	}
	return false
}

// Fault is one fault of a script: Kind at the At-th call of Op.
type Fault struct {
	// Kind is what goes wrong.
	Kind FaultKind
	// Op is the kind of call.
	Op Op
	// At is which call of Op, counting from 1 over the source's life (for
	// OpNext, over every watch it started).
	At int
	// For is how long a FaultDelay waits or a FaultStall blocks.
	For time.Duration
}

// String returns "kind@op#at", with the duration if it has one.
func (f Fault) String() string {
	s := fmt.Sprintf("%v@%v#%d", f.Kind, f.Op, f.At)
	if f.For > 0 {
		s += "(" + f.For.String() + ")"
	}
	return s
}

// FaultRecord is one fault that happened.
type FaultRecord struct {
	Fault
	// Seq numbers the faults in the order they happened, from 1.
	Seq int
	// Watch is which Watch call started the stream a Next fault happened
	// in (counting from 1), or the watch a Watch fault answered; 0 for a
	// List fault.
	Watch int
	// Event is which Next call of that stream it was, from 1.
	Event int
	// ResourceVersion is the last resourceVersion the source had handed
	// out (of an event, a bookmark or a whole list) when it happened.
	ResourceVersion string
	// Scripted says it came from FaultOptions.Script, not the random plan.
	Scripted bool
	// Form says which form the fault took, where it has several.
	Form string
	// StreamingList says it happened in a streaming list before its end
	// bookmark, or at its start.
	StreamingList bool
	// Err is the error the fault handed out, if it was one (not for a
	// cut, a stall, or an event with a nil object or of an unknown type,
	// which a client must tell by itself): a client that reports errors
	// reports one that errors.Is finds Err in.
	Err error
}

// String describes the record on one line.
func (r FaultRecord) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %v", r.Seq, r.Fault)
	if r.Watch > 0 {
		fmt.Fprintf(&b, " watch %d", r.Watch)
	}
	if r.Event > 0 {
		fmt.Fprintf(&b, " event %d", r.Event)
	}
	fmt.Fprintf(&b, " after rv %q", r.ResourceVersion)
	if r.Form != "" {
		fmt.Fprintf(&b, " (%s)", r.Form)
	}
	if r.Scripted {
		b.WriteString(" scripted")
	}
	return b.String()
}

// tooLarge returns the too-large error in one of the server's three
// forms.
func tooLarge(form int, rv string) (string, error) {
	msg := fmt.Sprintf("Too large resource version: %s, current: 1", rv)
	err := apierrors.NewTimeoutError(msg, 1)
	switch form % 3 {
	case 0:
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
		return "cause", err
	case 1:
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Message: "Too large resource version"}}
		return "cause message", err
	}
	return "message", err
}

// apiError returns the server's error for kind k, with its form.
func apiError(k FaultKind, form int, gr schema.GroupResource, continued bool, rv string) (string, error) {
	switch k {
	case FaultGone:
		if continued {
			return "continue", apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result.")
		}
		return "", apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %s (%s)", rv, rv))
	case FaultTooLarge:
		return tooLarge(form, rv)
	case FaultTooManyRequests:
		return "", apierrors.NewTooManyRequests("the server has received too many requests and has asked us to try again later", 1)
	case FaultInternal:
		return "", apierrors.NewInternalError(errors.New("etcdserver: no leader"))
	case FaultForbidden:
		return "", apierrors.NewForbidden(gr, "", errors.New("injected fault: RBAC denies the request"))
	}
	return "", nil
}

// wrongObject is an object of no type a source serves.
type wrongObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (o *wrongObject) DeepCopyObject() runtime.Object {
	c := *o
	o.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// contentError returns the adapters' error for bad content of kind k in
// phase p.
func contentError[T cache.Object](k FaultKind, p source.Phase) error {
	var err error
	switch k {
	case FaultWrongType:
		_, err = source.As[T](&wrongObject{ObjectMeta: metav1.ObjectMeta{Name: "wrong"}})
	case FaultNilObject:
		_, err = source.As[T](nil)
	case FaultMalformed:
		err = fmt.Errorf("%w: unknown watch event type %q", source.ErrMalformed, "BOGUS")
		if p == source.PhaseList {
			err = fmt.Errorf("%w: decode list: unexpected end of JSON input", source.ErrMalformed)
		}
	}
	if p == source.PhaseWatch {
		err = fmt.Errorf("%s event: %w", watch.Added, err)
	}
	return &source.Error{Phase: p, Err: err}
}

// isExpired and isTooLarge tell the errors after which a client must
// relist, whether injected or the source's own.
func isExpired(err error) bool { return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) }

func isTooLarge(err error) bool {
	if apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return true
	}
	var status apierrors.APIStatus
	if !apierrors.IsTimeout(err) || !errors.As(err, &status) {
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
