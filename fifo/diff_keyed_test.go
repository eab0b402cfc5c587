package fifo_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	k8scache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/fifo"
)

// Differential test of KeyedQueue against client-go's DeltaFIFO:
//
//	k8scache.NewDeltaFIFOWithOptions(k8scache.DeltaFIFOOptions{
//		KeyFunction: k8scache.MetaNamespaceKeyFunc, KnownObjects: store,
//		EmitDeltaTypeReplaced: true})
//
// where store is a client-go Store that DeltaFIFO's consumer updates as
// client-go informers do (processDeltas: Added, Updated, Replaced and Sync
// add or update the object, Deleted deletes it, a tombstone by its key).
// KeyedQueue's consumer applies its items to a map the same way; the two
// consumer states are compared at the end.
//
// Both get the same script and the same *corev1.Pod pointers. Compared:
// every popped item (key; per delta its type, its key, the object by
// identity, FinalStateUnknown against DeletedFinalStateUnknown{Key, Obj}),
// Item.Initial against client-go's isInInitialList, HasSynced after every
// op, and Len after every op against the number of queued keys.
//
// Order. Keys leave both queues in the order they were first queued, but
// the inferred deletions of known-only keys (Replace) and the Syncs of a
// Resync are queued in Go map order on both sides: client-go walks
// KnownObjects.ListKeys(), KeyedQueue its map of known objects. The test
// tracks which keys are queued, in slots: a key queued by a write or by a
// list is a slot of its own, the keys one Replace or Resync queues from
// the known objects are one slot (a run). A pop op pops the first slot
// from both sides, a run as a whole (sorted by key before comparing), so
// everything else is compared in exact order and both consumers see the
// same keys between ops. (DeltaFIFO also walks its items map to infer the
// deletions of queued keys, but those keys are queued already: no effect
// on the order.)
//
// DeltaFIFO has no Len and is closed from the start, as in the RealFIFO
// test, so that popping a slot it lacks fails instead of blocking; at the
// end, after the last slot, it must be empty.

type keyedDiff struct {
	t     failer
	where func() string
	reg   *registry

	ours   *fifo.KeyedQueue[pod]
	mine   map[string]pod // KeyedQueue's consumer
	theirs *k8scache.DeltaFIFO
	store  k8scache.Store // DeltaFIFO's consumer and KnownObjects

	queued map[string]bool
	slots  [][]string
	runs   int // runs of more than one key compared
}

func newKeyedDiff(t failer) *keyedDiff {
	store := k8scache.NewStore(k8scache.DeletionHandlingMetaNamespaceKeyFunc)
	d := &keyedDiff{
		t: t, reg: newRegistry(), where: func() string { return "" },
		ours: fifo.NewKeyed[pod](fifo.Options{}), mine: map[string]pod{},
		theirs: k8scache.NewDeltaFIFOWithOptions(k8scache.DeltaFIFOOptions{
			KeyFunction:           k8scache.MetaNamespaceKeyFunc,
			KnownObjects:          store,
			EmitDeltaTypeReplaced: true,
		}),
		store:  store,
		queued: map[string]bool{},
	}
	d.theirs.Close()
	return d
}

func (d *keyedDiff) fail(format string, args ...any) {
	d.t.Helper()
	d.t.Fatalf("KeyedQueue vs DeltaFIFO: %s\n%s", fmt.Sprintf(format, args...), d.where())
}

func (d *keyedDiff) check(what string, err error) {
	d.t.Helper()
	if err != nil {
		d.fail("%s: %v", what, err)
	}
}

func (d *keyedDiff) run(ops []op) {
	d.t.Helper()
	i := 0
	d.where = func() string {
		return fmt.Sprintf("at op %d of script: %s", i, scriptString(ops))
	}
	for ; i < len(ops) && ops[i].Kind != opClose; i++ {
		d.step(ops[i])
	}
	d.finish()
}

// enqueue notes that key is queued now: a new slot unless it was queued.
func (d *keyedDiff) enqueue(keys ...string) {
	var slot []string
	for _, k := range keys {
		if !d.queued[k] {
			d.queued[k] = true
			slot = append(slot, k)
		}
	}
	if len(slot) > 0 {
		slices.Sort(slot)
		d.slots = append(d.slots, slot)
	}
}

// knownRun is the keys of DeltaFIFO's known objects that are neither
// queued nor in except.
func (d *keyedDiff) knownRun(except map[string]bool) []string {
	var run []string
	for _, k := range d.store.ListKeys() {
		if !d.queued[k] && !except[k] {
			run = append(run, k)
		}
	}
	return run
}

