package fifo_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
)

// This file holds the op scripts shared by the reference-model test, the
// differential tests against client-go and the fuzz target, and the
// reference model itself.

// ---- ops and scripts ----

type opKind uint8

const (
	opAdd opKind = iota
	opUpdate
	opDelete
	opReplace
	opResync
	opPop      // pop one item (the differential test: one unit, see popUnit)
	opPopFail  // pop with a failing process function: the item must come back
	opPopBatch // PopBatch
	opDrain    // pop until empty
	numOpKinds
)

func (k opKind) String() string {
	return [...]string{"Add", "Update", "Delete", "Replace", "Resync", "Pop", "PopFail", "PopBatch", "Drain"}[k]
}

// numKeys keys: namespaces a and b, names p0..p3.
const numKeys = 8

type op struct {
	Kind opKind
	Key  int   // Add, Update, Delete
	List []int // Replace: keys in list order, may repeat
}

func (o op) String() string {
	switch o.Kind {
	case opAdd, opUpdate, opDelete:
		return fmt.Sprintf("%v(%v)", o.Kind, keyOfIndex(o.Key))
	case opReplace:
		var ks []string
		for _, k := range o.List {
			ks = append(ks, keyOfIndex(k).String())
		}
		return fmt.Sprintf("Replace%v", ks)
	}
	return o.Kind.String()
}

func keyOfIndex(i int) cache.Key {
	ns := "a"
	if i%2 == 1 {
		ns = "b"
	}
	return cache.Key{Namespace: ns, Name: "p" + strconv.Itoa(i/2)}
}

// genScript generates n ops. It keeps a simulated apiserver state so that
// most events are plausible (Add of an absent key, Update or Delete of a
// present one), and mixes in events the watch missed (the state changes with
// no op, so a later Replace finds vanished or new keys), arbitrary events
// (deleting an unknown key, updating a deleted one), Replaces with lists of
// several kinds, repeated Replaces, Resyncs and pops.
func genScript(rng *rand.Rand, n int) []op {
	server := map[int]bool{}
	var ops []op
	replace := func() {
		list := genList(rng, server)
		clear(server)
		for _, k := range list {
			server[k] = true
		}
		ops = append(ops, op{Kind: opReplace, List: list})
	}
	for k := range numKeys { // objects that exist before the informer starts
		server[k] = rng.IntN(2) == 0
	}
	if rng.IntN(10) < 7 {
		replace() // start with an initial list; otherwise writes come first
	}
	for len(ops) < n {
		switch r := rng.IntN(100); {
		case r < 22: // a delivered watch event
			k := rng.IntN(numKeys)
			switch {
			case !server[k]:
				server[k] = true
				ops = append(ops, op{Kind: opAdd, Key: k})
			case rng.IntN(3) == 0:
				delete(server, k)
				ops = append(ops, op{Kind: opDelete, Key: k})
			default:
				ops = append(ops, op{Kind: opUpdate, Key: k})
			}
		case r < 28: // an arbitrary event
			ops = append(ops, op{Kind: opKind(rng.IntN(3)), Key: rng.IntN(numKeys)})
		case r < 34: // a change the watch missed
			k := rng.IntN(numKeys)
			server[k] = !server[k]
		case r < 44:
			replace()
			for rng.IntN(4) == 0 {
				replace() // repeated Replaces, nothing popped in between
			}
		case r < 52:
			ops = append(ops, op{Kind: opResync})
		case r < 78:
			ops = append(ops, op{Kind: opPop})
		case r < 84:
			ops = append(ops, op{Kind: opPopFail})
		case r < 93:
			ops = append(ops, op{Kind: opPopBatch})
		default:
			ops = append(ops, op{Kind: opDrain})
		}
	}
	return ops[:n]
}

