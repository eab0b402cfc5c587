package typed

import (
	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/intern"
	"github.com/typedinformer/informer/source"
)

// newSharer returns what shares the equal strings and maps of the
// objects an informer caches, or nil if it does not: with Options.NoIntern, for a
// source whose objects may be held by others (only one whose Info says
// Exclusive hands over objects the informer may rewrite), and for a type
// without strings to share.
func newSharer[T cache.Object](info source.Info, opts Options[T]) *intern.Interner[T] {
	if opts.NoIntern || !info.Exclusive {
		return nil
	}
	in, err := intern.New[T](intern.Options{Maps: true})
	if err != nil || in.Empty() {
		return nil // not a pointer to a struct, or nothing to share
	}
	return in
}

// share makes the strings of obj, about to be cached, shared copies. It
// runs on the writer's goroutine, before obj is written and handed to
// anyone: beside the decoding of the next objects, not after it. A
// failure leaves obj as it was or with some strings shared, equal either
// way, and is reported.
func (inf *Informer[T]) share(obj T) {
	if inf.strs != nil {
		inf.shareStrings(obj)
	}
	inf.size.sample(obj) // the shared strings are what it holds
}

// shareStrings shares the strings of obj, which no other goroutine holds
// yet; safe for concurrent use on different objects.
func (inf *Informer[T]) shareStrings(obj T) {
	if err := inf.strs.Strings(obj); err != nil {
		inf.reportAsync(err)
	}
}
