package source

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/json"

	"github.com/typedinformer/informer/cache"
)

// ErrUndecodable is wrapped by every [UndecodableError].
var ErrUndecodable = errors.New("source: object does not decode")

// UndecodableError is an object whose bytes a source read whole but could
// not decode into T: a list item or a watch event's object with a field of
// the wrong JSON type for T's Go struct (a string where T has an array), a
// value a field's own decoder refuses (a bad quantity or time), or
// protobuf bytes T's message does not parse. What could be read of its
// metadata alone names it.
//
// It is about that one object, not about the list or the stream: a list
// carries the ones that have a name in [List.Undecodable], beside the
// items that decoded, and [Watcher.Next] returns one (in an *Error with
// PhaseWatch) for the event and can go on with the next event. An
// informer quarantines a named one under its key, as an object it
// refused (its error is the cause of the *typed.RefusedError it
// reports), and deletes by key on a DELETED event. One without a name
// cannot be quarantined: a source returns it as the error of the whole
// list, and an informer restarts the watch, then relists, as for a frame
// that makes no sense.
type UndecodableError struct {
	// Namespace and Name are the object's metadata.namespace and
	// metadata.name; Name is empty if even the metadata could not be
	// read.
	Namespace, Name string
	// ResourceVersion is the object's metadata.resourceVersion, if it
	// could be read.
	ResourceVersion string
	// Event is the type of the watch event that carried the object;
	// empty for a list item.
	Event watch.EventType
	// Index is a list item's position in its page (in the body the
	// server sent); 0 for a watch event.
	Index int
	// Err is the decoder's error.
	Err error
}

// Error says what the object was and its name, as "list item 3 shop/web-1
// at resourceVersion 17 does not decode: cause" or "MODIFIED watch event
// object shop/web-1 at resourceVersion 17 does not decode: cause".
func (e *UndecodableError) Error() string {
	what := fmt.Sprintf("list item %d", e.Index)
	if e.Event != "" {
		what = fmt.Sprintf("%s watch event object", e.Event)
	}
	switch {
	case e.Name == "":
		what += " (no readable name)"
	case e.ResourceVersion == "":
		what += " " + e.Key().String()
	default:
		what += " " + e.Key().String() + " at resourceVersion " + e.ResourceVersion
	}
	return fmt.Sprintf("%s does not decode: %v", what, e.Err)
}

// Unwrap returns ErrUndecodable and the decoder's error.
func (e *UndecodableError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrUndecodable}
	}
	return []error{ErrUndecodable, e.Err}
}

// Key is the object's key; its Name is empty if the object has no
// readable name.
func (e *UndecodableError) Key() cache.Key {
	return cache.Key{Namespace: e.Namespace, Name: e.Name}
}

// objectNames is all of an object's JSON that names it.
type objectNames struct {
	Metadata struct {
		Namespace       string `json:"namespace"`
		Name            string `json:"name"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}

// undecodableJSON is the error for obj, a JSON object err says does not
// decode into T, named by what its metadata says if that decodes.
func undecodableJSON(obj []byte, err error) *UndecodableError {
	u := &UndecodableError{Err: err}
	var n objectNames
	if json.UnmarshalCaseSensitivePreserveInts(obj, &n) == nil {
		u.Namespace, u.Name, u.ResourceVersion = n.Metadata.Namespace, n.Metadata.Name, n.Metadata.ResourceVersion
	}
	return u
}

// ObjectMeta's fields that name an object, in its protobuf message.
const (
	protoFieldName            = 1
	protoFieldNamespace       = 3
	protoFieldResourceVersion = 6
)

// undecodableProto is the error for obj, a protobuf message of a built-in
// type (its ObjectMeta is field 1) that err says does not decode into T,
// named by the metadata's name, namespace and resourceVersion if they can
// be read.
func undecodableProto(obj []byte, err error) *UndecodableError {
	u := &UndecodableError{Err: err}
	var ns, name, rv string
	readErr := fields(obj, func(num int, meta []byte) error {
		if num != protoFieldMetadata {
			return nil
		}
		return fields(meta, func(num int, val []byte) error {
			switch num {
			case protoFieldName:
				name = string(val)
			case protoFieldNamespace:
				ns = string(val)
			case protoFieldResourceVersion:
				rv = string(val)
			}
			return nil
		})
	})
	if readErr == nil {
		u.Namespace, u.Name, u.ResourceVersion = ns, name, rv
	}
	return u
}

// undecodableEvent is the error Next returns for the object of a watch
// event of type typ that does not decode (u): in an *Error with
// PhaseWatch, or the error of an event of an unknown type if typ is none
// of the four with an object.
func (s *restSource[T]) undecodableEvent(typ watch.EventType, u *UndecodableError) error {
	switch typ {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		u.Event = typ
		return &Error{Phase: PhaseWatch, Err: u}
	}
	_, err := s.event(typ, *new(T), nil, true)
	return err
}
