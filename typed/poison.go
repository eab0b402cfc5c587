package typed

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
	"github.com/typedinformer/informer/internal/reflector"
)

// RefusePolicy says what an informer does with an object its cache cannot
// take: one that Options.Transform fails or panics on, or that an index
// function fails on.
type RefusePolicy uint8

const (
	// Quarantine, the default, leaves the refused object out and goes on:
	// the rest of the cache syncs and stays current. The object is
	// reported once per resourceVersion (an error wrapping ErrQuarantined,
	// to Options.ErrorHandler and the error metric) and listed in
	// Status().Quarantined until a later version of it is taken (it then
	// enters the cache as any change does: an Add if the cache did not
	// hold it, an Update from the version it held), it is deleted, or a
	// relist no longer has it.
	//
	// If the cache already held an older version of the object, that
	// version stays, and the entry says Stale: the cache never drops an
	// object that still exists on the server, which a controller would
	// take for a deletion. A deletion of a quarantined object is
	// delivered as any deletion (a Delete if the cache held it).
	Quarantine RefusePolicy = iota
	// StopAndRelist refuses the object and everything after it: the
	// informer reports the error, keeps its resourceVersion before the
	// object and relists after a backoff until the object is fixed or
	// deleted. The cache does not move past the object, nor sync if it
	// is in the initial list.
	StopAndRelist
)

// String returns the policy's name.
func (p RefusePolicy) String() string {
	switch p {
	case Quarantine:
		return "Quarantine"
	case StopAndRelist:
		return "StopAndRelist"
	}
	return fmt.Sprintf("RefusePolicy(%d)", uint8(p))
}

// ErrQuarantined is wrapped by the error an informer reports when an
// object enters quarantine (see Quarantine); errors.As finds the
// *QuarantineError with its key.
var ErrQuarantined = errors.New("typed: object quarantined")

// QuarantineError is the error reported for an object left out of the
// cache under the Quarantine policy.
type QuarantineError struct {
	// Key is the object's key.
	Key cache.Key
	// ResourceVersion is the refused version of the object.
	ResourceVersion string
	// Err is why it was refused: the transform's or index function's
	// error.
	Err error
}

func (e *QuarantineError) Error() string {
	return fmt.Sprintf("%v: %v at resourceVersion %s: %v", ErrQuarantined, e.Key, e.ResourceVersion, e.Err)
}

// Unwrap returns ErrQuarantined and the cause.
func (e *QuarantineError) Unwrap() []error { return []error{ErrQuarantined, e.Err} }

// Quarantined is an object left out of the cache (see Quarantine).
type Quarantined struct {
	// Key is the object's key.
	Key cache.Key
	// ResourceVersion is the last refused version of the object.
	ResourceVersion string
	// Reason is why it was refused.
	Reason error
	// Since is when the object entered quarantine.
	Since time.Time
	// Stale is true if the cache holds an older version of the object,
	// false if it holds none.
	Stale bool
}

// refusal is a refused object on its way from prepare to the writer.
type refusal struct {
	rv  string
	err error
}

// quarantine is an informer's quarantined objects. prepare (the
// reflector's goroutine) files each refusal in pending; the writer takes
// it when the object's mark comes out of the queue, and alone changes
// held, so that quarantine follows the cache's order of changes.
type quarantine struct {
	mu      sync.Mutex
	pending map[cache.Key]refusal
	held    map[cache.Key]Quarantined
	refused atomic.Int64 // refusals reported
}

// refuse files a refusal of obj by prepare and returns the error that
// makes the reflector leave it out.
func (q *quarantine) refuse(k cache.Key, rv string, err error) error {
	q.mu.Lock()
	if q.pending == nil {
		q.pending = map[cache.Key]refusal{}
	}
	q.pending[k] = refusal{rv: rv, err: err}
	q.mu.Unlock()
	return fmt.Errorf("%w: %w", reflector.ErrLeftOut, err)
}

