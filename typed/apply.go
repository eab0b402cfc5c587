package typed

import (
	"context"
	"slices"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
)

// applier is the informer's one writer: it pops batches of deltas, applies
// them to the cache and hands each handler the resulting notifications.
// Its state belongs to the goroutine that runs it.
type applier[T cache.Object] struct {
	inf  *Informer[T]
	done <-chan struct{} // the run's end: a push waiting for room gives up
	seen string          // the resourceVersion the batch's changes bring the cache to
	last string          // the newest resourceVersion the cache reached by the last batch
	// relisting is set once the writer refused a list or an event older
	// than the cache and asked for a quorum relist: the next list is taken
	// whatever its version (stale.go).
	relisting bool
	changes   []cache.Change[T]
	notes     []notification[T]
	synced    bool // the first list is applied

	// The list being collected between ReplaceStart and ReplaceEnd.
	listing    bool
	fresh      bool              // the cache was empty when the list started
	listed     map[cache.Key]int // key -> index in list; for a fresh list, nil until needed (index)
	list       []cache.Entry[T]  // in order of first appearance; zero Key: removed
	left       int               // deltas of the batch being taken from the current one on
	listNew    int               // objects of the list the cache does not hold (MemoryBudget with Refuse)
	sharedList bool              // the list's strings are shared already (keep)

	budgetHit bool // an object was refused for the MemoryBudget in this batch (size.go)

	// Quarantine (quarantine.go), the writer's alone: the quarantined
	// objects, whether they changed since readers last saw them, and the
	// objects refused in the list being collected.
	held        map[cache.Key]Quarantined
	heldChanged bool
	listRefused map[cache.Key]refusal
	rev         uint64 // the store's revision after the last write
	moves       uint64 // Moved deltas handled
}

// run applies deltas until ctx ends or the queue is closed.
func (a *applier[T]) run(ctx context.Context) error {
	a.done = ctx.Done()
	for ctx.Err() == nil {
		ds, err := a.inf.queue.Pop(ctx)
		if err != nil {
			return nil // ctx ended or the queue was closed: the run is over
		}
		start := a.inf.batchStart()
		for i := range ds {
			a.left = len(ds) - i
			a.take(&ds[i])
		}
		a.flush()
		a.checkBudget()
		a.publishQuarantine()
		if a.seen != "" {
			a.inf.observe(a.seen, a.rev)
			a.advance(a.seen)
			a.seen = ""
		}
		a.inf.batchDone(start, ds)
	}
	return nil
}

// take handles one delta. Watch changes accumulate and are applied
// together at the next marker or at the end of the batch.
func (a *applier[T]) take(d *fifo.Delta[T]) {
	switch d.Type {
	case fifo.Added, fifo.Updated, fifo.Deleted:
		if a.listing {
			a.collect(d)
			return
		}
		if d.ResourceVersion == "" && a.staleEvent(d) {
			return
		}
		if d.Type != fifo.Deleted && a.refusesNew(0) && a.holdsBack(d) {
			return
		}
		if len(a.held) > 0 {
			a.release(d.Key)
		}
		if d.Type != fifo.Deleted {
			a.inf.share(d.Object)
		}
		a.changes = append(a.changes, cache.Change[T]{Entry: d.Entry, Delete: d.Type == fifo.Deleted})
		switch {
		case d.Progress != "":
			a.seen = d.Progress // a merged source's: objects' versions interleave
		case d.ResourceVersion != "":
			a.seen = d.ResourceVersion // a deletion by key alone
		default:
			a.seen = d.Object.GetResourceVersion()
		}
	case fifo.ReplaceStart:
		a.flush()
		a.startList()
	case fifo.Replaced:
		if !a.listing {
			a.flush()
			a.startList()
		}
		a.collect(d)
	case fifo.ReplaceEnd:
		a.flush()
		if !a.listing {
			a.startList() // an empty list without its start
		}
		quorum := a.relisting
		if a.staleList(d.ResourceVersion) {
			return
		}
		a.applyList()
		a.seen = d.ResourceVersion
		if quorum {
			a.last = "" // the quorum list is the truth, older or not (an etcd restore)
		}
	case fifo.Refused:
		switch {
		case d.Key.Name == "":
			a.refuseNameless(d)
		case a.listing:
			a.listRefuse(d)
		default:
			a.refuse(d)
		}
	case fifo.Bookmark:
		if !a.listing {
			a.seen = d.ResourceVersion
		}
	case fifo.Sync:
		a.flush()
		a.resync()
	case fifo.Moved:
		a.moveOut()
	}
}

