package fifo_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	k8scache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
)

// Differential tests: the same op scripts are fed to a fifo queue and to its
// client-go twin, and everything observable is compared.
//
//   - PerKey vs cache.NewDeltaFIFOWithOptions{KeyFunction:
//     MetaNamespaceKeyFunc, KnownObjects, EmitDeltaTypeReplaced: true}
//   - InOrder vs cache.NewRealFIFOWithOptions{KnownObjects} (non-atomic)
//
// Each side has its own consumer store that is also its KnownObjects: a
// *cache.Indexer for fifo, a client-go Indexer for client-go. The consumer
// applies every popped delta (Added/Updated/Replaced/Sync set the object,
// Deleted removes the key) inside the process function, as informers do.
// Both sides get the very same *corev1.Pod pointers, so objects are compared
// by identity (registry ids).
//
// Compared after every op: every popped item (key, delta types, objects,
// FinalStateUnknown against client-go's DeletedFinalStateUnknown and its Obj
// and Key, isInInitialList), HasSynced, and at the end of a script the two
// stores and the transform calls per object.
//
// Map-iteration order. client-go takes inferred deletions from
// KnownObjects.ListKeys(), whose order is a Go map's, and DeltaFIFO walks its
// items map for the queued ones; fifo walks Indexer.Keys(), also a map. So in
// "raw" mode (plain Indexers, as informers use them) the run of items that
// Replace creates with inferred deletions comes out in a random order on both
// sides. DeltaFIFO's walk over its items map only appends to keys already
// queued, so it does not affect queue order; only the KnownObjects-derived
// run does (and, for InOrder, the queued-key deletions contiguous with it).
// Resync walks KnownObjects too, so its run of Sync deltas is random as
// well. Raw mode therefore pops such a run as one unit: a shadow of the
// queue (the reference model, popped by key) numbers the entries each walk
// over KnownObjects created; when fifo hands out an entry of a walk, fifo
// keeps popping until that walk's entries are all out (each must belong to
// it, so fifo cannot scatter a run), client-go pops the same number of
// items, both segments are sorted by key and compared. Everything else is
// compared in exact order. For InOrder, the inferred deletions of queued
// keys come in first-queued order, but that order may itself come from an
// earlier random run (a Resync's Syncs still queued when Replace comes), so
// in raw mode an InOrder Replace's whole block of inferred deletions is one
// run. A run is popped whole on both sides before anything else happens, so
// the two consumer stores never diverge.
// In "sorted" mode both KnownObjects are wrapped to list keys in sorted
// order; then both sides are deterministic and every item is compared in
// exact order, with no canonicalisation.
//
// HasSynced and initialPopulationCount. DeltaFIFO sets its count to
// keys.Len() + queuedDeletions: distinct listed keys plus every inferred
// deletion, including those appended to keys already queued. That equals
// the number of queued keys, which is what fifo PerKey counts, and what
// DeltaFIFO's Pop decrements per key. (Before kubernetes/kubernetes#96797
// the count was len(list) + deletions, so a first list with a duplicate key
// never synced; scripts start with such lists, tagged "replace: first list
// has duplicate keys".) RealFIFO and fifo InOrder count queued deltas.
// client-go decrements when an item is popped (DeltaFIFO before process,
// RealFIFO after it) whether or not process fails, and does not requeue;
// fifo decrements only after process succeeds and requeues on failure (see
// the package doc), so failing process functions are only used on the fifo
// side here, as a peek. client-go reports isInInitialList as !HasSynced(),
// fifo as "the item belongs to the first Replace"; they differ only for
// items popped before any write (Syncs from a Resync with a pre-filled
// KnownObjects), which cannot happen here because the consumer fills the
// stores, see TestResync.

// clientQueue is what DeltaFIFO and RealFIFO have in common.
type clientQueue interface {
	Add(obj any) error
	Update(obj any) error
	Delete(obj any) error
	Replace(list []any, resourceVersion string) error
	Resync() error
	HasSynced() bool
	Pop(process k8scache.PopProcessFunc) (any, error)
	Close()
}

