package fifo_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
)

// Reference-model tests: a script runs against a Queue or a KeyedQueue and
// against a plain model of what the package documents, and everything
// observable is compared after every op: what Pop returns (deltas by
// identity, batch sizes, Item.Initial, errors), Len, HasSynced, and the
// errors of writes (ErrClosed after Close). Scripts include close ops with
// ops after them. A pop op on an empty queue pops with a cancelled
// context: it must return context.Canceled, or ErrClosed once closed.
//
// The KeyedQueue model queues keys in slots, as the differential test
// does: the keys that one Replace (inferred deletions of known-only keys)
// or one Resync queues from the known objects are one slot, whose keys
// may leave in any order (the queue walks a map); a popped key must belong
// to the first slot, and its item must be the model's exactly.

// ---- Queue ----

type queueRunner struct {
	t     failer
	where func() string
	reg   *registry

	q        *fifo.Queue[pod]
	items    []delta // the model: every delta pushed and not popped
	maxBatch int
	closed   bool
}

func newQueueRunner(t failer, maxBatch int) *queueRunner {
	r := &queueRunner{t: t, reg: newRegistry(), q: fifo.New[pod](fifo.Options{MaxBatch: maxBatch}), maxBatch: maxBatch}
	if r.maxBatch <= 0 {
		r.maxBatch = fifo.DefaultMaxBatch
	}
	return r
}

func (r *queueRunner) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("Queue (MaxBatch %d) vs model: %s\n%s", r.maxBatch, fmt.Sprintf(format, args...), r.where())
}

func (r *queueRunner) run(ops []op) {
	r.t.Helper()
	i := 0
	r.where = func() string { return fmt.Sprintf("at op %d of script: %s", i, scriptString(ops)) }
	for ; i < len(ops); i++ {
		r.step(ops[i])
	}
}

// wantErr checks a write's error: ErrClosed after Close, else nil.
func wantErr(t failer, what string, closed bool, err error) {
	t.Helper()
	if closed && !errors.Is(err, fifo.ErrClosed) || !closed && err != nil {
		t.Fatalf("%s (closed: %v): error %v", what, closed, err)
	}
}

func (r *queueRunner) push(ds ...delta) {
	r.t.Helper()
	wantErr(r.t, "Push", r.closed, r.q.Push(ds...))
	if !r.closed {
		r.items = append(r.items, ds...)
	}
}

func (r *queueRunner) step(o op) {
	r.t.Helper()
	switch o.Kind {
	case opAdd:
		r.push(delta{Type: fifo.Added, Entry: ent(r.reg.pod(o.Key))})
	case opUpdate:
		r.push(delta{Type: fifo.Updated, Entry: ent(r.reg.pod(o.Key))})
	case opDelete:
		r.push(delta{Type: fifo.Deleted, Entry: ent(r.reg.pod(o.Key))})
	case opPush:
		var ds []delta
		for _, k := range o.List {
			ds = append(ds, delta{Type: fifo.Updated, Entry: ent(r.reg.pod(k))})
		}
		r.push(ds...)
	case opResync:
		r.push(delta{Type: fifo.Sync})
	case opBookmark:
		r.push(delta{Type: fifo.Bookmark, ResourceVersion: r.reg.rv()})
	case opReplace:
		var list []entry
		want := []delta{{Type: fifo.ReplaceStart}}
		for _, k := range o.List {
			e := ent(r.reg.pod(k))
			list = append(list, e)
			want = append(want, delta{Type: fifo.Replaced, Entry: e})
		}
		rv := r.reg.rv()
		want = append(want, delta{Type: fifo.ReplaceEnd, ResourceVersion: rv})
		wantErr(r.t, "Replace", r.closed, r.q.Replace(list, rv))
		if !r.closed {
			r.items = append(r.items, want...)
		}
	case opClose:
		r.q.Close()
		r.q.Close() // idempotent
		r.closed = true
	case opPop:
		r.pop()
	}
	if n := r.q.Len(); n != len(r.items) {
		r.fail("after %v: Len() = %d, want %d", o, n, len(r.items))
	}
}

func (r *queueRunner) pop() {
	r.t.Helper()
	if len(r.items) == 0 {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		ds, err := r.q.Pop(ctx)
		want := context.Canceled
		if r.closed {
			want = fifo.ErrClosed
		}
		if len(ds) != 0 || !errors.Is(err, want) {
			r.fail("Pop of an empty queue = %d deltas, %v; want %v", len(ds), err, want)
		}
		return
	}
	ds, err := r.q.Pop(context.Background())
	if err != nil {
		r.fail("Pop: %v", err)
	}
	n := min(len(r.items), r.maxBatch)
	if diff := gocmp.Diff(r.reg.viewDeltas(r.items[:n]), r.reg.viewDeltas(ds)); diff != "" {
		r.fail("Pop (-want +got):\n%s", diff)
	}
	r.items = r.items[n:]
}

// ---- KeyedQueue ----