func (d *keyedDiff) step(o op) {
	d.t.Helper()
	switch o.Kind {
	case opAdd, opUpdate, opDelete:
		d.write(o.Kind, o.Key)
	case opPush:
		for _, k := range o.List {
			d.write(opUpdate, k)
		}
	case opReplace:
		var list []entry
		var objs []any
		listed := map[string]bool{}
		for _, k := range o.List {
			p := d.reg.pod(k)
			list = append(list, entry{Object: p})
			objs = append(objs, p)
			listed[keyOfIndex(k).String()] = true
		}
		run := d.knownRun(listed)
		for _, k := range o.List {
			d.enqueue(keyOfIndex(k).String())
		}
		d.enqueue(run...)
		rv := d.reg.rv()
		d.check("KeyedQueue.Replace", d.ours.Replace(list, rv))
		d.check("DeltaFIFO.Replace", d.theirs.Replace(objs, rv))
	case opResync:
		d.enqueue(d.knownRun(nil)...)
		d.check("KeyedQueue.Resync", d.ours.Resync())
		d.check("DeltaFIFO.Resync", d.theirs.Resync())
	case opPop:
		if len(d.slots) > 0 {
			d.popSlot()
		}
	}
	if a, b := d.ours.HasSynced(), d.theirs.HasSynced(); a != b {
		d.fail("after %v: HasSynced() = %v, DeltaFIFO's %v", o, a, b)
	}
	if n := d.ours.Len(); n != len(d.queued) {
		d.fail("after %v: Len() = %d, want %d queued keys", o, n, len(d.queued))
	}
}

func (d *keyedDiff) write(kind opKind, k int) {
	d.t.Helper()
	p := d.reg.pod(k)
	e := entry{Object: p} // KeyedQueue computes the key
	if k%2 == 0 {
		e = ent(p) // or takes the producer's
	}
	key := keyOfIndex(k).String()
	switch kind {
	case opAdd:
		d.enqueue(key)
		d.check("KeyedQueue.Add", d.ours.Add(e))
		d.check("DeltaFIFO.Add", d.theirs.Add(p))
	case opUpdate:
		d.enqueue(key)
		d.check("KeyedQueue.Update", d.ours.Update(e))
		d.check("DeltaFIFO.Update", d.theirs.Update(p))
	case opDelete:
		if _, known, _ := d.store.GetByKey(key); known || d.queued[key] {
			d.enqueue(key)
		}
		d.check("KeyedQueue.Delete", d.ours.Delete(e))
		d.check("DeltaFIFO.Delete", d.theirs.Delete(p))
	}
}

// popSlot pops the first slot's keys from both sides and compares them.
func (d *keyedDiff) popSlot() {
	d.t.Helper()
	slot := d.slots[0]
	d.slots = d.slots[1:]
	var ours, theirs []iv
	for range slot {
		it, err := d.ours.Pop(context.Background())
		d.check("KeyedQueue.Pop", err)
		ours = append(ours, d.reg.viewItem(it))
		for _, x := range it.Deltas {
			if x.Type == fifo.Deleted {
				delete(d.mine, it.Key.String())
			} else {
				d.mine[it.Key.String()] = x.Object
			}
		}

		_, err = d.theirs.Pop(func(obj any, initial bool) error {
			theirs = append(theirs, d.theirItem(obj.(k8scache.Deltas), initial))
			return d.apply(obj.(k8scache.Deltas))
		})
		if errors.Is(err, k8scache.ErrFIFOClosed) {
			d.fail("DeltaFIFO is empty, want the keys %v", slot)
		}
		d.check("DeltaFIFO.Pop", err)
	}
	if len(slot) > 1 {
		d.runs++
		byKey := func(a, b iv) int { return cmp.Compare(a.Key, b.Key) }
		slices.SortFunc(ours, byKey)
		slices.SortFunc(theirs, byKey)
	}
	if diff := gocmp.Diff(theirs, ours); diff != "" {
		d.fail("popped items differ (-DeltaFIFO +KeyedQueue):\n%s", diff)
	}
	for i, k := range slot {
		if theirs[i].Key != k {
			d.fail("popped %v, want the keys %v", theirs, slot)
		}
		delete(d.queued, k)
	}
}