// sortedLister lists a client-go store's keys in sorted order.
type sortedLister struct{ k8scache.Indexer }

func (s sortedLister) ListKeys() []string {
	keys := s.Indexer.ListKeys()
	sort.Strings(keys)
	return keys
}

type diffConfig struct {
	ordering  fifo.Ordering
	sorted    bool // deterministic KnownObjects on both sides, exact order
	transform bool
	maxBatch  int // fifo PopBatch size; must be 0 (default) unless sorted
}

func (c diffConfig) String() string {
	mode := "raw"
	if c.sorted {
		mode = "sorted"
	}
	return fmt.Sprintf("%s/%s transform=%v maxBatch=%d", orderingName(c.ordering), mode, c.transform, c.maxBatch)
}

type differ struct {
	t   testing.TB
	cfg diffConfig
	reg *registry

	fq     *queue
	fstore *cache.Indexer[pod]
	cq     clientQueue
	cstore k8scache.Indexer
	shadow *model // per-key oracle and scenario classifier

	fcalls, ccalls, scalls map[string]int // transform calls per input object

	tags     map[string]int
	lastOp   opKind
	hadOp    bool
	where    func() string
	deleted  map[cache.Key]bool // keys that had a deletion queued at some point
	replaced bool               // a Replace happened
}

func newDiffer(t testing.TB, cfg diffConfig) *differ {
	d := &differ{
		t: t, cfg: cfg, reg: newRegistry(), fstore: newStore(t),
		cstore: k8scache.NewIndexer(k8scache.DeletionHandlingMetaNamespaceKeyFunc, k8scache.Indexers{}),
		fcalls: map[string]int{}, ccalls: map[string]int{}, scalls: map[string]int{},
		tags: map[string]int{}, deleted: map[cache.Key]bool{},
		where: func() string { return cfg.String() },
	}
	fo := opts{Ordering: cfg.ordering, MaxBatch: cfg.maxBatch}
	var fko fifo.KnownObjects[pod] = d.fstore
	var cko k8scache.KeyListerGetter = d.cstore
	if cfg.sorted {
		fko, cko = sortedKnown{d.fstore}, sortedLister{d.cstore}
	}
	fo.KnownObjects = fko
	var ctf k8scache.TransformFunc
	var stf func(pod) (pod, error)
	if cfg.transform {
		fo.Transform = d.reg.countingTransform(d.fcalls)
		stf = d.reg.countingTransform(d.scalls)
		ctfp := d.reg.countingTransform(d.ccalls)
		ctf = func(o any) (any, error) { return ctfp(o.(pod)) }
	}
	d.fq = fifo.New(fo)
	d.shadow = newModel(cfg.ordering, true, cfg.maxBatch, stf)
	if cfg.ordering == fifo.PerKey {
		d.cq = k8scache.NewDeltaFIFOWithOptions(k8scache.DeltaFIFOOptions{
			KeyFunction:           k8scache.MetaNamespaceKeyFunc,
			KnownObjects:          cko,
			EmitDeltaTypeReplaced: true,
			Transformer:           ctf,
		})
	} else {
		d.cq = k8scache.NewRealFIFOWithOptions(k8scache.RealFIFOOptions{
			KnownObjects: cko,
			Transformer:  ctf,
		})
	}
	// Closing a client-go queue only makes Pop return ErrFIFOClosed instead
	// of blocking when it is empty; writes still work. That gives a
	// non-blocking Pop, so "client-go has fewer items" is a failure, not a
	// hang. (fifo's Close refuses writes, so fifo is left open.)
	d.cq.Close()
	return d
}

func (d *differ) fail(format string, args ...any) {
	d.t.Helper()
	d.t.Fatalf("%s: %s", d.where(), fmt.Sprintf(format, args...))
}

func (d *differ) tag(s string) { d.tags[s]++ }

// ---- popping ----