type keyedModel struct {
	slots     [][]cache.Key // queued keys in order; see the file comment
	items     map[cache.Key][]delta
	known     map[cache.Key]pod // what was popped, by key
	populated bool              // a write or a Replace happened
	initial   int               // keys of the first Replace still queued
	closed    bool
}

func newKeyedModel() *keyedModel {
	return &keyedModel{items: map[cache.Key][]delta{}, known: map[cache.Key]pod{}}
}

// queue appends d to k's deltas; a newly queued key gets a slot of its own,
// or joins *run.
func (m *keyedModel) queue(run *[]cache.Key, k cache.Key, d delta) {
	ds, queued := m.items[k]
	if n := len(ds); n > 0 && ds[n-1].Type == fifo.Deleted && d.Type == fifo.Deleted {
		// Two deletions in a row collapse into one, the one with a known
		// final state if there is one.
		if ds[n-1].FinalStateUnknown {
			ds[n-1] = d
		}
		return
	}
	m.items[k] = append(ds, d)
	if queued {
		return
	}
	if run != nil {
		*run = append(*run, k)
	} else {
		m.slots = append(m.slots, []cache.Key{k})
	}
}

func (m *keyedModel) write(t fifo.DeltaType, e entry) error {
	if m.closed {
		return fifo.ErrClosed
	}
	if e.Key == (cache.Key{}) {
		e.Key = cache.KeyOf(e.Object)
	}
	m.populated = true
	_, queued := m.items[e.Key]
	_, known := m.known[e.Key]
	if t == fifo.Deleted && !queued && !known {
		return nil // the consumer never had it
	}
	m.queue(nil, e.Key, delta{Type: t, Entry: e})
	return nil
}

func (m *keyedModel) replace(list []entry) error {
	if m.closed {
		return fifo.ErrClosed
	}
	listed := map[cache.Key]bool{}
	for _, e := range list {
		if e.Key == (cache.Key{}) {
			e.Key = cache.KeyOf(e.Object)
		}
		listed[e.Key] = true
		m.queue(nil, e.Key, delta{Type: fifo.Replaced, Entry: e})
	}
	for _, k := range slices.Concat(m.slots...) { // queued keys the list lacks
		if !listed[k] {
			ds := m.items[k]
			m.queue(nil, k, delta{Type: fifo.Deleted, Entry: entry{Key: k, Object: ds[len(ds)-1].Object}, FinalStateUnknown: true})
		}
	}
	var run []cache.Key // known keys the list lacks
	for _, k := range m.sortedKnown() {
		if _, queued := m.items[k]; !queued && !listed[k] {
			m.queue(&run, k, delta{Type: fifo.Deleted, Entry: entry{Key: k, Object: m.known[k]}, FinalStateUnknown: true})
		}
	}
	if len(run) > 0 {
		m.slots = append(m.slots, run)
	}
	if !m.populated {
		m.populated = true
		m.initial = len(m.items)
	}
	return nil
}

func (m *keyedModel) resync() error {
	if m.closed {
		return fifo.ErrClosed
	}
	var run []cache.Key
	for _, k := range m.sortedKnown() {
		if _, queued := m.items[k]; !queued {
			m.queue(&run, k, delta{Type: fifo.Sync, Entry: entry{Key: k, Object: m.known[k]}})
		}
	}
	if len(run) > 0 {
		m.slots = append(m.slots, run)
	}
	return nil
}

func (m *keyedModel) sortedKnown() []cache.Key {
	return slices.SortedFunc(maps.Keys(m.known), func(a, b cache.Key) int { return cmp.Compare(a.String(), b.String()) })
}

// pop takes got, which must be in the first slot, and returns its item.
func (m *keyedModel) pop(got cache.Key) (item, error) {
	if len(m.slots) == 0 {
		return item{}, fmt.Errorf("popped %v from an empty queue", got)
	}
	head := m.slots[0]
	i := slices.Index(head, got)
	if i < 0 {
		return item{}, fmt.Errorf("popped %v, want one of %v", got, head)
	}
	if head = slices.Delete(head, i, i+1); len(head) == 0 {
		m.slots = m.slots[1:]
	} else {
		m.slots[0] = head
	}
	it := item{Key: got, Deltas: m.items[got], Initial: m.initial > 0}
	delete(m.items, got)
	if m.initial > 0 {
		m.initial--
	}
	if d := it.Newest(); d.Type == fifo.Deleted {
		delete(m.known, got)
	} else {
		m.known[got] = d.Object
	}
	return it, nil
}

type keyedRunner struct {
	t     failer
	where func() string
	reg   *registry
	q     *fifo.KeyedQueue[pod]
	m     *keyedModel
}

func newKeyedRunner(t failer) *keyedRunner {
	return &keyedRunner{t: t, reg: newRegistry(), q: fifo.NewKeyed[pod](fifo.Options{}), m: newKeyedModel()}
}

func (r *keyedRunner) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("KeyedQueue vs model: %s\n%s", fmt.Sprintf(format, args...), r.where())
}