func (a *applier[T]) startList() {
	a.listing = true
	a.list = shrink(a.list)
	a.fresh = a.inf.store.Len() == 0
	a.listed = nil
	if !a.fresh {
		a.listed = map[cache.Key]int{}
	}
	a.listRefused = nil
	a.listNew = 0
	a.sharedList = a.inf.loadShared.Swap(false)
}

// index makes the key index of the list collected so far, which a fresh
// list goes without until a deletion or a left-out object needs it.
func (a *applier[T]) index() {
	if a.listed != nil {
		return
	}
	a.listed = make(map[cache.Key]int, len(a.list))
	for i, e := range a.list {
		if e.Key != (cache.Key{}) {
			a.listed[e.Key] = i
		}
	}
}

// collect adds a listed object to the list being built, or removes one
// (a deletion inside a streaming list). An object the cache already holds
// at the same version is replaced by the cached one at once, so the copy
// the source just decoded can be freed before the list is complete: a
// relist of unchanged objects never holds two copies of them.
func (a *applier[T]) collect(d *fifo.Delta[T]) {
	k := d.Key
	if d.Type == fifo.Deleted {
		a.index()
		if i, ok := a.listed[k]; ok {
			a.list[i] = cache.Entry[T]{}
			delete(a.listed, k)
		}
		return
	}
	e := d.Entry
	if b := a.inf.opts.MemoryBudget; b != nil && b.Refuse {
		if _, held := a.inf.writer.Entry(k); !held {
			if a.refusesNew(a.listNew + 1) {
				a.listRefuse(&fifo.Delta[T]{Type: fifo.Replaced, Entry: cache.Entry[T]{Key: k}, ResourceVersion: e.Object.GetResourceVersion(), Err: ErrOverBudget})
				return
			}
			a.listNew++
		}
	}
	if len(a.list) == cap(a.list) {
		a.list = slices.Grow(a.list, a.left) // the rest of the batch may be listed too: grow once for it
	}
	if a.listed == nil {
		// A fresh list without deletions so far: nothing cached to
		// reuse, and a key listed twice is written twice, an add then
		// an update, as client-go delivers it.
		a.keep(e.Object)
		a.list = append(a.list, e)
		return
	}
	if held, ok := a.inf.writer.Entry(k); ok && sameVersion(held.Object, e.Object) {
		e = held
	} else {
		a.keep(e.Object)
	}
	if i, ok := a.listed[k]; ok {
		a.list[i] = e // the later one wins
		return
	}
	a.listed[k] = len(a.list)
	a.list = append(a.list, e)
}

// keep readies a listed object for the cache: its strings shared, unless
// the list is a saved file's whose decoders shared them, and its size
// sampled.
func (a *applier[T]) keep(obj T) {
	if a.sharedList {
		a.inf.size.sample(obj)
		return
	}
	a.inf.share(obj)
}

// sameVersion reports two states of one object at one resourceVersion.
func sameVersion[T cache.Object](a, b T) bool {
	rv := a.GetResourceVersion()
	return rv != "" && rv == b.GetResourceVersion() && a.GetUID() == b.GetUID()
}

// flush applies the pending watch changes as one write and notifies.
func (a *applier[T]) flush() {
	if len(a.changes) == 0 {
		return
	}
	rev, err := a.inf.writer.Apply(a.changes)
	if err != nil {
		a.inf.reportAsync(err)
	}
	a.rev = rev
	if a.inf.mutations != nil {
		a.inf.mutations.record(a.changes)
	}
	a.notes = slices.Grow(a.notes, len(a.changes))
	for i := range a.changes {
		c := &a.changes[i]
		switch {
		case c.Delete:
			if c.Existed {
				obj := c.Object
				var zero T
				fsu := obj == zero // a deletion by key: the cached state is the last known
				if fsu {
					obj = c.Prev
				}
				// old: what the handler holds, for CoalesceByKey (a Delete then
				// an Add of the same object is an Update from it).
				a.note(notification[T]{kind: notifyDelete, obj: obj, old: c.Prev, fsu: fsu})
			}
		case c.Existed:
			a.noteUpdate(c.Key, c.Prev, c.Object, false)
		default:
			a.note(notification[T]{kind: notifyAdd, obj: c.Object})
		}
	}
	a.changes = shrink(a.changes)
	a.dispatch(rev, false)
}