// fpop pops up to max fifo items (PopBatch when batch), applying them to the
// fifo store and to the shadow, whose item for the key must agree. It
// returns the views and, per item, the KnownObjects walk that created it.
func (d *differ) fpop(batch bool) ([]iv, []int) {
	d.t.Helper()
	if d.fq.Len() == 0 {
		d.fail("fifo queue unexpectedly empty")
	}
	var got []iv
	var runs []int
	process := func(items []item, initial bool) error {
		for _, x := range items {
			v := viewItem(x, initial, d.reg.id)
			got = append(got, v)
			apply(d.fstore, x)
			want, run, ok := d.shadow.popKey(x.Key)
			if !ok || !ivEqual(want, v) {
				d.fail("popped item differs from the model's item for its key (-model +fifo):\n%s", gocmp.Diff(want, v))
			}
			runs = append(runs, run)
		}
		return nil
	}
	var err error
	if batch {
		err = d.fq.PopBatch(context.Background(), process)
	} else {
		err = d.fq.Pop(context.Background(), func(x item, initial bool) error { return process([]item{x}, initial) })
	}
	if err != nil {
		d.fail("fifo pop: %v", err)
	}
	return got, runs
}

// extendRun, in raw mode, pops further fifo items until the walk that
// created the last one has no entry left; each must belong to that walk.
func (d *differ) extendRun(f []iv, runs []int) ([]iv, []int) {
	d.t.Helper()
	if d.cfg.sorted {
		return f, runs
	}
	for run := runs[len(runs)-1]; run != 0 && d.shadow.runLeft(run) > 0; {
		g, r := d.fpop(false)
		if r[0] != run {
			d.fail("fifo handed out %v in the middle of a run of items created by one Replace or Resync", g[0])
		}
		f, runs = append(f, g...), append(runs, r...)
	}
	return f, runs
}

// fpeek returns the fifo head without removing it, through a failing process
// function: the item must go back to the head unchanged.
func (d *differ) fpeek() iv {
	d.t.Helper()
	var got iv
	err := d.fq.Pop(context.Background(), func(x item, initial bool) error {
		got = viewItem(x, initial, d.reg.id)
		return errPeek
	})
	if !errors.Is(err, errPeek) {
		d.fail("fifo peek: %v", err)
	}
	return got
}

// cview renders a client-go item.
func (d *differ) cview(ds k8scache.Deltas, initial bool) iv {
	key, err := k8scache.DeletionHandlingMetaNamespaceKeyFunc(ds.Newest().Object)
	if err != nil {
		d.fail("client-go item without key: %v", err)
	}
	v := iv{Key: key, Initial: initial}
	for _, x := range ds {
		dv := dv{Type: string(x.Type)}
		obj := x.Object
		if t, ok := obj.(k8scache.DeletedFinalStateUnknown); ok {
			dv.FSU = true
			if t.Key != key {
				d.fail("DeletedFinalStateUnknown key %q in item %q", t.Key, key)
			}
			obj = t.Obj
		}
		switch o := obj.(type) {
		case nil:
			dv.Obj = "<nil>"
		case *corev1.Pod:
			if k, _ := k8scache.MetaNamespaceKeyFunc(o); k != key {
				d.fail("object %s in item %q", k, key)
			}
			dv.Obj = d.reg.id(o)
		default:
			d.fail("client-go delta object of type %T", obj)
		}
		v.Deltas = append(v.Deltas, dv)
	}
	return v
}

func (d *differ) capply(ds k8scache.Deltas) {
	for _, x := range ds {
		var err error
		if x.Type == k8scache.Deleted {
			err = d.cstore.Delete(x.Object)
		} else {
			err = d.cstore.Update(x.Object)
		}
		if err != nil {
			d.fail("client-go store: %v", err)
		}
	}
}

