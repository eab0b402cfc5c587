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
