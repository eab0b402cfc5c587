package typed

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
)

// RefusePolicy says what an informer does with an object its cache cannot
// take: one whose bytes do not decode into T (the source names it: a
// *source.UndecodableError), one that Options.Transform fails or panics
// on, or one that an index function fails on.
type RefusePolicy uint8

const (
	// Quarantine, the default, leaves the refused object out and goes on:
	// the rest of the cache syncs and stays current. The object is
	// reported once per resourceVersion (a *RefusedError wrapping
	// ErrQuarantined, to Options.ErrorHandler and the error metric) and listed in
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
	// informer reports the error (a *RefusedError), keeps its resourceVersion before the
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

// Errors of refused objects.
var (
	// ErrRefused is wrapped by every *RefusedError.
	ErrRefused = errors.New("typed: object refused")
	// ErrQuarantined is wrapped by the *RefusedError reported when an
	// object enters quarantine (see Quarantine).
	ErrQuarantined = errors.New("typed: object quarantined")
)

// RefusedError is an object the informer's cache could not take: its
// bytes did not decode into T (a *source.UndecodableError, from a source
// that can still name the object), or Options.Transform or an index
// function failed on it. Under Quarantine
// it is reported once per version, when the object enters quarantine
// (Quarantined is true); under StopAndRelist it is the error the informer
// relists on, reported and held in Status().LastError. errors.As finds it
// with the object's key.
type RefusedError struct {
	// Key is the object's key; empty for an object without a name.
	Key cache.Key
	// ResourceVersion is the refused version of the object.
	ResourceVersion string
	// Err is why it was refused: the source's *source.UndecodableError,
	// or the transform's or index function's error.
	Err error
	// Quarantined is true if the object was left out of the cache while
	// the rest of it goes on (Quarantine); false if the informer stopped
	// before it and relists (StopAndRelist).
	Quarantined bool
}

// Error says what was refused and why, as "refused ns/name at
// resourceVersion 5: cause" (or "quarantined ..."): the informer that
// reports it names itself before.
func (e *RefusedError) Error() string {
	what := "refused"
	if e.Quarantined {
		what = "quarantined"
	}
	obj := "an object without a name"
	if e.Key.Name != "" {
		obj = e.Key.String()
	}
	if e.ResourceVersion == "" {
		return fmt.Sprintf("%s %s: %v", what, obj, e.Err)
	}
	return fmt.Sprintf("%s %s at resourceVersion %s: %v", what, obj, e.ResourceVersion, e.Err)
}

// Unwrap returns ErrRefused, ErrQuarantined if the object was quarantined,
// and the cause.
func (e *RefusedError) Unwrap() []error {
	if e.Quarantined {
		return []error{ErrRefused, ErrQuarantined, e.Err}
	}
	return []error{ErrRefused, e.Err}
}

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

// quarantine is what readers see of an informer's quarantined objects: the
// writer, which alone decides what is quarantined (in the order of the
// cache's changes), publishes a sorted copy after each batch that changed
// it.
type quarantine struct {
	published atomic.Pointer[[]Quarantined] // nil: none
	refused   atomic.Int64                  // object versions quarantined
}

// list returns the quarantined objects, sorted by key.
func (q *quarantine) list() []Quarantined {
	if p := q.published.Load(); p != nil {
		return slices.Clone(*p)
	}
	return nil
}

// refuse handles a Refused delta outside a list: the cache keeps what it
// holds under the key, the object enters (or stays in) quarantine, and the
// cache has seen its resourceVersion.
func (a *applier[T]) refuse(d *fifo.Delta[T]) {
	a.flush() // the changes before it decide whether the cache holds the key
	_, stale := a.inf.store.GetByKey(d.Key)
	a.quarantine(d.Key, d.ResourceVersion, d.Err, stale)
	a.seen = d.ResourceVersion
}

// refuseNameless reports an object of a list refused without a name (or
// a nil one): no key can hold it in quarantine and no later event can
// name it, so it is counted and reported, and the list goes on without it.
func (a *applier[T]) refuseNameless(d *fifo.Delta[T]) {
	a.inf.poison.refused.Add(1)
	var r *RefusedError
	if errors.As(d.Err, &r) {
		a.inf.reportAsync(r) // Prepare's own, which says it all
		return
	}
	a.inf.reportAsync(&RefusedError{Key: d.Key, ResourceVersion: d.ResourceVersion, Err: d.Err})
}

// quarantine puts k in quarantine at rv for reason and reports it, once
// per version.
func (a *applier[T]) quarantine(k cache.Key, rv string, reason error, stale bool) {
	old, had := a.held[k]
	if a.held == nil {
		a.held = map[cache.Key]Quarantined{}
	}
	e := Quarantined{Key: k, ResourceVersion: rv, Reason: reason, Since: time.Now(), Stale: stale}
	if had {
		e.Since = old.Since
	}
	a.held[k] = e
	a.heldChanged = true
	if !had || old.ResourceVersion != rv {
		a.inf.poison.refused.Add(1)
		if !errors.Is(reason, ErrOverBudget) { // reported once, as an *OverBudgetError
			a.inf.reportAsync(&RefusedError{Key: k, ResourceVersion: rv, Err: reason, Quarantined: true})
		}
	}
}

// release takes k out of quarantine: a version of it was taken, or it was
// deleted.
func (a *applier[T]) release(k cache.Key) {
	if _, ok := a.held[k]; ok {
		delete(a.held, k)
		a.heldChanged = true
	}
}

// publishQuarantine makes what the writer holds in quarantine what readers
// see, if it changed.
func (a *applier[T]) publishQuarantine() {
	if !a.heldChanged {
		return
	}
	a.heldChanged = false
	if len(a.held) == 0 {
		a.inf.poison.published.Store(nil)
		return
	}
	out := make([]Quarantined, 0, len(a.held))
	for _, e := range a.held {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Quarantined) int {
		return cmp.Or(cmp.Compare(a.Key.Namespace, b.Key.Namespace), cmp.Compare(a.Key.Name, b.Key.Name))
	})
	a.inf.poison.published.Store(&out)
}

// listRefuse notes a Refused delta inside the list being collected.
func (a *applier[T]) listRefuse(d *fifo.Delta[T]) {
	if a.listRefused == nil {
		a.listRefused = map[cache.Key]refusal{}
	}
	a.listRefused[d.Key] = refusal{rv: d.ResourceVersion, err: d.Err}
	a.index()
	if i, ok := a.listed[d.Key]; ok { // an earlier state in a streaming list
		a.list[i] = cache.Entry[T]{}
		delete(a.listed, d.Key)
	}
}

// refusal is a refused object of the list being collected.
type refusal struct {
	rv  string
	err error
}

// settleList runs before a list is applied: each object refused in it
// keeps the version the cache holds, if any, and quarantine becomes
// exactly the objects refused in the list (the others were taken, or are
// gone).
func (a *applier[T]) settleList() {
	if len(a.listRefused) == 0 && len(a.held) == 0 {
		return
	}
	a.index()
	for k, r := range a.listRefused {
		if _, ok := a.listed[k]; ok {
			delete(a.listRefused, k) // a later state of it in the list was taken
			continue
		}
		held, stale := a.inf.writer.Entry(k)
		if stale {
			a.listed[k] = len(a.list)
			a.list = append(a.list, held)
		}
		a.quarantine(k, r.rv, r.err, stale)
	}
	for k := range a.held {
		if _, ok := a.listRefused[k]; !ok {
			a.release(k)
		}
	}
	a.listRefused = nil
}