// cpop pops exactly n client-go items: with Pop, or for RealFIFO in batch
// mode with as many PopBatch calls as needed (only when fifo's MaxBatch is
// RealFIFO's fixed 1000: with a smaller fifo batch RealFIFO would hand out
// more than n).
func (d *differ) cpop(n int, batch bool) []iv {
	d.t.Helper()
	var got []iv
	rf, isReal := d.cq.(*k8scache.RealFIFO)
	for len(got) < n {
		var err error
		if batch && isReal && d.cfg.maxBatch == 0 {
			err = rf.PopBatch(func(ds []k8scache.Delta, initial bool) error {
				keys := map[string]bool{}
				for _, x := range ds {
					v := d.cview(k8scache.Deltas{x}, initial)
					if keys[v.Key] {
						d.fail("RealFIFO batch repeats key %s", v.Key)
					}
					keys[v.Key] = true
					got = append(got, v)
					d.capply(k8scache.Deltas{x})
				}
				return nil
			}, func(obj any, initial bool) error {
				got = append(got, d.cview(obj.(k8scache.Deltas), initial))
				d.capply(obj.(k8scache.Deltas))
				return nil
			})
		} else {
			_, err = d.cq.Pop(func(obj any, initial bool) error {
				got = append(got, d.cview(obj.(k8scache.Deltas), initial))
				d.capply(obj.(k8scache.Deltas))
				return nil
			})
		}
		if errors.Is(err, k8scache.ErrFIFOClosed) {
			d.fail("client-go queue is empty after %d items, fifo handed out %d; client-go items:\n%s", len(got), n, gocmp.Diff(nil, got))
		}
		if err != nil {
			d.fail("client-go pop: %v", err)
		}
	}
	if len(got) > n {
		d.fail("client-go batches handed out %d items, fifo %d", len(got), n)
	}
	return got
}

// compareItems compares what both sides popped. In raw mode each segment of
// items created by one walk over KnownObjects (runs) is sorted by key on
// both sides first.
func (d *differ) compareItems(what string, f []iv, runs []int, c []iv) {
	d.t.Helper()
	if len(f) != len(c) {
		d.fail("%s: fifo popped %d items, client-go %d", what, len(f), len(c))
	}
	if !d.cfg.sorted {
		f, c = slices.Clone(f), slices.Clone(c)
		byKey := func(a, b iv) int { return cmp.Compare(a.Key, b.Key) }
		for i := 0; i < len(f); {
			j := i + 1
			for runs[i] != 0 && j < len(f) && runs[j] == runs[i] {
				j++
			}
			if j-i > 1 {
				if f[i].Deltas[0].Type == "Sync" {
					d.tag("pop: run of Syncs from one Resync, compared sorted by key")
				} else {
					d.tag("pop: run of inferred deletions from one Replace, compared sorted by key")
				}
				slices.SortStableFunc(f[i:j], byKey)
				slices.SortStableFunc(c[i:j], byKey)
			}
			i = j
		}
	}
	if !slices.EqualFunc(f, c, ivEqual) {
		d.fail("%s: popped items mismatch (-client-go +fifo):\n%s", what, gocmp.Diff(c, f))
	}
	for _, v := range f {
		if v.Initial {
			d.tag("pop: item of the initial list (isInInitialList)")
		}
		if len(v.Deltas) > 1 {
			d.tag("pop: PerKey item with several deltas")
		}
		for _, x := range v.Deltas {
			if x.FSU {
				d.tag("pop: inferred deletion (DeletedFinalStateUnknown)")
			}
		}
	}
}

// popUnit pops one item from each side, or in raw mode a whole run (see the
// file comment).
func (d *differ) popUnit() {
	d.t.Helper()
	f, runs := d.extendRun(d.fpop(false))
	d.compareItems("Pop", f, runs, d.cpop(len(f), false))
}

// ---- ops ----

