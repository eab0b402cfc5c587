package fifo_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	k8scache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
)

// Differential test of Queue against client-go's RealFIFO with atomic
// events (the queue of client-go v0.37 informers):
//
//	k8scache.NewRealFIFOWithOptions(k8scache.RealFIFOOptions{
//		AtomicEvents: true, EmitDeltaTypeBookmark: true,
//		KeyFunction: k8scache.MetaNamespaceKeyFunc})
//
// Both get the same op script and the very same *corev1.Pod pointers. What
// comes out is normalised to one event stream per side and compared event
// by event, in exact order, objects by identity:
//
//   - our Added/Updated/Deleted (with the entry's key) == theirs;
//   - our ReplaceStart, Replaced..., ReplaceEnd{RV} == their one ReplacedAll
//     {Objects, ResourceVersion}, a list being one event even when our
//     MaxBatch cut it over several Pops;
//   - our Sync (no object) == their SyncAll; our Bookmark{RV} == theirs.
//
// A pop op pops one batch of ours (up to MaxBatch deltas, whose length is
// checked), then pops theirs (Pop or PopBatch, per the op) until their
// stream is as long as ours, and compares what is new. At the end both are
// closed and drained and the whole streams must be equal. Queue.Len is
// checked after every op against the deltas pushed and not yet popped.
//
// The RealFIFO is closed from the start: client-go's Close only makes Pop
// return ErrFIFOClosed instead of blocking on an empty queue (writes still
// work), so a divergence fails instead of hanging.

// qev is one normalised event.
type qev struct {
	Type string
	Key  string   `json:",omitempty"`
	Obj  string   `json:",omitempty"`
	RV   string   `json:",omitempty"`
	Objs []string `json:",omitempty"` // ReplacedAll
}

type queueDiff struct {
	t        failer
	where    func() string
	reg      *registry
	maxBatch int

	ours   *fifo.Queue[pod]
	theirs *k8scache.RealFIFO

	oursEv, theirsEv []qev
	list             *qev // our list being collected: ReplaceStart seen
	queued           int  // our deltas pushed and not popped
	compared         int  // events compared so far
}

func newQueueDiff(t failer, maxBatch int) *queueDiff {
	d := &queueDiff{
		t: t, reg: newRegistry(), maxBatch: maxBatch,
		ours: fifo.New[pod](fifo.Options{MaxBatch: maxBatch}),
		theirs: k8scache.NewRealFIFOWithOptions(k8scache.RealFIFOOptions{
			AtomicEvents:          true,
			EmitDeltaTypeBookmark: true,
			KeyFunction:           k8scache.MetaNamespaceKeyFunc,
		}),
		where: func() string { return "" },
	}
	if d.maxBatch <= 0 {
		d.maxBatch = fifo.DefaultMaxBatch
	}
	d.theirs.Close()
	return d
}

func (d *queueDiff) fail(format string, args ...any) {
	d.t.Helper()
	d.t.Fatalf("Queue vs RealFIFO (MaxBatch %d): %s\n%s", d.maxBatch, fmt.Sprintf(format, args...), d.where())
}

func (d *queueDiff) check(what string, err error) {
	d.t.Helper()
	if err != nil {
		d.fail("%s: %v", what, err)
	}
}

