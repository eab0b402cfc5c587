package typed

import (
	"fmt"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
	"github.com/typedinformer/informer/internal/objects"
)

// prepare turns an object from the source into the entry the reflector
// queues: managedFields dropped (on a copy), Options.Transform applied, and
// the key and index values computed by the cache's writer. It runs on the
// reflector's goroutine with no lock held. An object it cannot take is
// refused: under Quarantine with the cause alone (the reflector queues it
// as a Refused delta for the writer to quarantine), under StopAndRelist as
// a *RefusedError (the reflector stops before it and relists). A deletion
// needs only its key: one whose transform fails is a deletion by key,
// whose final state is the cached object.
func (inf *Informer[T]) prepare(t fifo.DeltaType, obj T) (cache.Entry[T], error) {
	var zero T
	if obj == zero {
		return cache.Entry[T]{}, &RefusedError{Err: cache.ErrNilObject}
	}
	raw := obj
	if !inf.opts.KeepManagedFields {
		if trimmed, ok := objects.WithoutManagedFields(obj); ok {
			obj = trimmed
		}
	}
	if inf.opts.Transform != nil {
		var err error
		if obj, err = inf.transform(obj); err != nil {
			return inf.refuse(t, raw, err)
		}
	}
	if t == fifo.Deleted {
		k := cache.KeyOf(obj)
		if k.Name == "" {
			return cache.Entry[T]{}, &RefusedError{ResourceVersion: obj.GetResourceVersion(), Err: cache.ErrNoName}
		}
		return cache.Entry[T]{Key: k, Object: obj}, nil
	}
	e, err := inf.writer.Prepare(obj)
	if err != nil {
		return inf.refuse(t, raw, err)
	}
	return e, nil
}

// refuse handles an object prepare cannot take, as Options.OnRefused says.
func (inf *Informer[T]) refuse(t fifo.DeltaType, raw T, err error) (cache.Entry[T], error) {
	k := cache.KeyOf(raw)
	if inf.opts.OnRefused != Quarantine || k.Name == "" {
		return cache.Entry[T]{}, &RefusedError{Key: k, ResourceVersion: raw.GetResourceVersion(), Err: err}
	}
	if t == fifo.Deleted {
		return cache.Entry[T]{Key: k}, nil
	}
	return cache.Entry[T]{}, err
}

// transform runs Options.Transform; a panic or a nil result is an error.
func (inf *Informer[T]) transform(obj T) (out T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("transform: %w: %v", ErrTransformPanic, r)
		}
	}()
	out, err = inf.opts.Transform(obj)
	var zero T
	switch {
	case err != nil:
		return zero, fmt.Errorf("transform: %w", err)
	case out == zero:
		return zero, fmt.Errorf("transform: %w", cache.ErrNilObject)
	}
	return out, nil
}
