package source

import (
	"context"

	"github.com/typedinformer/informer/cache"
)

// Hints tell a source what its caller will do with the objects it returns,
// so that it can do less: a source may follow them or not, and the caller
// must not depend on it. An informer sets them on the context of every List
// and Watch it makes.
type Hints struct {
	// DropManagedFields: the caller drops metadata.managedFields. The
	// REST source of [FromConfig] then does not decode them from JSON
	// watch events (about a third of a server pod's bytes).
	DropManagedFields bool
}

type hintsKey struct{}

// WithHints returns ctx carrying h.
func WithHints(ctx context.Context, h Hints) context.Context {
	return context.WithValue(ctx, hintsKey{}, h)
}

// HintsFrom returns the hints ctx carries; none if it carries none.
func HintsFrom(ctx context.Context) Hints {
	h, _ := ctx.Value(hintsKey{}).(Hints)
	return h
}

// Exclusive is implemented by a source whose List and Watch return objects
// decoded for the caller alone: nobody else holds them, so the caller may
// rewrite them before it hands them out. An informer shares the equal
// strings of such objects between them (see typed.Options.NoIntern); the
// objects of other sources, such as fakes and lister-watchers that may hand
// out shared objects, are left as they come.
type Exclusive interface {
	// ExclusiveObjects reports whether every object returned is the
	// caller's alone.
	ExclusiveObjects() bool
}

// IsExclusive reports whether src says its objects are the caller's alone.
func IsExclusive[T cache.Object](src Source[T]) bool {
	e, ok := src.(Exclusive)
	return ok && e.ExclusiveObjects()
}