func (d *differ) step(o op) {
	d.t.Helper()
	s := d.shadow
	switch o.Kind {
	case opAdd, opUpdate, opDelete:
		obj := d.reg.obj(o.Key)
		k := cache.KeyOf(obj)
		last, queued := s.last(k)
		known := s.known[k] != nil
		var ferr, cerr error
		var t fifo.DeltaType
		switch o.Kind {
		case opAdd:
			t = fifo.Added
			d.tag("add")
			if (queued && last.Type == fifo.Deleted) || (!queued && !known && d.deleted[k]) {
				d.tag("add: key deleted then re-added")
			}
			ferr, cerr = d.fq.Add(obj), d.cq.Add(obj)
		case opUpdate:
			t = fifo.Updated
			d.tag("update")
			if !queued && !known {
				d.tag("update: of a key neither known nor queued")
			}
			ferr, cerr = d.fq.Update(obj), d.cq.Update(obj)
		default:
			t = fifo.Deleted
			switch {
			case d.cfg.ordering == fifo.PerKey && !queued && !known:
				d.tag("delete: neither known nor queued (PerKey ignores it)")
			case queued && last.Type == fifo.Deleted && last.FinalStateUnknown:
				d.tag("delete: real deletion after a queued inferred one")
			case queued && last.Type == fifo.Deleted:
				d.tag("delete: consecutive real deletions")
			default:
				d.tag("delete")
			}
			d.deleted[k] = true
			ferr, cerr = d.fq.Delete(obj), d.cq.Delete(obj)
		}
		s.write(t, obj)
		if ferr != nil || cerr != nil {
			d.fail("%v: fifo error %v, client-go error %v", o, ferr, cerr)
		}
	case opReplace:
		d.classifyReplace(o)
		list := make([]pod, len(o.List))
		clist := make([]any, len(o.List))
		for i, k := range o.List {
			list[i] = d.reg.obj(k)
			clist[i] = list[i]
		}
		s.replace(list)
		ferr, cerr := d.fq.Replace(list, "rv"), d.cq.Replace(clist, "rv")
		if ferr != nil || cerr != nil {
			d.fail("%v: fifo error %v, client-go error %v", o, ferr, cerr)
		}
	case opResync:
		d.tag("resync")
		for k := range s.known {
			if s.queued(k) {
				d.tag("resync: racing with queued changes (skipped for those keys)")
				break
			}
		}
		for k := range s.known {
			if !s.queued(k) {
				d.tag("resync: queues Sync")
				break
			}
		}
		s.resync()
		ferr, cerr := d.fq.Resync(), d.cq.Resync()
		if ferr != nil || cerr != nil {
			d.fail("%v: fifo error %v, client-go error %v", o, ferr, cerr)
		}
	case opPop:
		if d.fq.Len() > 0 {
			d.tag("pop")
			d.popUnit()
		}
	case opPopFail:
		// fifo only: client-go does not requeue on failure. The peeked
		// item must be what the next pop hands out.
		if d.fq.Len() > 0 {
			d.tag("pop: failed process requeues (fifo only)")
			peek := d.fpeek()
			f, runs := d.fpop(false)
			if !ivEqual(peek, f[0]) {
				d.fail("item after a failed process (-peeked +popped):\n%s", gocmp.Diff(peek, f[0]))
			}
			f, runs = d.extendRun(f, runs)
			d.compareItems("Pop after a failed Pop", f, runs, d.cpop(len(f), false))
		}
	case opPopBatch:
		if d.fq.Len() > 0 {
			d.tag("popbatch")
			if s.initial > 0 {
				d.tag("popbatch: initial list")
			}
			f, runs := d.extendRun(d.fpop(true))
			d.compareItems("PopBatch", f, runs, d.cpop(len(f), true))
		}
	case opDrain:
		d.tag("drain")
		for d.fq.Len() > 0 {
			d.popUnit()
		}
		d.checkEmpty()
	}
	if f, c, m := d.fq.HasSynced(), d.cq.HasSynced(), s.synced; f != c || f != m {
		d.fail("after %v: HasSynced fifo=%v client-go=%v model=%v", o, f, c, m)
	}
	if f, m := d.fq.Len(), len(s.q); f != m {
		d.fail("after %v: Len fifo=%d model=%d", o, f, m)
	}
	d.lastOp, d.hadOp = o.Kind, true
}