func (d *keyedDiff) theirItem(ds k8scache.Deltas, initial bool) iv {
	d.t.Helper()
	key, err := d.theirs.KeyOf(ds)
	d.check("DeltaFIFO.KeyOf", err)
	out := iv{Key: key, Initial: initial}
	for _, x := range ds {
		if ts, ok := x.Object.(k8scache.DeletedFinalStateUnknown); ok {
			out.Deltas = append(out.Deltas, dv{Type: string(x.Type), Key: ts.Key, Obj: d.reg.anyID(ts.Obj), FSU: true})
			continue
		}
		k, err := k8scache.MetaNamespaceKeyFunc(x.Object)
		d.check("key", err)
		out.Deltas = append(out.Deltas, dv{Type: string(x.Type), Key: k, Obj: d.reg.anyID(x.Object)})
	}
	return out
}

// apply is client-go's processDeltas without a handler.
func (d *keyedDiff) apply(ds k8scache.Deltas) error {
	for _, x := range ds {
		switch x.Type {
		case k8scache.Sync, k8scache.Replaced, k8scache.Added, k8scache.Updated:
			if _, exists, err := d.store.Get(x.Object); err == nil && exists {
				if err := d.store.Update(x.Object); err != nil {
					return err
				}
			} else if err := d.store.Add(x.Object); err != nil {
				return err
			}
		case k8scache.Deleted:
			if err := d.store.Delete(x.Object); err != nil {
				return err
			}
		}
	}
	return nil
}