// genList returns a relist: the server state, an overlapping list, a
// disjoint one, an empty one, or one with a duplicate key.
func genList(rng *rand.Rand, server map[int]bool) []int {
	var present, absent []int
	for k := range numKeys {
		if server[k] {
			present = append(present, k)
		} else {
			absent = append(absent, k)
		}
	}
	var list []int
	switch rng.IntN(10) {
	case 0, 1, 2, 3, 4: // the server state
		list = present
	case 5, 6: // overlapping: drop some present keys, add some absent ones
		for _, k := range present {
			if rng.IntN(3) > 0 {
				list = append(list, k)
			}
		}
		for _, k := range absent {
			if rng.IntN(3) == 0 {
				list = append(list, k)
			}
		}
	case 7: // disjoint from the server state
		for _, k := range absent {
			if rng.IntN(2) == 0 {
				list = append(list, k)
			}
		}
	case 8: // empty
	case 9: // a duplicate key
		list = slices.Clone(present)
		if len(list) > 0 {
			list = append(list, list[rng.IntN(len(list))])
		}
	}
	list = slices.Clone(list)
	rng.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
	return list
}

// decodeScript turns fuzz bytes into ops. Each op is one byte b: kind
// b%numOpKinds, then f := b/numOpKinds, key f%numKeys. A Replace takes one
// more byte, a bit mask of the listed keys; they are listed starting from
// key f%numKeys (a rotation, so lists are not always sorted), and if
// (f/numKeys)%2 == 1 the first listed key is listed again at the end.
func decodeScript(data []byte) []op {
	var ops []op
	for i := 0; i < len(data); i++ {
		b := int(data[i])
		f := b / int(numOpKinds)
		o := op{Kind: opKind(b % int(numOpKinds)), Key: f % numKeys}
		if o.Kind == opReplace {
			var mask byte
			if i+1 < len(data) {
				i++
				mask = data[i]
			}
			for j := range numKeys {
				if k := (j + o.Key) % numKeys; mask&(1<<k) != 0 {
					o.List = append(o.List, k)
				}
			}
			if (f/numKeys)%2 == 1 && len(o.List) > 0 {
				o.List = append(o.List, o.List[0])
			}
			o.Key = 0
		}
		ops = append(ops, o)
	}
	return ops
}

// encodeScript is the inverse of decodeScript for writing seed corpora. It
// is lossy for Replace lists: they come back as a rotation of the sorted
// keys starting at the first listed key, with at most one duplicate.
func encodeScript(ops []op) []byte {
	var out []byte
	for _, o := range ops {
		if o.Kind != opReplace {
			out = append(out, byte(o.Key*int(numOpKinds)+int(o.Kind)))
			continue
		}
		var mask byte
		dup := 0
		for _, k := range o.List {
			if mask&(1<<k) != 0 {
				dup = 1
			}
			mask |= 1 << k
		}
		rot := 0
		if len(o.List) > 0 {
			rot = o.List[0]
		}
		out = append(out, byte((dup*numKeys+rot)*int(numOpKinds)+int(opReplace)), mask)
	}
	return out
}

// ---- objects ----

// registry makes the script's objects and names them, so that views compare
// pointer identity: a pointer the registry did not hand out shows as
// "?<key>@<rv>".
type registry struct {
	mu    sync.Mutex
	ids   map[pod]string
	twins map[pod]pod
	rv    int
}

func newRegistry() *registry { return &registry{ids: map[pod]string{}, twins: map[pod]pod{}} }

func (r *registry) obj(k int) pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rv++
	key := keyOfIndex(k)
	o := mkPod(key.Namespace, key.Name, strconv.Itoa(r.rv))
	r.ids[o] = podID(o)
	return o
}

func (r *registry) id(o pod) string {
	if o == nil {
		return "<nil>"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if id, ok := r.ids[o]; ok {
		return id
	}
	return "?" + podID(o)
}

// twin is the transform used by the script tests: a memoised copy with a
// primed RV. Transforming an object twice yields a twin's twin, rv”.
func (r *registry) twin(o pod) pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.twins[o]; ok {
		return t
	}
	t := o.DeepCopy()
	t.ResourceVersion += "'"
	r.twins[o] = t
	r.ids[t] = podID(t)
	return t
}

