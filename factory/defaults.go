package factory

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/typed"
)

// ErrBadDefaults is wrapped by the errors of Defaults for options that
// belong to a Scope, not to a type.
var ErrBadDefaults = errors.New("factory: invalid defaults")

// Defaults sets the options of every informer of T the factory makes:
// indexes, label indexes, a Transform, a memory budget, KeepManagedFields,
// page size, timeouts, Metrics, an ErrorHandler, what to do with refused
// objects, a resync period. The factory's Options fill what opts leaves
// zero (ResyncPeriod, ErrorHandler, Metrics), and a factory-wide
// Transform runs before opts.Transform. With KeepManagedFields, the
// factory's REST source keeps managedFields too.
//
//	err := factory.Defaults(f, typed.Options[*corev1.Pod]{
//		LabelIndexes: []string{"app"},
//		Transform:    dropStatus,
//		MemoryBudget: &typed.MemoryBudget{Bytes: 512 << 20},
//	})
//
// What a Scope says is not a default: Defaults fails with ErrBadDefaults
// if opts sets Name, LabelSelector, FieldSelector, TweakListOptions or
// Shard. Call it before the first InformerFor of T: it fails with
// ErrRegistered once T has defaults or an informer. Options an informer
// refuses (a negative PageSize) fail InformerFor, with the informer's
// error.
func Defaults[T cache.Object](f *Factory, opts typed.Options[T]) error {
	typ := reflect.TypeFor[T]()
	if f == nil {
		return errors.New("factory: Defaults: nil factory")
	}
	var scoped []string
	if opts.Name != "" {
		scoped = append(scoped, "Name")
	}
	if opts.LabelSelector != "" {
		scoped = append(scoped, "LabelSelector")
	}
	if opts.FieldSelector != "" {
		scoped = append(scoped, "FieldSelector")
	}
	if opts.TweakListOptions != nil {
		scoped = append(scoped, "TweakListOptions")
	}
	if opts.Shard != nil {
		scoped = append(scoped, "Shard")
	}
	if len(scoped) > 0 {
		return fmt.Errorf("%w: Defaults[%v]: %v are set per informer: give them in the Scope of InformerFor (the factory names its informers)", ErrBadDefaults, typ, scoped)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.defaults[typ]; ok {
		return fmt.Errorf("%w: Defaults[%v]: it has defaults", ErrRegistered, typ)
	}
	for k := range f.informers {
		if k.typ == typ {
			return fmt.Errorf("%w: Defaults[%v]: the factory has an informer of it, made without them", ErrRegistered, typ)
		}
	}
	f.defaults[typ] = opts
	return nil
}

// optionsFor are the options of a new informer of T: T's defaults, filled
// from the factory's Options.
func optionsFor[T cache.Object](f *Factory, defaults any) typed.Options[T] {
	opts, _ := defaults.(typed.Options[T]) // stored by T: the zero value if none
	if opts.ResyncPeriod == 0 {
		opts.ResyncPeriod = f.opts.ResyncPeriod
	}
	if opts.ErrorHandler == nil {
		opts.ErrorHandler = f.opts.ErrorHandler // the informer names itself in every error
	}
	if opts.Metrics == nil {
		opts.Metrics = f.opts.Metrics
	}
	if ft := f.opts.Transform; ft != nil {
		own := opts.Transform
		opts.Transform = func(obj T) (T, error) {
			var zero T
			out, err := ft(obj)
			if err != nil {
				return zero, fmt.Errorf("factory Transform: %w", err)
			}
			t, ok := out.(T)
			if !ok {
				return zero, fmt.Errorf("factory Transform returned %T for a %T", out, obj)
			}
			if own == nil {
				return t, nil
			}
			return own(t)
		}
	}
	return opts
}