// finish closes ours, checks that writes fail, pops every slot and checks
// that both are empty and both consumers hold the same objects.
func (d *keyedDiff) finish() {
	d.t.Helper()
	d.ours.Close()
	e := entry{Object: d.reg.pod(0)}
	for name, err := range map[string]error{
		"Add": d.ours.Add(e), "Update": d.ours.Update(e), "Delete": d.ours.Delete(e),
		"Replace": d.ours.Replace(nil, "1"), "Resync": d.ours.Resync(),
	} {
		if !errors.Is(err, fifo.ErrClosed) {
			d.fail("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	for len(d.slots) > 0 {
		d.popSlot()
		if a, b := d.ours.HasSynced(), d.theirs.HasSynced(); a != b {
			d.fail("HasSynced() = %v, DeltaFIFO's %v", a, b)
		}
	}
	if _, err := d.ours.Pop(context.Background()); !errors.Is(err, fifo.ErrClosed) {
		d.fail("Pop of a closed, drained KeyedQueue: %v, want ErrClosed", err)
	}
	if _, err := d.theirs.Pop(func(any, bool) error { return nil }); !errors.Is(err, k8scache.ErrFIFOClosed) {
		d.fail("DeltaFIFO has more items than KeyedQueue (Pop: %v)", err)
	}
	theirs := map[string]string{}
	for _, o := range d.store.List() {
		theirs[o.(pod).Namespace+"/"+o.(pod).Name] = d.reg.anyID(o)
	}
	mine := map[string]string{}
	for _, o := range d.mine {
		mine[o.Namespace+"/"+o.Name] = d.reg.id(o)
	}
	if diff := gocmp.Diff(theirs, mine); diff != "" {
		d.fail("consumer states differ (-DeltaFIFO's +KeyedQueue's):\n%s", diff)
	}
}

// keyedScenarios are hand-written scripts for the differential test (and
// seeds of the fuzz target). Keys: 0 is "a/p0", 1 "b/p1", 2 "p2", ...
var keyedScenarios = []struct{ name, script string }{
	{"events accumulate per key", "add 0; upd 0; add 1; upd 0; del 1; pop; pop"},
	{"first list with duplicate keys", "replace 0 1 0 2 0; pop; pop; pop"},
	{"first list with duplicate keys, popped later", "replace 0 1 0; add 3; pop; upd 1; pop; pop; pop"},
	{"empty first list", "replace; add 0; pop"},
	{"write before the first list", "add 0; replace 0 1; pop; pop"},
	{"unknown-key delete before any list", "del 3; replace 0; pop"},
	{"delete of an unknown key is dropped", "del 3; add 1; pop; del 2; del 3; pop"},
	{"delete of a queued key", "add 0; del 0; pop"},
	{"delete of a known key", "add 0; pop; del 0; pop; del 0"},
	{"delete then re-add", "add 0; pop; del 0; add 0; pop; del 0; pop; add 0; pop"},
	{"consecutive deletes", "add 0; pop; del 0; del 0; pop"},
	{"delete then vanished from a list", "add 0; add 1; pop; pop; del 0; replace 1; pop"},
	{"vanished then deleted", "add 0; add 1; pop; pop; upd 0; replace 1; del 0; pop; pop"},
	{"vanished twice", "add 0; pop; add 1; replace 1; replace; pop; pop"},
	{"relist: vanished queued only", "replace 0; pop; add 1; replace 0; pop; pop"},
	{"relist: vanished known only", "add 0; add 1; pop; pop; replace 1; pop; pop"},
	{"relist: vanished known and queued", "add 0; pop; upd 0; replace; pop"},
	{"relist: all three at once", "add 0; add 1; pop; pop; upd 1; add 2; add 3; replace 3 4; pop; pop; pop; pop; pop"},
	{"relist: many known keys vanish", "replace 0 1 2 3 4 5; pop; pop; pop; pop; pop; pop; replace 2; pop; pop"},
	{"relist keeps and refreshes", "add 0; add 1; pop; pop; replace 1 0; pop; pop"},
	{"resync without queued keys", "add 0; add 1; add 2; pop; pop; pop; resync; pop; pop; pop"},
	{"resync with queued keys", "add 0; add 1; add 2; pop; pop; pop; upd 1; resync; pop; pop; pop"},
	{"resync of an empty queue", "resync; add 0; resync; pop; resync; pop"},
	{"resync then relist", "replace 0 1 2; pop; pop; pop; resync; replace 0; pop; pop"},
	{"closed with keys queued", "add 0; replace 1 2; del 1; close"},
	{"nothing", ""},
}

func TestKeyedVsDeltaFIFOScenarios(t *testing.T) {
	for _, sc := range keyedScenarios {
		t.Run(sc.name, func(t *testing.T) {
			newKeyedDiff(t).run(parseScript(sc.script))
		})
	}
}

func TestKeyedVsDeltaFIFORandom(t *testing.T) {
	seed := testSeed(t)
	scripts, ops := numScripts(300), 200
	runs := 0
	for i := range scripts {
		script := genScript(scriptRand(seed, i), ops, genConfig{})
		if !t.Run(fmt.Sprintf("script%d", i), func(t *testing.T) {
			d := newKeyedDiff(t)
			d.run(script)
			runs += d.runs
		}) {
			break
		}
	}
	t.Logf("%d scripts of %d ops, %d runs in map order compared canonically", scripts, ops, runs)
	if runs == 0 && scripts >= 10 {
		t.Errorf("no script queued a run of keys in map order: the generator misses the case")
	}
}

// failRecorder is a failer that records the first failure and stops the
// runner with a panic.
type failRecorder struct{ msg string }

type stopped struct{}

func (r *failRecorder) Helper() {}
func (r *failRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic(stopped{})
}

// runRecorded runs f with a failRecorder and returns the failure message.
func runRecorded(f func(r *failRecorder)) (msg string) {
	r := &failRecorder{}
	defer func() {
		if p := recover(); p != nil && p != (stopped{}) {
			panic(p)
		}
		msg = r.msg
	}()
	f(r)
	return ""
}

// TestRunnersCanFail checks that the differential and model runners notice
// a difference: one side gets a write the other lacks.
func TestRunnersCanFail(t *testing.T) {
	script := parseScript("add 0; add 1; replace 0 1; pop; pop; pop")
	for name, f := range map[string]func(r *failRecorder){
		"Queue has more": func(r *failRecorder) {
			d := newQueueDiff(r, 0)
			d.push(delta{Type: fifo.Sync})
			d.run(script)
		},
		"RealFIFO has more": func(r *failRecorder) {
			d := newQueueDiff(r, 2)
			_ = d.theirs.Add(d.reg.pod(3))
			d.run(script)
		},
		"KeyedQueue has another object": func(r *failRecorder) {
			d := newKeyedDiff(r)
			_ = d.ours.Add(entry{Object: d.reg.pod(0)})
			_ = d.theirs.Add(d.reg.pod(0))
			d.run(script)
		},
		"DeltaFIFO has another key": func(r *failRecorder) {
			d := newKeyedDiff(r)
			_ = d.theirs.Add(d.reg.pod(4))
			d.run(script)
		},
		"Queue has more than the model": func(r *failRecorder) {
			m := newQueueRunner(r, 1)
			_ = m.q.Push(delta{Type: fifo.Sync})
			m.run(script)
		},
		"KeyedQueue lacks a delta of the model": func(r *failRecorder) {
			m := newKeyedRunner(r)
			_ = m.m.write(fifo.Added, entry{Object: m.reg.pod(3)})
			m.run(script)
		},
	} {
		msg := runRecorded(f)
		if msg == "" {
			t.Errorf("%s: the runner did not fail", name)
		} else if !strings.Contains(msg, "differ") && !strings.Contains(msg, "want") {
			t.Errorf("%s: unexpected failure: %s", name, msg)
		}
		t.Logf("%s: %s", name, strings.SplitN(msg, "\n", 2)[0])
	}
}