// countingTransform wraps twin and counts calls per input object.
func (r *registry) countingTransform(calls map[string]int) func(pod) (pod, error) {
	return func(o pod) (pod, error) {
		calls[r.id(o)]++
		return r.twin(o), nil
	}
}

// ---- the reference model ----

// mEntry is a queued item: for PerKey one per key with all its deltas, for
// InOrder one per delta.
type mEntry struct {
	key    cache.Key
	deltas []delta
	run    int // non-zero: created by the walk over KnownObjects numbered run
}

// model is the specified semantics written as plainly as possible: one slice,
// linear scans, known keys in sorted order.
type model struct {
	perKey    bool
	hasKnown  bool
	maxBatch  int
	transform func(pod) (pod, error)

	q         []mEntry
	known     map[cache.Key]pod // the consumer's store
	runs      int               // walks over KnownObjects so far
	curRun    int               // the walk in progress, or 0
	populated bool
	initial   int
	synced    bool
	closed    bool
}

func newModel(o fifo.Ordering, hasKnown bool, maxBatch int, transform func(pod) (pod, error)) *model {
	if maxBatch <= 0 {
		maxBatch = fifo.DefaultMaxBatch
	}
	return &model{perKey: o == fifo.PerKey, hasKnown: hasKnown, maxBatch: maxBatch, transform: transform, known: map[cache.Key]pod{}}
}

func (m *model) check() {
	if m.populated && m.initial == 0 {
		m.synced = true
	}
}

func (m *model) queued(k cache.Key) bool {
	for _, e := range m.q {
		if e.key == k {
			return true
		}
	}
	return false
}

// last returns the newest queued delta of k.
func (m *model) last(k cache.Key) (delta, bool) {
	for i := len(m.q) - 1; i >= 0; i-- {
		if m.q[i].key == k {
			return m.q[i].deltas[len(m.q[i].deltas)-1], true
		}
	}
	return delta{}, false
}

func (m *model) knownKeys() []cache.Key {
	var ks []cache.Key
	for k := range m.known {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b cache.Key) int { return cmp.Compare(a.String(), b.String()) })
	return ks
}

func (m *model) push(k cache.Key, d delta) {
	if m.perKey {
		for i := range m.q {
			if m.q[i].key != k {
				continue
			}
			ds := append(m.q[i].deltas, d)
			if n := len(ds); ds[n-1].Type == fifo.Deleted && ds[n-2].Type == fifo.Deleted {
				keep := ds[n-2] // the older one, unless it was inferred
				if keep.FinalStateUnknown {
					keep = ds[n-1]
				}
				ds = append(ds[:n-2], keep)
			}
			m.q[i].deltas = ds
			return
		}
	}
	m.q = append(m.q, mEntry{key: k, deltas: []delta{d}, run: m.curRun})
}

// walk runs f as one numbered walk over KnownObjects: entries it creates
// carry the walk's number (for the differential test's shadow).
func (m *model) walk(f func()) {
	m.runs++
	m.curRun = m.runs
	f()
	m.curRun = 0
}

// runLeft counts the queued entries created by walk run.
func (m *model) runLeft(run int) int {
	n := 0
	for _, e := range m.q {
		if e.run == run {
			n++
		}
	}
	return n
}

func (m *model) xform(o pod) pod {
	if m.transform == nil {
		return o
	}
	t, err := m.transform(o)
	if err != nil {
		panic(err)
	}
	return t
}

// write is Add, Update or Delete; it reports whether the write was accepted
// (false: closed).
func (m *model) write(t fifo.DeltaType, o pod) bool {
	if m.closed {
		return false
	}
	m.populated = true
	m.check()
	k := cache.KeyOf(o)
	if t == fifo.Deleted && m.perKey && m.hasKnown && !m.queued(k) && m.known[k] == nil {
		return true // neither known nor queued: ignored, as DeltaFIFO
	}
	m.push(k, delta{Type: t, Object: m.xform(o)})
	return true
}