// run runs a script up to its first close, then closes and drains both.
func (d *queueDiff) run(ops []op) {
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

func (d *queueDiff) push(ds ...delta) {
	d.t.Helper()
	d.check("Push", d.ours.Push(ds...))
	d.queued += len(ds)
}

func (d *queueDiff) step(o op) {
	d.t.Helper()
	switch o.Kind {
	case opAdd, opUpdate, opDelete:
		p := d.reg.pod(o.Key)
		var err error
		switch o.Kind {
		case opAdd:
			d.push(delta{Type: fifo.Added, Entry: ent(p)})
			err = d.theirs.Add(p)
		case opUpdate:
			d.push(delta{Type: fifo.Updated, Entry: ent(p)})
			err = d.theirs.Update(p)
		default:
			d.push(delta{Type: fifo.Deleted, Entry: ent(p)})
			err = d.theirs.Delete(p)
		}
		d.check("client-go write", err)
	case opPush:
		ds := make([]delta, 0, len(o.List))
		for _, k := range o.List {
			p := d.reg.pod(k)
			ds = append(ds, delta{Type: fifo.Updated, Entry: ent(p)})
			d.check("RealFIFO.Update", d.theirs.Update(p))
		}
		d.push(ds...)
	case opReplace:
		var list []entry
		var objs []any
		for _, k := range o.List {
			p := d.reg.pod(k)
			list = append(list, ent(p))
			objs = append(objs, p)
		}
		rv := d.reg.rv()
		d.check("Queue list push", replace(d.ours, list, rv))
		d.queued += len(list) + 2
		d.check("RealFIFO.Replace", d.theirs.Replace(objs, rv))
	case opResync:
		d.push(delta{Type: fifo.Sync})
		d.check("RealFIFO.Resync", d.theirs.Resync())
	case opBookmark:
		rv := d.reg.rv()
		d.push(delta{Type: fifo.Bookmark, ResourceVersion: rv})
		d.check("RealFIFO.Bookmark", d.theirs.Bookmark(rv))
	case opPop:
		if d.queued > 0 {
			d.popOurs()
			d.popTheirs(o.Alt)
			d.compare()
		}
	}
	if n := d.ours.Len(); n != d.queued {
		d.fail("after %v: Len() = %d, want %d", o, n, d.queued)
	}
}

// popOurs pops one batch of ours and normalises it.
func (d *queueDiff) popOurs() {
	d.t.Helper()
	ds, err := d.ours.Pop(context.Background())
	d.check("Queue.Pop", err)
	if want := min(d.queued, d.maxBatch); len(ds) != want {
		d.fail("Pop returned %d deltas, want %d", len(ds), want)
	}
	d.queued -= len(ds)
	for _, x := range ds {
		switch x.Type {
		case fifo.Added, fifo.Updated, fifo.Deleted:
			if x.Key != cache.KeyOf(x.Object) {
				d.fail("delta %v carries key %v", d.reg.viewDelta(x), x.Key)
			}
			d.emit(qev{Type: x.Type.String(), Key: x.Key.String(), Obj: d.reg.id(x.Object)})
		case fifo.Sync:
			d.emit(qev{Type: "SyncAll"})
		case fifo.Bookmark:
			d.emit(qev{Type: "Bookmark", RV: x.ResourceVersion})
		case fifo.ReplaceStart:
			if d.list != nil {
				d.fail("ReplaceStart inside a list")
			}
			d.list = &qev{Type: "ReplacedAll"}
		case fifo.Replaced:
			if d.list == nil {
				d.fail("Replaced outside a list: %v", d.reg.viewDelta(x))
			}
			d.list.Objs = append(d.list.Objs, d.reg.id(x.Object))
		case fifo.ReplaceEnd:
			if d.list == nil {
				d.fail("ReplaceEnd outside a list")
			}
			d.list.RV = x.ResourceVersion
			d.oursEv = append(d.oursEv, *d.list)
			d.list = nil
		default:
			d.fail("unexpected delta %v", d.reg.viewDelta(x))
		}
	}
}

func (d *queueDiff) emit(e qev) {
	d.t.Helper()
	if d.list != nil {
		d.fail("%v inside a list", e)
	}
	d.oursEv = append(d.oursEv, e)
}

// popTheirs pops RealFIFO until its stream is as long as ours or it is
// empty.
func (d *queueDiff) popTheirs(batch bool) {
	d.t.Helper()
	for len(d.theirsEv) < len(d.oursEv) && d.popTheirsOnce(batch) {
	}
}

// popTheirsOnce pops once, with Pop or PopBatch; it reports false when
// RealFIFO is empty (it is closed, so Pop does not block).
func (d *queueDiff) popTheirsOnce(batch bool) bool {
	d.t.Helper()
	var got []k8scache.Delta
	var err error
	if batch {
		err = d.theirs.PopBatch(
			func(ds []k8scache.Delta, _ bool) error { got = append(got, ds...); return nil },
			func(obj any, _ bool) error { got = append(got, obj.(k8scache.Deltas)...); return nil })
	} else {
		_, err = d.theirs.Pop(func(obj any, _ bool) error { got = append(got, obj.(k8scache.Deltas)...); return nil })
	}
	if errors.Is(err, k8scache.ErrFIFOClosed) {
		return false
	}
	d.check("RealFIFO pop", err)
	for _, x := range got {
		d.theirsEv = append(d.theirsEv, d.theirEvent(x))
	}
	return true
}

func (d *queueDiff) theirEvent(x k8scache.Delta) qev {
	d.t.Helper()
	switch x.Type {
	case k8scache.Added, k8scache.Updated, k8scache.Deleted:
		key, err := k8scache.MetaNamespaceKeyFunc(x.Object)
		d.check("key", err)
		return qev{Type: string(x.Type), Key: key, Obj: d.reg.anyID(x.Object)}
	case k8scache.ReplacedAll:
		info := x.Object.(k8scache.ReplacedAllInfo)
		e := qev{Type: "ReplacedAll", RV: info.ResourceVersion}
		for _, o := range info.Objects {
			e.Objs = append(e.Objs, d.reg.anyID(o))
		}
		return e
	case k8scache.SyncAll:
		return qev{Type: "SyncAll"}
	case k8scache.Bookmark:
		return qev{Type: "Bookmark", RV: x.Object.(k8scache.BookmarkInfo).ResourceVersion}
	}
	d.fail("unexpected client-go delta %v %T", x.Type, x.Object)
	return qev{}
}

// compare compares the events that both sides have and were not compared.
func (d *queueDiff) compare() {
	d.t.Helper()
	n := min(len(d.oursEv), len(d.theirsEv))
	if diff := gocmp.Diff(d.theirsEv[d.compared:n], d.oursEv[d.compared:n]); diff != "" {
		d.fail("events %d..%d differ (-RealFIFO +Queue):\n%s", d.compared, n, diff)
	}
	d.compared = n
}

// finish closes ours, checks that writes fail, drains both and compares
// the whole streams.
func (d *queueDiff) finish() {
	d.t.Helper()
	d.ours.Close()
	if err := d.ours.Push(delta{Type: fifo.Sync}); !errors.Is(err, fifo.ErrClosed) {
		d.fail("Push after Close: %v, want ErrClosed", err)
	}
	if err := replace(d.ours, nil, "1"); !errors.Is(err, fifo.ErrClosed) {
		d.fail("Replace after Close: %v, want ErrClosed", err)
	}
	for d.queued > 0 {
		d.popOurs()
	}
	if _, err := d.ours.Pop(context.Background()); !errors.Is(err, fifo.ErrClosed) {
		d.fail("Pop of a closed, drained Queue: %v, want ErrClosed", err)
	}
	if d.list != nil {
		d.fail("the queue ended inside a list")
	}
	for d.popTheirsOnce(true) {
	}
	if diff := gocmp.Diff(d.theirsEv, d.oursEv); diff != "" {
		d.fail("event streams differ (-RealFIFO +Queue):\n%s", diff)
	}
}

// diffMaxBatches are the MaxBatch values the differential runs use (0: the
// default).
var diffMaxBatches = []int{0, 1, 2, 3, 7}

func TestQueueVsRealFIFOScenarios(t *testing.T) {
	for _, sc := range []struct{ name, script string }{
		{"watch events in order", "add 0; upd 0; add 1; del 0; pop; upd 1; pop"},
		{"list between events", "add 0; replace 0 1 2; upd 1; pop; pop"},
		{"list with duplicate keys", "replace 0 1 0 1; pop"},
		{"empty list", "add 1; replace; pop; replace; pop"},
		{"lists back to back", "replace 0 1; replace 2; replace 0 3 4; pop; pop; pop"},
		{"resync is one marker", "add 0; resync; add 1; resync; resync; pop"},
		{"bookmarks", "bookmark; add 0; bookmark; replace 0; bookmark; pop"},
		{"atomic pushes", "push 0 1 2; push 3; add 4; push 0 0; pop"},
		{"popbatch stops at repeated keys", "add 0; add 1; upd 0; del 1; add 2; popb; popb; popb"},
		{"popbatch around lists", "add 0; replace 1 2; add 3; popb; popb; popb"},
		{"drained at close", "add 0; replace 1 2 3; resync; close"},
		{"nothing", ""},
	} {
		for _, mb := range diffMaxBatches {
			t.Run(fmt.Sprintf("%s/MaxBatch=%d", sc.name, mb), func(t *testing.T) {
				newQueueDiff(t, mb).run(parseScript(sc.script))
			})
		}
	}
}

func TestQueueVsRealFIFORandom(t *testing.T) {
	seed := testSeed(t)
	scripts, ops := numScripts(300), 200
	for i := range scripts {
		rng := scriptRand(seed, i)
		mb := diffMaxBatches[rng.IntN(len(diffMaxBatches))]
		script := genScript(rng, ops, genConfig{inOrder: true})
		if !t.Run(fmt.Sprintf("script%d/MaxBatch=%d", i, mb), func(t *testing.T) {
			newQueueDiff(t, mb).run(script)
		}) {
			break
		}
	}
	t.Logf("%d scripts of %d ops", scripts, ops)
}
