package sharding

import (
	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
)

// Deleted describes a deletion from a replica's view: a real deletion,
// as package handler describes it, or an object that left the replica's
// range at a reshard (MovedOut), which another replica now handles.
type Deleted[T cache.Object] struct {
	handler.Deleted[T]
	// MovedOut is set when the object was not deleted but moved to
	// another replica's range: drop what this replica keeps for it, but do
	// not act on it as gone.
	MovedOut bool
}

// Handler receives the changes to the objects of a replica's range. An
// Informer calls its handlers one call at a time, in order, under its
// lock: a handler may call the informer's Status and Current but should
// hand work to a queue rather than block. Objects are shared: never mutate
// them.
type Handler[T cache.Object] interface {
	// OnAdd is called for an object new to the replica: created, or
	// moved into its range at a reshard (then isInInitialList is false).
	// isInInitialList is true for the objects of the first range's
	// initial list.
	OnAdd(obj T, isInInitialList bool)
	// OnUpdate is called when an object changed, and for an object a
	// reshard's relist brought again (both arguments then may be equal).
	OnUpdate(oldObj, newObj T)
	// OnDelete is called when an object is gone from the replica: deleted,
	// or moved out of its range (Deleted.MovedOut).
	OnDelete(d Deleted[T])
}

// Funcs is a Handler built from functions; nil functions are skipped.
type Funcs[T cache.Object] struct {
	// AddFunc is called by OnAdd.
	AddFunc func(obj T, isInInitialList bool)
	// UpdateFunc is called by OnUpdate.
	UpdateFunc func(oldObj, newObj T)
	// DeleteFunc is called by OnDelete.
	DeleteFunc func(d Deleted[T])
}

// OnAdd calls AddFunc if set.
func (f Funcs[T]) OnAdd(obj T, isInInitialList bool) {
	if f.AddFunc != nil {
		f.AddFunc(obj, isInInitialList)
	}
}

// OnUpdate calls UpdateFunc if set.
func (f Funcs[T]) OnUpdate(oldObj, newObj T) {
	if f.UpdateFunc != nil {
		f.UpdateFunc(oldObj, newObj)
	}
}

// OnDelete calls DeleteFunc if set.
func (f Funcs[T]) OnDelete(d Deleted[T]) {
	if f.DeleteFunc != nil {
		f.DeleteFunc(d)
	}
}

// relay is the handler of a range's inner informer: it turns what the
// inner informer says into calls of the sharded informer's handlers, from
// what they were last told (known), so that a reshard's relist is an
// update for an object they have and an add for one they do not.
type relay[T cache.Object] struct {
	s *Informer[T]
}

func (r relay[T]) OnAdd(obj T, isInInitialList bool) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.counted()
	k := cache.KeyOf(obj)
	delete(s.pending, k)
	old, had := s.known[k]
	if had && old.GetUID() != obj.GetUID() {
		s.deliverDelete(Deleted[T]{Deleted: handler.Deleted[T]{Object: old, Key: k, FinalStateUnknown: true}})
		had = false
	}
	s.known[k] = obj
	if had {
		s.deliverUpdate(old, obj)
		return
	}
	if !isInInitialList {
		s.events.Add(1)
	}
	for _, h := range s.handlers {
		s.call(func() { h.OnAdd(obj, isInInitialList && s.first) })
	}
}

func (r relay[T]) OnUpdate(oldObj, newObj T) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	k := cache.KeyOf(newObj)
	if old, ok := s.known[k]; ok {
		oldObj = old
	}
	s.known[k] = newObj
	if oldObj != newObj {
		s.events.Add(1)
	}
	s.deliverUpdate(oldObj, newObj)
}

func (r relay[T]) OnDelete(d handler.Deleted[T]) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.counted()
	if _, ok := s.known[d.Key]; !ok {
		return
	}
	delete(s.known, d.Key)
	delete(s.pending, d.Key)
	s.events.Add(1)
	s.deliverDelete(Deleted[T]{Deleted: d})
}

// counted publishes the number of objects held; s.mu is held.
func (s *Informer[T]) counted() { s.objects.Store(int64(len(s.known))) }

// deliverUpdate calls every handler's OnUpdate; s.mu is held.
func (s *Informer[T]) deliverUpdate(oldObj, newObj T) {
	for _, h := range s.handlers {
		s.call(func() { h.OnUpdate(oldObj, newObj) })
	}
}

// deliverDelete calls every handler's OnDelete; s.mu is held.
func (s *Informer[T]) deliverDelete(d Deleted[T]) {
	for _, h := range s.handlers {
		s.call(func() { h.OnDelete(d) })
	}
}