func (m *model) replace(list []pod) bool {
	listed := map[cache.Key]bool{}
	objs := make([]pod, len(list))
	for i, o := range list {
		listed[cache.KeyOf(o)] = true
		objs[i] = m.xform(o)
	}
	// Replace keys and transforms the list before it takes the lock, so a
	// Replace refused because the queue is closed has run the transform
	// (the objects are dropped; harmless).
	if m.closed {
		return false
	}
	tomb := func(o pod) delta { return delta{Type: fifo.Deleted, Object: o, FinalStateUnknown: true} }
	if m.perKey {
		// Replaced deltas, then a tombstone for every queued key not
		// listed (with its newest object), then for every known key
		// neither listed nor queued.
		for _, o := range objs {
			m.push(cache.KeyOf(o), delta{Type: fifo.Replaced, Object: o})
		}
		for _, e := range slices.Clone(m.q) {
			if !listed[e.key] {
				last, _ := m.last(e.key)
				m.push(e.key, tomb(last.Object))
			}
		}
		if m.hasKnown {
			m.walk(func() {
				for _, k := range m.knownKeys() {
					if !listed[k] && !m.queued(k) {
						m.push(k, tomb(m.known[k]))
					}
				}
			})
		}
	} else {
		// Tombstones first: for queued keys in first-queued order unless
		// their newest delta is a deletion, then for known keys that are
		// neither listed nor queued; then the Replaced deltas.
		var order []cache.Key
		before := slices.Clone(m.q)
		for _, e := range before {
			if !slices.Contains(order, e.key) {
				order = append(order, e.key)
			}
		}
		// The shadow counts the whole block of tombstones as one walk: the
		// queued keys' order may itself come from an earlier walk.
		m.walk(func() {
			for _, k := range order {
				if last, _ := m.last(k); !listed[k] && last.Type != fifo.Deleted {
					m.push(k, tomb(last.Object))
				}
			}
			if m.hasKnown {
				for _, k := range m.knownKeys() {
					if !listed[k] && !slices.Contains(order, k) {
						m.push(k, tomb(m.known[k]))
					}
				}
			}
		})
		for _, o := range objs {
			m.push(cache.KeyOf(o), delta{Type: fifo.Replaced, Object: o})
		}
	}
	if !m.populated {
		m.populated = true
		m.initial = len(m.q)
		m.check()
	}
	return true
}

func (m *model) resync() bool {
	if !m.hasKnown {
		return true
	}
	if m.closed {
		return false
	}
	m.walk(func() {
		for _, k := range m.knownKeys() {
			if !m.queued(k) {
				m.push(k, delta{Type: fifo.Sync, Object: m.known[k]})
			}
		}
	})
	return true
}

// pop hands out up to max entries (never mixing initial and later ones); if
// fail, they stay queued.
func (m *model) pop(max int, fail bool) ([]iv, bool) {
	n := min(max, len(m.q))
	initial := m.initial > 0
	if initial {
		n = min(n, m.initial)
	}
	var out []iv
	for _, e := range m.q[:n] {
		out = append(out, m.view(e, initial))
	}
	if fail {
		return out, initial
	}
	for _, e := range m.q[:n] {
		m.apply(e)
	}
	m.q = m.q[n:]
	if initial {
		m.initial -= n
		m.check()
	}
	return out, initial
}

// popKey removes the first entry of k wherever it is: the differential
// test's shadow follows the real queue's order, which for inferred deletions
// from a map-backed KnownObjects is not the model's.
// It also returns the number of the KnownObjects walk that created the
// entry (0 if none).
func (m *model) popKey(k cache.Key) (iv, int, bool) {
	for i, e := range m.q {
		if e.key != k {
			continue
		}
		initial := m.initial > 0
		v := m.view(e, initial)
		m.apply(e)
		m.q = slices.Delete(m.q, i, i+1)
		if initial {
			m.initial--
			m.check()
		}
		return v, e.run, true
	}
	return iv{}, 0, false
}