// classifyReplace tags the kind of list and what it reveals, from the
// shadow's state before the Replace.
func (d *differ) classifyReplace(o op) {
	s := d.shadow
	if !s.populated {
		if d.hadOp {
			d.tag("replace: first write (initial list) after pops/resyncs of nothing")
		} else {
			d.tag("replace: first write (initial list)")
		}
	} else if !d.replaced {
		d.tag("replace: first Replace after writes (no initial list)")
	}
	if d.hadOp && d.lastOp == opReplace {
		d.tag("replace: repeated, nothing popped in between")
	}
	listed := map[cache.Key]bool{}
	for _, k := range o.List {
		if listed[keyOfIndex(k)] {
			d.tag("replace: duplicate keys in the list")
			if !s.populated {
				d.tag("replace: first list has duplicate keys")
			}
		}
		listed[keyOfIndex(k)] = true
	}
	// present: what the consumer will believe exists once the queue drains
	present := map[cache.Key]bool{}
	for k := range s.known {
		present[k] = true
	}
	for _, e := range s.q {
		if l := e.deltas[len(e.deltas)-1]; l.Type == fifo.Deleted {
			delete(present, e.key)
		} else {
			present[e.key] = true
		}
	}
	overlap := 0
	for k := range listed {
		if present[k] {
			overlap++
		}
	}
	switch {
	case len(listed) == 0:
		d.tag("replace: empty list")
	case overlap == len(present) && overlap == len(listed):
		d.tag("replace: list equals the current keys")
	case overlap == 0 && len(present) > 0:
		d.tag("replace: disjoint list")
	case overlap > 0:
		d.tag("replace: overlapping list")
	default:
		d.tag("replace: list of new keys only")
	}
	for _, k := range o.List {
		key := keyOfIndex(k)
		if l, ok := s.last(key); ok && l.Type == fifo.Deleted && !l.FinalStateUnknown {
			d.tag("replace: lists a key whose deletion is queued (deleted, re-created)")
		}
	}
	for k := range numKeys {
		key := keyOfIndex(k)
		if listed[key] {
			continue
		}
		last, queued := s.last(key)
		switch {
		case queued && last.Type == fifo.Deleted && last.FinalStateUnknown:
			d.tag("replace: vanished again after an inferred deletion (no second one)")
		case queued && last.Type == fifo.Deleted:
			d.tag("replace: vanished with a real deletion queued (no inferred one)")
		case queued:
			d.tag("replace: vanished key still queued (inferred from the queue)")
		case s.known[key] != nil:
			d.tag("replace: vanished key known only to KnownObjects")
		}
	}
	d.replaced = true
}

// checkEmpty asserts that client-go's queue is empty too.
func (d *differ) checkEmpty() {
	d.t.Helper()
	_, err := d.cq.Pop(func(obj any, _ bool) error {
		d.fail("client-go has an item fifo does not: %v", d.cview(obj.(k8scache.Deltas), false))
		return nil
	})
	if !errors.Is(err, k8scache.ErrFIFOClosed) {
		d.fail("client-go pop on empty queue: %v", err)
	}
}

// finish drains both queues and compares the stores and the transform calls.
func (d *differ) finish() {
	d.t.Helper()
	d.step(op{Kind: opDrain})
	fs, cs := map[string]string{}, map[string]string{}
	for k, v := range d.fstore.All() {
		fs[k.String()] = d.reg.id(v)
	}
	for _, o := range d.cstore.List() {
		k, _ := k8scache.MetaNamespaceKeyFunc(o)
		cs[k] = d.reg.id(o.(pod))
	}
	if !maps.Equal(fs, cs) {
		d.fail("consumer stores differ (-client-go +fifo):\n%s", gocmp.Diff(cs, fs))
	}
	if !maps.Equal(d.fcalls, d.ccalls) {
		d.fail("transform calls differ (-client-go +fifo):\n%s", gocmp.Diff(d.ccalls, d.fcalls))
	}
	if d.cfg.transform {
		d.tag("transform")
	}
}

// runDiff runs one script, then drains both queues and compares the stores;
// it returns the number of script ops.
func runDiff(t testing.TB, cfg diffConfig, ops []op, tags map[string]int) int {
	d := newDiffer(t, cfg)
	i := 0
	d.where = func() string {
		var b strings.Builder
		for j, o := range ops[:min(i+1, len(ops))] {
			if j > 0 {
				b.WriteString(" ")
			}
			b.WriteString(o.String())
		}
		return fmt.Sprintf("%v, op %d\nscript: %s", cfg, i, b.String())
	}
	for i = range ops {
		d.step(ops[i])
	}
	i = len(ops) - 1
	d.finish()
	for k, v := range d.tags {
		tags[k] += v
	}
	return len(ops)
}