// applyList makes the cache hold exactly the collected list, as one write:
// the objects the list lacks are deleted (final state unknown), the listed
// ones set. Handlers then hear the deletions first, then each listed
// object in list order, as client-go's RealFIFO delivers a relist.
func (a *applier[T]) applyList() {
	a.listing = false
	a.settleList()
	if a.inf.store.Len() > 0 {
		a.index()
		for _, k := range a.inf.store.ListKeys() {
			if _, ok := a.listed[k]; !ok {
				a.changes = append(a.changes, cache.Change[T]{Entry: cache.Entry[T]{Key: k}, Delete: true})
			}
		}
	}
	deletions := len(a.changes)
	a.changes = slices.Grow(a.changes, len(a.list)) // a list is large: grow once, not by doubling
	for _, e := range a.list {
		if e.Key != (cache.Key{}) {
			a.changes = append(a.changes, cache.Change[T]{Entry: e})
		}
	}
	a.list, a.listed = shrink(a.list), nil
	rev, err := a.inf.writer.Apply(a.changes)
	if err != nil {
		a.inf.reportAsync(err)
	}
	a.rev = rev
	a.publishQuarantine() // by the time the list counts as synced, readers see what it refused
	if a.inf.mutations != nil {
		a.inf.mutations.record(a.changes)
	}
	first := !a.synced
	a.notes = slices.Grow(a.notes, len(a.changes))
	for i := range a.changes {
		c := &a.changes[i]
		switch {
		case i < deletions:
			if c.Existed {
				a.note(notification[T]{kind: notifyDelete, obj: c.Prev, fsu: true})
			}
		case c.Existed:
			a.noteUpdate(c.Key, c.Prev, c.Object, first)
		default:
			a.note(notification[T]{kind: notifyAdd, obj: c.Object, initial: first})
		}
	}
	a.changes = shrink(a.changes)
	if first {
		a.inf.listedRev.Store(rev)
	}
	a.dispatch(rev, first)
	a.inf.shardListed.Store(true)
	if first {
		a.synced = true
		close(a.inf.synced)
	}
}

// noteUpdate notes an update of k from old to cur: an Update, or, when the
// two have different UIDs (the object was deleted and re-created while the
// watch was down), a Delete of the old one and an Add of the new one.
func (a *applier[T]) noteUpdate(k cache.Key, old, cur T, initial bool) {
	if o, c := old.GetUID(), cur.GetUID(); o != "" && c != "" && o != c {
		a.note(notification[T]{kind: notifyDelete, obj: old, fsu: true})
		a.note(notification[T]{kind: notifyAdd, obj: cur, initial: initial})
		return
	}
	a.note(notification[T]{kind: notifyUpdate, old: old, obj: cur})
}

// resync gives every handler OnUpdate(obj, obj) for every cached object.
func (a *applier[T]) resync() {
	objs, rev := a.inf.store.Snapshot()
	for _, obj := range objs {
		a.note(notification[T]{kind: notifyUpdate, old: obj, obj: obj})
	}
	a.dispatch(rev, false)
}

func (a *applier[T]) note(n notification[T]) { a.notes = append(a.notes, n) }

// dispatch hands the noted notifications to every listener.
func (a *applier[T]) dispatch(rev uint64, first bool) {
	if len(a.notes) > 0 || first {
		for _, l := range *a.inf.handlers.Load() {
			l.push(a.done, a.notes, rev, first)
		}
	}
	a.notes = shrink(a.notes)
}

// keepCap is the largest buffer kept for reuse; a list of 100k objects
// must not leave 100k-entry buffers behind for the informer's lifetime.
const keepCap = 4096

// shrink empties s for reuse, or drops it if it grew large.
func shrink[E any](s []E) []E {
	if cap(s) > keepCap {
		return nil
	}
	clear(s)
	return s[:0]
}

// grow makes room for n more elements in s, doubling its capacity when it
// must grow: a handler's backlog that grows for a while is copied about
// twice over its size, not the five times append's growth of large slices
// (by a quarter) copies it.
func grow[E any](s []E, n int) []E {
	if cap(s)-len(s) >= n {
		return s
	}
	g := make([]E, len(s), max(2*cap(s), len(s)+n))
	copy(g, s)
	return g
}

// reuse empties a listener's handled batch for its next one. Unlike
// shrink it keeps a large array while the handler is behind, that is while
// pending (the notifications queued since the batch was taken) is large
// too: a handler that stays behind the informer then swaps two arrays of
// its backlog's size instead of growing a new one, copy by copy, for every
// batch. A handler that caught up (an initial list handled, a burst
// drained) gives its large array back to the collector.
func reuse[E any](batch []E, pending int) []E {
	if cap(batch) > keepCap && pending <= keepCap {
		return nil
	}
	clear(batch)
	return batch[:0]
}