// take returns the reason filed for k at rv.
func (q *quarantine) takeLocked(k cache.Key, rv string) error {
	r, ok := q.pending[k]
	if !ok {
		return errors.New("refused") // not reached: every mark has its refusal
	}
	if r.rv == rv {
		delete(q.pending, k)
	}
	return r.err
}

// list returns the quarantined objects, sorted by key.
func (q *quarantine) list() []Quarantined {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.held) == 0 {
		return nil
	}
	out := make([]Quarantined, 0, len(q.held))
	for _, e := range q.held {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Quarantined) int {
		return cmp.Or(cmp.Compare(a.Key.Namespace, b.Key.Namespace), cmp.Compare(a.Key.Name, b.Key.Name))
	})
	return out
}

func (q *quarantine) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.held)
}

// leftOut handles the mark of an object prepare left out, outside a list:
// the cache keeps what it holds under the key, the object enters (or stays
// in) quarantine, and the cache has seen its resourceVersion.
func (a *applier[T]) leftOut(d *fifo.Delta[T]) {
	a.flush() // the changes before the mark decide whether the cache holds the key
	_, stale := a.inf.store.GetByKey(d.Key)
	a.quarantine(d.Key, d.ResourceVersion, stale)
	a.seen = d.ResourceVersion
	a.nPoison = a.inf.poison.len()
}

// quarantine puts k in quarantine at rv and reports it, once per version.
func (a *applier[T]) quarantine(k cache.Key, rv string, stale bool) {
	q := &a.inf.poison
	q.mu.Lock()
	reason := q.takeLocked(k, rv)
	old, had := q.held[k]
	if q.held == nil {
		q.held = map[cache.Key]Quarantined{}
	}
	e := Quarantined{Key: k, ResourceVersion: rv, Reason: reason, Since: time.Now(), Stale: stale}
	if had {
		e.Since = old.Since
	}
	q.held[k] = e
	q.mu.Unlock()
	if !had || old.ResourceVersion != rv {
		q.refused.Add(1)
		a.inf.reportAsync(&QuarantineError{Key: k, ResourceVersion: rv, Err: reason})
	}
}

// release takes k out of quarantine: a version of it was taken, or it was
// deleted.
func (a *applier[T]) release(k cache.Key) {
	q := &a.inf.poison
	q.mu.Lock()
	delete(q.held, k)
	a.nPoison = len(q.held)
	q.mu.Unlock()
}

// listLeftOut notes the mark of an object left out of the list being
// collected.
func (a *applier[T]) listLeftOut(d *fifo.Delta[T]) {
	if a.listRefused == nil {
		a.listRefused = map[cache.Key]string{}
	}
	a.listRefused[d.Key] = d.ResourceVersion
	a.index()
	if i, ok := a.listed[d.Key]; ok { // an earlier state in a streaming list
		a.list[i] = cache.Entry[T]{}
		delete(a.listed, d.Key)
	}
}

// settleList runs before a list is applied: each object left out of it
// keeps the version the cache holds, if any, and quarantine becomes
// exactly the objects left out of the list (the others were taken, or are
// gone).
func (a *applier[T]) settleList() {
	if len(a.listRefused) == 0 && a.nPoison == 0 {
		return
	}
	q := &a.inf.poison
	a.index()
	for k, rv := range a.listRefused {
		if _, ok := a.listed[k]; ok {
			delete(a.listRefused, k) // a later state of it in the list was taken
			continue
		}
		held, stale := a.inf.writer.Entry(k)
		if stale {
			a.listed[k] = len(a.list)
			a.list = append(a.list, held)
		}
		a.quarantine(k, rv, stale)
	}
	q.mu.Lock()
	for k := range q.held {
		if _, ok := a.listRefused[k]; !ok {
			delete(q.held, k)
		}
	}
	a.nPoison = len(q.held)
	q.mu.Unlock()
	a.listRefused = nil
}