func (m *model) apply(e mEntry) {
	for _, d := range e.deltas {
		if d.Type == fifo.Deleted {
			delete(m.known, e.key)
		} else {
			m.known[e.key] = d.Object
		}
	}
}

func (m *model) view(e mEntry, initial bool) iv {
	return viewItem(item{Key: e.key, Deltas: e.deltas}, initial, podID)
}

// ---- the model test ----

type modelRunner struct {
	t      testing.TB
	fcalls map[string]int // transform calls by the queue, per input object
	mcalls map[string]int // and by the model
	reg    *registry
	q      *queue
	store  *cache.Indexer[pod]
	m      *model
	where  func() string
}

func newModelRunner(t testing.TB, o fifo.Ordering, hasKnown bool, maxBatch int, transform bool) *modelRunner {
	r := &modelRunner{t: t, reg: newRegistry(), store: newStore(t), fcalls: map[string]int{}, mcalls: map[string]int{}}
	op := opts{Ordering: o, MaxBatch: maxBatch}
	var tf func(pod) (pod, error)
	if transform {
		tf = r.reg.countingTransform(r.mcalls)
		op.Transform = r.reg.countingTransform(r.fcalls)
	}
	if hasKnown {
		op.KnownObjects = sortedKnown{r.store}
	}
	r.q = fifo.New(op)
	r.m = newModel(o, hasKnown, maxBatch, tf)
	return r
}

// view renders with the registry so that object identity is compared.
func (r *modelRunner) views(items []item, initial bool) []iv {
	var out []iv
	for _, x := range items {
		out = append(out, viewItem(x, initial, r.reg.id))
	}
	return out
}

func (r *modelRunner) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s: %s", r.where(), fmt.Sprintf(format, args...))
}

func checkErr(accepted bool, err error) string {
	switch {
	case accepted && err != nil:
		return fmt.Sprintf("got error %v, want nil", err)
	case !accepted && !errors.Is(err, fifo.ErrClosed):
		return fmt.Sprintf("got error %v, want ErrClosed", err)
	}
	return ""
}

var errPeek = errors.New("peek")