// wantTags are the scenario kinds every full differential run must cover.
var wantTags = []string{
	"add", "add: key deleted then re-added", "update", "update: of a key neither known nor queued",
	"delete", "delete: consecutive real deletions", "delete: real deletion after a queued inferred one",
	"replace: first write (initial list)", "replace: first Replace after writes (no initial list)",
	"replace: repeated, nothing popped in between", "replace: duplicate keys in the list",
	"replace: first list has duplicate keys",
	"replace: empty list", "replace: list equals the current keys", "replace: disjoint list",
	"replace: overlapping list", "replace: lists a key whose deletion is queued (deleted, re-created)",
	"replace: vanished key still queued (inferred from the queue)",
	"replace: vanished key known only to KnownObjects",
	"replace: vanished again after an inferred deletion (no second one)",
	"replace: vanished with a real deletion queued (no inferred one)",
	"resync", "resync: racing with queued changes (skipped for those keys)", "resync: queues Sync",
	"pop", "pop: failed process requeues (fifo only)", "popbatch", "popbatch: initial list", "drain",
	"pop: item of the initial list (isInInitialList)", "pop: inferred deletion (DeletedFinalStateUnknown)",
	"transform",
}

func TestDifferential(t *testing.T) {
	scripts, opsPerScript := 2000, 50
	if testing.Short() {
		scripts = 200
	}
	for _, ordering := range []fifo.Ordering{fifo.PerKey, fifo.InOrder} {
		t.Run(orderingName(ordering), func(t *testing.T) {
			twin := map[fifo.Ordering]string{fifo.PerKey: "DeltaFIFO", fifo.InOrder: "RealFIFO"}[ordering]
			for _, sorted := range []bool{false, true} {
				tags := map[string]int{}
				total := 0
				for seed := range scripts {
					rng := rand.New(rand.NewPCG(uint64(seed), uint64(ordering)<<1|b2u(sorted)))
					cfg := diffConfig{ordering: ordering, sorted: sorted, transform: seed%4 == 3}
					if sorted {
						cfg.maxBatch = []int{0, 1, 2, 3}[seed%4]
					}
					total += runDiff(t, cfg, genScript(rng, opsPerScript), tags)
				}
				mode := "raw Indexers, runs of inferred deletions compared sorted by key"
				if sorted {
					mode = "sorted KnownObjects, exact order"
				}
				t.Logf("differential %s vs client-go %s (%s): %d scripts, %d ops, %d scenario kinds:\n%s",
					orderingName(ordering), twin, mode, scripts, total, len(tags), formatTags(tags))
				if !testing.Short() {
					for _, w := range wantTags {
						if tags[w] == 0 {
							t.Errorf("scenario %q never happened", w)
						}
					}
				}
			}
		})
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func formatTags(tags map[string]int) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		fmt.Fprintf(&b, "  %7d  %s\n", tags[k], k)
	}
	return b.String()
}

