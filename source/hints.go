package source

import "context"

// Hints tell a source what its caller will do with the objects it returns,
// so that it can do less: a source may follow them or not, and the caller
// must not depend on it. An informer sets them on the context of every List
// and Watch it makes.
type Hints struct {
	// DropManagedFields: the caller drops metadata.managedFields. The
	// REST source of [FromConfig] then does not decode them from JSON
	// watch events (about a third of a server pod's bytes).
	DropManagedFields bool
	// Intern: the caller keeps the objects long: share equal strings
	// between them. The REST source of [FromConfig] then makes every
	// string of a decoded object that other objects are likely to hold
	// too (namespace, labels, images, owner, node, condition types...)
	// one shared copy, held weakly, leaving out those unique to an object
	// (name, uid, resourceVersion). Only strings are shared, never maps
	// or slices, so the objects behave exactly as before.
	Intern bool
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
