package source

import (
	"github.com/typedinformer/informer/cache"
)

// Info is what a source tells its consumer about itself, through
// [Source.Info]. Its zero value promises nothing: an unknown resource,
// LIST for the initial state, objects that may be shared, managedFields
// as the server sent them. A source that wraps another forwards its Info
// (changing what it changes), in one line:
//
//	func (s *logged[T]) Info() source.Info { return s.inner.Info() }
type Info struct {
	// Resource is what the source lists, to name it in errors and logs,
	// and its scope, so that a lister can refuse a lookup in the wrong
	// scope. Either part may be unknown; see [ResourceOf].
	Resource Resource
	// Name, if set, is the default name of an informer of the source, for
	// a source that lists the same resource as another in another form
	// (FromMetadata: "widgets.example.com metadata"). Default: the
	// resource.
	Name string
	// WatchList is true if the source can stream lists: a watch with
	// sendInitialEvents sends the current state and then a bookmark
	// annotated metav1.InitialEventsAnnotationKey. An informer tries a
	// streaming list only then, and falls back to LIST if it fails.
	WatchList bool
	// Exclusive is true if every object List and Watch return was decoded
	// for the caller alone: nobody else holds it, so the caller may
	// rewrite it before it hands it out (an informer shares the equal
	// strings of such objects). Fakes and client-go adapters, whose
	// objects others may hold, leave it false.
	Exclusive bool
	// NoManagedFields is true if the objects come without
	// metadata.managedFields (the REST source of FromConfig drops them
	// before decoding unless RESTOptions.KeepManagedFields): a consumer
	// that needs them must not use the source.
	NoManagedFields bool
}

// name is the default name of an informer of a source with info i.
func (i Info) name() string {
	if i.Name != "" {
		return i.Name
	}
	return i.Resource.String()
}

// DefaultName is the name an informer of src takes when it is not given
// one: src's [Info.Name], else its resource ([ResourceOf]), else
// "objects".
func DefaultName[T cache.Object](src Source[T]) string {
	i := src.Info()
	i.Resource = ResourceOf(src)
	if n := i.name(); n != "" {
		return n
	}
	return "objects"
}