func (r *keyedRunner) run(ops []op) {
	r.t.Helper()
	i := 0
	r.where = func() string { return fmt.Sprintf("at op %d of script: %s", i, scriptString(ops)) }
	for ; i < len(ops); i++ {
		r.step(ops[i])
	}
}

// entry returns an entry for key index k: with its key for even k, a
// literal with only the object for odd k.
func (r *keyedRunner) entry(k int) entry {
	p := r.reg.pod(k)
	if k%2 == 0 {
		return ent(p)
	}
	return entry{Object: p}
}

func (r *keyedRunner) step(o op) {
	r.t.Helper()
	check := func(what string, got, want error) {
		r.t.Helper()
		if !errors.Is(got, want) {
			r.fail("%s: error %v, want %v", what, got, want)
		}
	}
	switch o.Kind {
	case opAdd:
		e := r.entry(o.Key)
		check("Add", r.q.Add(e), r.m.write(fifo.Added, e))
	case opUpdate:
		e := r.entry(o.Key)
		check("Update", r.q.Update(e), r.m.write(fifo.Updated, e))
	case opDelete:
		e := r.entry(o.Key)
		check("Delete", r.q.Delete(e), r.m.write(fifo.Deleted, e))
	case opPush:
		for _, k := range o.List {
			e := r.entry(k)
			check("Update", r.q.Update(e), r.m.write(fifo.Updated, e))
		}
	case opReplace:
		var list []entry
		for _, k := range o.List {
			list = append(list, r.entry(k))
		}
		check("Replace", r.q.Replace(list, r.reg.rv()), r.m.replace(list))
	case opResync:
		check("Resync", r.q.Resync(), r.m.resync())
	case opClose:
		r.q.Close()
		r.q.Close()
		r.m.closed = true
	case opPop:
		r.pop()
	}
	if got, want := r.q.Len(), len(r.m.items); got != want {
		r.fail("after %v: Len() = %d, want %d", o, got, want)
	}
	if got, want := r.q.HasSynced(), r.m.populated && r.m.initial == 0; got != want {
		r.fail("after %v: HasSynced() = %v, want %v", o, got, want)
	}
}

func (r *keyedRunner) pop() {
	r.t.Helper()
	if len(r.m.items) == 0 {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		it, err := r.q.Pop(ctx)
		want := context.Canceled
		if r.m.closed {
			want = fifo.ErrClosed
		}
		if !errors.Is(err, want) || it.Key != (cache.Key{}) || it.Deltas != nil {
			r.fail("Pop of an empty queue = %v, %v; want %v", r.reg.viewItem(it), err, want)
		}
		return
	}
	got, err := r.q.Pop(context.Background())
	if err != nil {
		r.fail("Pop: %v", err)
	}
	want, err := r.m.pop(got.Key)
	if err != nil {
		r.fail("%v (item %v)", err, r.reg.viewItem(got))
	}
	if diff := gocmp.Diff(r.reg.viewItem(want), r.reg.viewItem(got)); diff != "" {
		r.fail("Pop (-want +got):\n%s", diff)
	}
	for _, d := range got.Deltas {
		if d.Key != got.Key {
			r.fail("delta %v in the item of %v", r.reg.viewDelta(d), got.Key)
		}
	}
}

// ---- tests ----

func TestQueueModel(t *testing.T) {
	seed := testSeed(t)
	scripts, ops := numScripts(300), 300
	for i := range scripts {
		rng := scriptRand(seed, i)
		mb := diffMaxBatches[rng.IntN(len(diffMaxBatches))]
		script := genScript(rng, ops, genConfig{inOrder: true, close: true})
		if !t.Run(fmt.Sprintf("script%d/MaxBatch=%d", i, mb), func(t *testing.T) {
			newQueueRunner(t, mb).run(script)
		}) {
			break
		}
	}
}

func TestKeyedQueueModel(t *testing.T) {
	seed := testSeed(t)
	scripts, ops := numScripts(300), 300
	for i := range scripts {
		script := genScript(scriptRand(seed, i), ops, genConfig{close: true})
		if !t.Run(fmt.Sprintf("script%d", i), func(t *testing.T) {
			newKeyedRunner(t).run(script)
		}) {
			break
		}
	}
}

func TestKeyedQueueModelScenarios(t *testing.T) {
	for _, sc := range keyedScenarios {
		t.Run(sc.name, func(t *testing.T) {
			newKeyedRunner(t).run(parseScript(sc.script + "; pop; pop; pop; pop; pop; pop; pop; add 0; pop"))
		})
	}
}

func TestScriptEncoding(t *testing.T) {
	seed := testSeed(t)
	for i := range 50 {
		script := genScript(scriptRand(seed, i), 100, genConfig{inOrder: true, close: true})
		if diff := gocmp.Diff(script, decodeScript(encodeScript(script))); diff != "" {
			t.Fatalf("decode(encode(script)) (-want +got):\n%s", diff)
		}
		if got := parseScript(scriptString(script)); !gocmp.Equal(script, got) {
			t.Fatalf("parseScript(scriptString(script)) = %v, want %v", got, script)
		}
	}
}
