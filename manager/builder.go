package manager

import (
	"errors"
	"fmt"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/reconcile"
	"github.com/typedinformer/informer/typed"
)

// Builder makes a reconcile controller of T on a manager in a few lines,
// as controller-runtime's builder does: For takes the informer of T from
// the manager's Factory, Owns and Watch add the informers whose changes
// reconcile T's keys, and Complete adds the controller with its
// reconciler. The informers of one builder share its scope.
//
// A step that fails (no Factory, a type the factory cannot watch) does not
// stop the chain: Complete returns every such error, adds nothing, and the
// manager's Run fails with them at once if Complete's error went
// unchecked.
type Builder[T cache.Object] struct {
	m       *Manager
	name    string
	scope   factory.Scope
	inf     *typed.Informer[T]
	opts    reconcile.Options[T]
	watches []reconcile.Watch
	errs    []error
	done    bool
}

// For begins a controller named name (its Status, errors, metrics and
// workqueue say it) over the informer of T in scope s of m's Factory.
func For[T cache.Object](m *Manager, name string, s factory.Scope) *Builder[T] {
	b := &Builder[T]{m: m, name: name, scope: s}
	if m == nil {
		b.fail(ErrNil)
		return b
	}
	if name == "" {
		b.fail(fmt.Errorf("%w: empty controller name", ErrNil))
	}
	inf, err := InformerFor[T](m, s)
	if err != nil {
		b.fail(err)
	}
	b.inf = inf
	m.mu.Lock()
	m.builders = append(m.builders, b)
	m.mu.Unlock()
	return b
}

// Informer returns the controller's informer of T, for its reconciler to
// read; nil if For failed (Complete says why).
func (b *Builder[T]) Informer() *typed.Informer[T] { return b.inf }

// WithOptions sets the controller's options: workers, retries,
// predicates, triggers and the rest of reconcile.Options. Its Name is the
// builder's, and its Watches come after those of Owns and Watch.
func (b *Builder[T]) WithOptions(opts reconcile.Options[T]) *Builder[T] {
	b.opts = opts
	return b
}

// Watch adds a watch of another informer (reconcile.Mapped,
// reconcile.Labeled, reconcile.Owned with options of its own).
func (b *Builder[T]) Watch(w reconcile.Watch) *Builder[T] {
	if w == nil {
		b.fail(fmt.Errorf("%w: watch", ErrNil))
		return b
	}
	b.watches = append(b.watches, w)
	return b
}

// Owns returns the informer of C in b's scope and has a change of one of
// its objects reconcile the key of its controller owner of T's kind
// (reconcile.Owned, with the owner index it adds). It returns nil if the
// informer or T's kind cannot be had; Complete says why.
func Owns[C, T cache.Object](b *Builder[T], opts reconcile.WatchOptions[C]) *typed.Informer[C] {
	if b.m == nil {
		return nil
	}
	owner, err := factory.KindOf[T](b.m.opts.Factory)
	if err != nil {
		b.fail(fmt.Errorf("owner kind: %w", err))
		return nil
	}
	inf, err := InformerFor[C](b.m, b.scope)
	if err != nil {
		b.fail(err)
		return nil
	}
	b.watches = append(b.watches, reconcile.Owned(inf, owner.GroupKind(), opts))
	return inf
}

// Complete adds the controller, reconciling with r, to the manager. It
// returns the errors of the builder's steps, joined, and adds nothing
// then; ErrDuplicate for a second controller of the same name; ErrStarted
// once the manager runs.
func (b *Builder[T]) Complete(r reconcile.Reconciler) error {
	if b.m == nil {
		return b.wrap(ErrNil)
	}
	b.m.mu.Lock()
	b.done = true
	b.m.mu.Unlock()
	if r == nil {
		b.fail(fmt.Errorf("%w: reconciler", ErrNil))
	}
	if err := b.err(); err != nil {
		return err
	}
	opts := b.opts
	opts.Name = b.name
	opts.Watches = append(append([]reconcile.Watch(nil), b.watches...), opts.Watches...)
	ctrl, err := reconcile.New(b.inf, r, opts)
	if err != nil {
		return b.wrap(err)
	}
	if err := b.m.AddController(ctrl); err != nil {
		return b.wrap(err)
	}
	return nil
}

func (b *Builder[T]) fail(err error) {
	if b.m == nil {
		b.errs = append(b.errs, b.wrap(err))
		return
	}
	b.m.mu.Lock()
	defer b.m.mu.Unlock()
	b.errs = append(b.errs, b.wrap(err))
}

func (b *Builder[T]) wrap(err error) error {
	return fmt.Errorf("manager: controller %q: %w", b.name, err)
}

func (b *Builder[T]) err() error {
	if b.m == nil {
		return errors.Join(b.errs...)
	}
	b.m.mu.Lock()
	defer b.m.mu.Unlock()
	return errors.Join(b.errs...)
}

// incomplete is a builder the manager's Run checks: one that failed, or
// whose Complete was never called.
type incomplete interface{ check() error }

func (b *Builder[T]) check() error {
	b.m.mu.Lock()
	done := b.done
	b.m.mu.Unlock()
	if !done {
		return fmt.Errorf("manager: controller %q: For without Complete", b.name)
	}
	return b.err()
}
