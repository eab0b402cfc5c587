package typed

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/typedinformer/informer/fifo"
	"github.com/typedinformer/informer/internal/objsize"
)

// MemoryBudget bounds what an informer's cache holds by its size estimate
// (Options.MemoryBudget).
//
// When the estimate crosses Bytes (or, with Refuse, an object is refused
// so that it does not), the informer reports an
// *OverBudgetError once (again only after it has gone back under 90% of
// Bytes), Status().Size.OverBudget is true, and the metrics and the
// debug page say so. With Refuse, it also stops taking objects it does
// not hold yet: each is quarantined (Status().Quarantined, with
// ErrOverBudget as its reason) until a later version of it arrives while
// the cache is under budget, or the relist it starts when it is back
// under 90%; objects it holds are still updated and deleted. A cache that refuses is incomplete, and says so:
// what a controller should do then is hold less, not wait. Narrow the
// informer (a namespace, label or field selector), decode less of each
// object (a projection, source.RESTOptions.DropAnnotations), split the
// resource across replicas (package sharding), or raise the budget and
// the process's memory limit.
type MemoryBudget struct {
	// Bytes is the budget; it must be more than 0.
	Bytes int64
	// Refuse makes the cache take no new objects past the budget.
	Refuse bool
}

// ErrOverBudget is the reason of an object quarantined because the cache
// is past its MemoryBudget with Refuse.
var ErrOverBudget = errors.New("typed: cache over its memory budget")

// OverBudgetError is reported when an informer's estimated size crosses
// its MemoryBudget.
type OverBudgetError struct {
	Informer string
	Size     Size
}

// Error says how much the cache holds and how much an object; the
// informer's ErrorHandler gets it wrapped in an error naming the
// informer.
func (e *OverBudgetError) Error() string {
	return fmt.Sprintf("cache of %d objects is about %d bytes (%d an object), past its memory budget of %d",
		e.Size.Objects, e.Size.EstimatedBytes, e.Size.BytesPerObject, e.Size.Budget)
}

// Unwrap returns ErrOverBudget.
func (e *OverBudgetError) Unwrap() error { return ErrOverBudget }

// Size is an estimate of what an informer's cache holds. The bytes of an
// object are what it references, walked field by field on a sample of
// the objects the cache takes (the first 16, then one in 256): a string or map that
// several objects share is counted in each, so the estimate is an upper
// bound under interning, and within a tenth or so of the heap for
// objects that share nothing.
type Size struct {
	// Objects is how many objects the cache holds.
	Objects int
	// BytesPerObject is the mean of the sampled objects' sizes, recent
	// ones weighing more; 0 before the first sample.
	BytesPerObject int64
	// EstimatedBytes is Objects times BytesPerObject.
	EstimatedBytes int64
	// Budget is Options.MemoryBudget's Bytes; 0 without one.
	Budget int64
	// OverBudget is true from when EstimatedBytes crossed Budget until it
	// went back under 90% of it.
	OverBudget bool
}

// The writer sizes the first sampleFirst objects it caches, then one in
// sampleEvery: sizing a pod takes a few microseconds, a few percent of
// the cost of a watch event once spread over sampleEvery of them.
const (
	sampleFirst = 16
	sampleEvery = 256
)

// sizeState is the informer's size estimate: sampled by the writer,
// read by anyone.
type sizeState struct {
	seen     uint64       // objects offered to sample; the writer's
	perObj   atomic.Int64 // the moving mean, in bytes
	over     atomic.Bool
	refusing atomic.Bool // over, with Refuse
}

// sample sizes obj, if it is one of those sampled, into the moving mean
// (weight 1/16 for the newest sample). It runs on the writer's
// goroutine.
func (s *sizeState) sample(obj any) {
	s.seen++
	if s.seen > sampleFirst && s.seen%sampleEvery != 0 {
		return
	}
	n := objsize.Of(obj)
	old := s.perObj.Load()
	if old == 0 {
		s.perObj.Store(n)
		return
	}
	s.perObj.Store(old + (n-old)/16)
}

// Size returns the informer's size estimate.
func (inf *Informer[T]) Size() Size {
	n := inf.store.Len()
	per := inf.size.perObj.Load()
	s := Size{Objects: n, BytesPerObject: per, EstimatedBytes: int64(n) * per, OverBudget: inf.size.over.Load()}
	if b := inf.opts.MemoryBudget; b != nil {
		s.Budget = b.Bytes
	}
	return s
}

// checkBudget runs after each batch the writer applied: it reports a
// crossing of the budget, and notes the way back under 90% of it.
func (a *applier[T]) checkBudget() {
	b := a.inf.opts.MemoryBudget
	if b == nil {
		return
	}
	s := a.inf.Size()
	if a.listing {
		// The list being collected counts too: the cache holds it soon.
		s.Objects += a.listNew
		s.EstimatedBytes = int64(s.Objects) * s.BytesPerObject
	}
	st := &a.inf.size
	hit := a.budgetHit // an object was refused to stay under the budget
	a.budgetHit = false
	switch {
	case !s.OverBudget && (s.EstimatedBytes > b.Bytes || hit):
		st.over.Store(true)
		st.refusing.Store(b.Refuse)
		s.OverBudget = true
		a.inf.reportAsync(&OverBudgetError{Informer: a.inf.name, Size: s})
	case s.OverBudget && !hit && !a.listing && s.EstimatedBytes < b.Bytes/10*9:
		st.over.Store(false)
		st.refusing.Store(false)
		for _, q := range a.held {
			if errors.Is(q.Reason, ErrOverBudget) {
				// Room again: a relist brings in what was held back,
				// quiet objects too.
				a.inf.refl.Relist()
				break
			}
		}
	}
}

// refusesNew reports whether the cache takes no new objects now: over its
// budget with Refuse, or about to be with extra more objects (a list
// being collected).
func (a *applier[T]) refusesNew(extra int) bool {
	b := a.inf.opts.MemoryBudget
	if b == nil || !b.Refuse {
		return false
	}
	if a.inf.size.refusing.Load() {
		return true
	}
	per := a.inf.size.perObj.Load()
	if per > 0 && int64(a.inf.store.Len()+extra)*per > b.Bytes {
		a.budgetHit = true
		return true
	}
	return false
}

// holdsBack quarantines the watch change d, of an object the cache does
// not hold, instead of taking it: the cache is past its budget with
// Refuse. It reports false for an object the cache holds, which is
// taken.
func (a *applier[T]) holdsBack(d *fifo.Delta[T]) bool {
	a.flush() // the changes before it decide whether the cache holds the key
	if _, ok := a.inf.writer.Entry(d.Key); ok {
		return false
	}
	a.quarantine(d.Key, d.Object.GetResourceVersion(), ErrOverBudget, false)
	a.seen = d.Object.GetResourceVersion()
	return true
}