// TestResyncRace races producers (Add then increasing Updates per key),
// a goroutine calling Resync in a loop and a consumer that applies every
// popped delta to the KnownObjects store, for fifo and client-go. Invariant:
// a Sync delta carries exactly the object the store holds when it is
// applied (Resync never queues a stale copy behind a queued change), so a
// key's resourceVersion never goes backwards; at the end every key holds its
// last update.
func TestResyncRace(t *testing.T) {
	const keys, updates = 20, 150
	for _, ordering := range []fifo.Ordering{fifo.InOrder, fifo.PerKey} {
		for _, impl := range []string{"fifo", "client-go"} {
			t.Run(orderingName(ordering)+"/"+impl, func(t *testing.T) {
				var (
					write  func(o pod, first bool) error
					resync func() error
					pop    func(apply func(typ string, o pod)) error
					closeQ func()
					get    func(k string) (pod, bool)
				)
				if impl == "fifo" {
					store := newStore(t)
					q := fifo.New(opts{Ordering: ordering, KnownObjects: store})
					write = func(o pod, first bool) error {
						if first {
							return q.Add(o)
						}
						return q.Update(o)
					}
					resync = q.Resync
					pop = func(applyFn func(string, pod)) error {
						return q.Pop(context.Background(), func(x item, _ bool) error {
							for _, d := range x.Deltas {
								applyFn(d.Type.String(), d.Object)
							}
							apply(store, x)
							return nil
						})
					}
					closeQ = q.Close
					get = func(k string) (pod, bool) {
						key, _ := cache.ParseKey(k)
						o, ok, _ := store.GetByKey(key)
						return o, ok
					}
				} else {
					store := k8scache.NewIndexer(k8scache.DeletionHandlingMetaNamespaceKeyFunc, k8scache.Indexers{})
					var cq clientQueue
					if ordering == fifo.PerKey {
						cq = k8scache.NewDeltaFIFOWithOptions(k8scache.DeltaFIFOOptions{KnownObjects: store, EmitDeltaTypeReplaced: true})
					} else {
						cq = k8scache.NewRealFIFOWithOptions(k8scache.RealFIFOOptions{KnownObjects: store})
					}
					write = func(o pod, first bool) error {
						if first {
							return cq.Add(o)
						}
						return cq.Update(o)
					}
					resync = cq.Resync
					pop = func(applyFn func(string, pod)) error {
						_, err := cq.Pop(func(obj any, _ bool) error {
							for _, d := range obj.(k8scache.Deltas) {
								applyFn(string(d.Type), d.Object.(pod))
								if err := store.Update(d.Object); err != nil {
									return err
								}
							}
							return nil
						})
						if errors.Is(err, k8scache.ErrFIFOClosed) {
							return fifo.ErrClosed
						}
						return err
					}
					closeQ = cq.Close
					get = func(k string) (pod, bool) {
						o, ok, _ := store.GetByKey(k)
						if !ok {
							return nil, false
						}
						return o.(pod), true
					}
				}

				var producers, resyncer sync.WaitGroup
				stop := make(chan struct{})
				for w := range 2 {
					producers.Add(1)
					go func() {
						defer producers.Done()
						for u := range updates {
							for k := w; k < keys; k += 2 {
								if err := write(mkPod("ns", fmt.Sprintf("k%d", k), fmt.Sprint(u+1)), u == 0); err != nil {
									t.Error(err)
									return
								}
							}
						}
					}()
				}
				resyncs := 0
				resyncer.Add(1)
				go func() {
					defer resyncer.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						if err := resync(); err != nil {
							t.Error(err)
							return
						}
						resyncs++
					}
				}()
				go func() { producers.Wait(); close(stop); resyncer.Wait(); closeQ() }()

				rv := map[string]int{}
				syncs, stale := 0, 0
				for {
					err := pop(func(typ string, o pod) {
						k := cache.KeyOf(o).String()
						var n int
						fmt.Sscan(o.ResourceVersion, &n)
						if typ == "Sync" {
							syncs++
							if cur, _ := get(k); cur != o {
								stale++
								t.Errorf("Sync of %s@%s but the store holds %s", k, o.ResourceVersion, podID(cur))
							}
						}
						if n < rv[k] {
							t.Errorf("%s %s@%d after @%d: resourceVersion went backwards", typ, k, n, rv[k])
						}
						rv[k] = n
					})
					if errors.Is(err, fifo.ErrClosed) {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				for k := range keys {
					key := fmt.Sprintf("ns/k%d", k)
					if o, ok := get(key); !ok || o.ResourceVersion != fmt.Sprint(updates) {
						t.Errorf("%s ends at %s, want @%d", key, podID(o), updates)
					}
				}
				t.Logf("%d resyncs, %d Sync deltas popped, %d stale", resyncs, syncs, stale)
			})
		}
	}
}