func (r *modelRunner) step(o op) {
	r.t.Helper()
	q, m := r.q, r.m
	popN := func(batch, fail bool) {
		max := 1
		if batch {
			max = m.maxBatch
		}
		if len(m.q) == 0 {
			return
		}
		if q.Len() == 0 { // Pop would block
			r.fail("%v: queue is empty, the model has %d items", o, len(m.q))
		}
		want, _ := m.pop(max, fail)
		var got []iv
		process := func(items []item, initial bool) error {
			got = r.views(items, initial)
			if fail {
				return errPeek
			}
			for _, x := range items {
				apply(r.store, x)
			}
			return nil
		}
		var err error
		if !batch {
			err = q.Pop(context.Background(), func(x item, initial bool) error { return process([]item{x}, initial) })
		} else {
			err = q.PopBatch(context.Background(), process)
		}
		if fail != (err != nil) || (fail && !errors.Is(err, errPeek)) {
			r.fail("%v: error %v", o, err)
		}
		// The model names objects by podID; registry ids are the same
		// strings for registered objects, "?..." for foreign ones.
		if !slices.EqualFunc(want, got, ivEqual) {
			r.fail("%v: popped items mismatch (-model +fifo):\n%s", o, gocmp.Diff(want, got))
		}
	}
	switch o.Kind {
	case opAdd, opUpdate, opDelete:
		obj := r.reg.obj(o.Key)
		t := [...]fifo.DeltaType{opAdd: fifo.Added, opUpdate: fifo.Updated, opDelete: fifo.Deleted}[o.Kind]
		var err error
		switch o.Kind {
		case opAdd:
			err = q.Add(obj)
		case opUpdate:
			err = q.Update(obj)
		default:
			err = q.Delete(obj)
		}
		if s := checkErr(m.write(t, obj), err); s != "" {
			r.fail("%v: %s", o, s)
		}
	case opReplace:
		list := make([]pod, len(o.List))
		for i, k := range o.List {
			list[i] = r.reg.obj(k)
		}
		if s := checkErr(m.replace(list), q.Replace(list, "rv")); s != "" {
			r.fail("%v: %s", o, s)
		}
	case opResync:
		if s := checkErr(m.resync(), q.Resync()); s != "" {
			r.fail("%v: %s", o, s)
		}
	case opPop:
		popN(false, false)
	case opPopFail:
		popN(o.Key%2 == 0, true)
	case opPopBatch:
		popN(true, false)
	case opDrain:
		for len(m.q) > 0 {
			popN(o.Key%2 == 0, false)
		}
	}
	if got, want := q.Len(), len(m.q); got != want {
		r.fail("after %v: Len() = %d, model has %d", o, got, want)
	}
	if got, want := q.HasSynced(), m.synced; got != want {
		r.fail("after %v: HasSynced() = %v, model says %v", o, got, want)
	}
	gotStore := map[string]string{}
	for k, v := range r.store.All() {
		gotStore[k.String()] = r.reg.id(v)
	}
	wantStore := map[string]string{}
	for k, v := range m.known {
		wantStore[k.String()] = r.reg.id(v)
	}
	if !maps.Equal(wantStore, gotStore) {
		r.fail("after %v: consumer store mismatch (-model +fifo):\n%s", o, gocmp.Diff(wantStore, gotStore))
	}
	if !maps.Equal(r.mcalls, r.fcalls) {
		r.fail("after %v: transform calls mismatch (-model +fifo):\n%s", o, gocmp.Diff(r.mcalls, r.fcalls))
	}
	for id, n := range r.fcalls {
		if n != 1 {
			r.fail("after %v: %s transformed %d times", o, id, n)
		}
	}
}

// close closes the queue, checks that writes are refused, and that the
// remaining items are still handed out before ErrClosed.
func (r *modelRunner) close(rng *rand.Rand) {
	r.t.Helper()
	r.q.Close()
	r.m.closed = true
	for range 3 {
		r.step(op{Kind: opKind(rng.IntN(5)), Key: rng.IntN(numKeys), List: []int{rng.IntN(numKeys)}})
	}
	r.step(op{Kind: opDrain})
	if err := r.q.Pop(context.Background(), func(item, bool) error { return nil }); !errors.Is(err, fifo.ErrClosed) {
		r.fail("Pop on closed, drained queue: got %v, want ErrClosed", err)
	}
}

// TestModel runs random scripts against the queue and the reference model
// and compares every popped item, error, Len, HasSynced and the consumer's
// store after every op. KnownObjects (when set) yields keys in sorted order
// so that the model can predict the exact order of inferred deletions.
func TestModel(t *testing.T) {
	scripts, opsPerScript := 400, 100
	if testing.Short() {
		scripts = 50
	}
	total := 0
	for seed := range scripts {
		rng := rand.New(rand.NewPCG(uint64(seed), 0xf1f0))
		o := fifo.Ordering(seed % 2)
		hasKnown := rng.IntN(4) > 0
		maxBatch := []int{0, 1, 2, 3}[rng.IntN(4)]
		transform := rng.IntN(3) == 0
		ops := genScript(rng, opsPerScript)
		r := newModelRunner(t, o, hasKnown, maxBatch, transform)
		i := 0
		r.where = func() string {
			return fmt.Sprintf("seed %d (%s, known=%v, maxBatch=%d, transform=%v) op %d\nscript: %v",
				seed, orderingName(o), hasKnown, maxBatch, transform, i, ops[:i+1])
		}
		for i = range ops {
			r.step(ops[i])
		}
		total += len(ops)
		if rng.IntN(2) == 0 {
			r.close(rng)
		}
	}
	t.Logf("reference model: %d scripts, %d ops", scripts, total)
}
