package fifo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
)

// env is the state a table-test script runs against: the queue, the
// consumer's store (which is also the queue's KnownObjects unless a case says
// otherwise) and the items popped so far.
type env struct {
	t     *testing.T
	q     *queue
	store *cache.Indexer[pod]
	got   []iv
}

type step func(e *env)

func sAdd(o pod) step { return func(e *env) { must(e.t, e.q.Add(o)) } }
func sUpd(o pod) step { return func(e *env) { must(e.t, e.q.Update(o)) } }
func sDel(o pod) step { return func(e *env) { must(e.t, e.q.Delete(o)) } }
func sReplace(objs ...pod) step {
	return func(e *env) { must(e.t, e.q.Replace(objs, "rv")) }
}
func sResync() step { return func(e *env) { must(e.t, e.q.Resync()) } }

// sPop pops one item, applies it to the store and records it.
func sPop() step { return func(e *env) { e.got = append(e.got, popOne(e.t, e.q, e.store)) } }

// sPopFail pops one item with a failing process function: nothing is
// recorded and the item must go back to the head.
func sPopFail() step {
	return func(e *env) {
		errBoom := errors.New("boom")
		err := e.q.Pop(popCtx(e.t), func(item, bool) error { return errBoom })
		if !errors.Is(err, errBoom) {
			e.t.Fatalf("Pop with failing process: got %v, want %v", err, errBoom)
		}
	}
}

// sSynced asserts HasSynced.
func sSynced(want bool) step {
	return func(e *env) {
		e.t.Helper()
		if got := e.q.HasSynced(); got != want {
			e.t.Fatalf("after %d popped items: HasSynced() = %v, want %v", len(e.got), got, want)
		}
	}
}

// scriptCase is a table row: known objects preloaded into the consumer's
// store, steps, and the items expected (popped by the steps, then drained)
// per ordering.
type scriptCase struct {
	name    string
	known   []pod
	noKnown bool        // KnownObjects nil (the store is still the consumer's)
	ko      *fakeKnown  // KnownObjects override
	opts    func(*opts) // extra options
	steps   []step
	want    [2][]iv // indexed by fifo.Ordering
}

func runScripts(t *testing.T, cases []scriptCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			orderings(t, func(t *testing.T, o fifo.Ordering) {
				e := &env{t: t, store: newStore(t)}
				for _, k := range tc.known {
					must(t, e.store.Add(k))
				}
				op := opts{Ordering: o}
				switch {
				case tc.ko != nil:
					op.KnownObjects = *tc.ko
				case !tc.noKnown:
					op.KnownObjects = sortedKnown{e.store}
				}
				if tc.opts != nil {
					tc.opts(&op)
				}
				e.q = fifo.New(op)
				for _, s := range tc.steps {
					s(e)
				}
				e.got = append(e.got, drain(t, e.q, e.store)...)
				if diff := cmp.Diff(tc.want[o], e.got); diff != "" {
					t.Errorf("popped items mismatch (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestAccumulation(t *testing.T) {
	a1, a2, a3 := p("a", "1"), p("a", "2"), p("a", "3")
	b1, b2, c1 := p("b", "1"), p("b", "2"), p("c", "1")
	runScripts(t, []scriptCase{{
		name:  "one key: add, update, delete accumulate in arrival order",
		steps: []step{sAdd(a1), sUpd(a2), sDel(a3)},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", false, add(a1)), it("ns/a", false, upd(a2)), it("ns/a", false, del(a3))},
			fifo.PerKey:  {it("ns/a", false, add(a1), upd(a2), del(a3))},
		},
	}, {
		name:  "keys leave in first-arrival order",
		steps: []step{sAdd(a1), sAdd(b1), sUpd(a2), sAdd(c1), sUpd(b2)},
		want: [2][]iv{
			fifo.InOrder: {
				it("ns/a", false, add(a1)), it("ns/b", false, add(b1)), it("ns/a", false, upd(a2)),
				it("ns/c", false, add(c1)), it("ns/b", false, upd(b2)),
			},
			fifo.PerKey: {
				it("ns/a", false, add(a1), upd(a2)), it("ns/b", false, add(b1), upd(b2)), it("ns/c", false, add(c1)),
			},
		},
	}, {
		name:  "a delta after its key was popped starts a new item at the tail",
		steps: []step{sAdd(a1), sAdd(b1), sPop(), sUpd(a2)},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", false, add(a1)), it("ns/b", false, add(b1)), it("ns/a", false, upd(a2))},
			fifo.PerKey:  {it("ns/a", false, add(a1)), it("ns/b", false, add(b1)), it("ns/a", false, upd(a2))},
		},
	}})
}

func TestDeleteCollapse(t *testing.T) {
	a0, a1, a2, a3 := p("a", "0"), p("a", "1"), p("a", "2"), p("a", "3")
	runScripts(t, []scriptCase{{
		// DeltaFIFO keeps the older of two real deletions. RealFIFO (and so
		// InOrder) never collapses: every reported event is handed out.
		name:  "two real deletes: PerKey keeps the first",
		known: []pod{a0},
		steps: []step{sDel(a1), sDel(a2)},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", false, del(a1)), it("ns/a", false, del(a2))},
			fifo.PerKey:  {it("ns/a", false, del(a1))},
		},
	}, {
		name:  "inferred then real delete: the real one is preferred",
		known: []pod{a0},
		steps: []step{sReplace(), sDel(a1)},
		want: [2][]iv{
			// The Replace is the first write, so its tombstone starts the
			// initial list; the merged PerKey item is initial too.
			fifo.InOrder: {it("ns/a", true, tomb(a0)), it("ns/a", false, del(a1))},
			fifo.PerKey:  {it("ns/a", true, del(a1))},
		},
	}, {
		name:  "real then inferred delete: the real one is kept",
		known: []pod{a0},
		steps: []step{sDel(a1), sReplace()},
		want: [2][]iv{
			// InOrder infers no deletion for a key whose last queued delta
			// is already a deletion, as RealFIFO.
			fifo.InOrder: {it("ns/a", false, del(a1))},
			fifo.PerKey:  {it("ns/a", false, del(a1))},
		},
	}, {
		name:  "an update between deletes prevents collapsing",
		known: []pod{a0},
		steps: []step{sDel(a1), sAdd(a2), sDel(a3)},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", false, del(a1)), it("ns/a", false, add(a2)), it("ns/a", false, del(a3))},
			fifo.PerKey:  {it("ns/a", false, del(a1), add(a2), del(a3))},
		},
	}})
}

func TestReplace(t *testing.T) {
	a0, a1, a2, a3 := p("a", "0"), p("a", "1"), p("a", "2"), p("a", "3")
	b0, b1, c1 := p("b", "0"), p("b", "1"), p("c", "1")
	ghost := cache.Key{Namespace: "ns", Name: "ghost"}
	runScripts(t, []scriptCase{{
		name:  "listed objects get Replaced deltas in list order",
		steps: []step{sReplace(b1, a1, c1)},
		want: [2][]iv{
			fifo.InOrder: {it("ns/b", true, rep(b1)), it("ns/a", true, rep(a1)), it("ns/c", true, rep(c1))},
			fifo.PerKey:  {it("ns/b", true, rep(b1)), it("ns/a", true, rep(a1)), it("ns/c", true, rep(c1))},
		},
	}, {
		name:    "vanished queued key: inferred deletion with the last queued object",
		noKnown: true,
		steps:   []step{sAdd(a1), sUpd(a2), sReplace(b1)},
		want: [2][]iv{
			// InOrder queues inferred deletions before the Replaced deltas,
			// PerKey after them (as RealFIFO and DeltaFIFO do).
			fifo.InOrder: {it("ns/a", false, add(a1)), it("ns/a", false, upd(a2)), it("ns/a", false, tomb(a2)), it("ns/b", false, rep(b1))},
			fifo.PerKey:  {it("ns/a", false, add(a1), upd(a2), tomb(a2)), it("ns/b", false, rep(b1))},
		},
	}, {
		name:  "vanished known key: inferred deletion with the known object",
		known: []pod{a0, b0},
		steps: []step{sAdd(c1), sReplace(b1)},
		want: [2][]iv{
			fifo.InOrder: {it("ns/c", false, add(c1)), it("ns/c", false, tomb(c1)), it("ns/a", false, tomb(a0)), it("ns/b", false, rep(b1))},
			fifo.PerKey:  {it("ns/c", false, add(c1), tomb(c1)), it("ns/b", false, rep(b1)), it("ns/a", false, tomb(a0))},
		},
	}, {
		name:  "a queued object is newer than the known one",
		known: []pod{a0},
		steps: []step{sUpd(a1), sReplace()},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", false, upd(a1)), it("ns/a", false, tomb(a1))},
			fifo.PerKey:  {it("ns/a", false, upd(a1), tomb(a1))},
		},
	}, {
		name:  "neither queue nor KnownObjects has the object: zero object",
		ko:    &fakeKnown{objs: []pod{a0}, ghosts: []cache.Key{ghost}},
		steps: []step{sAdd(b1), sReplace(b1)},
		want: [2][]iv{
			fifo.InOrder: {it("ns/b", false, add(b1)), it("ns/a", false, tomb(a0)), it("ns/ghost", false, tomb(nil)), it("ns/b", false, rep(b1))},
			fifo.PerKey:  {it("ns/b", false, add(b1), rep(b1)), it("ns/a", false, tomb(a0)), it("ns/ghost", false, tomb(nil))},
		},
	}, {
		name:  "queued key: exactly one inferred deletion across repeated Replaces",
		steps: []step{sAdd(a1), sReplace(), sReplace(), sReplace()},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", false, add(a1)), it("ns/a", false, tomb(a1))},
			fifo.PerKey:  {it("ns/a", false, add(a1), tomb(a1))},
		},
	}, {
		name:  "known key: exactly one inferred deletion across repeated Replaces",
		known: []pod{a0},
		steps: []step{sReplace(), sReplace(b1), sReplace()},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", true, tomb(a0)), it("ns/b", false, rep(b1)), it("ns/b", false, tomb(b1))},
			fifo.PerKey:  {it("ns/a", true, tomb(a0)), it("ns/b", false, rep(b1), tomb(b1))},
		},
	}, {
		name:  "no second inferred deletion once the first was processed",
		known: []pod{a0},
		steps: []step{sReplace(), sPop(), sReplace()},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", true, tomb(a0))},
			fifo.PerKey:  {it("ns/a", true, tomb(a0))},
		},
	}, {
		name:  "deleted then re-added key: the inferred deletion carries the re-added object",
		known: []pod{a0},
		steps: []step{sDel(a1), sAdd(a2), sReplace()},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", false, del(a1)), it("ns/a", false, add(a2)), it("ns/a", false, tomb(a2))},
			fifo.PerKey:  {it("ns/a", false, del(a1), add(a2), tomb(a2))},
		},
	}, {
		name:  "deleted key listed again: no inferred deletion",
		known: []pod{a0},
		steps: []step{sDel(a1), sReplace(a3)},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", false, del(a1)), it("ns/a", false, rep(a3))},
			fifo.PerKey:  {it("ns/a", false, del(a1), rep(a3))},
		},
	}, {
		name:  "duplicate keys in one list",
		steps: []step{sReplace(a1, a2)},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", true, rep(a1)), it("ns/a", true, rep(a2))},
			fifo.PerKey:  {it("ns/a", true, rep(a1), rep(a2))},
		},
	}, {
		name:    "without KnownObjects an unqueued vanished key goes unnoticed",
		known:   []pod{a0},
		noKnown: true,
		steps:   []step{sReplace(b1)},
		want: [2][]iv{
			fifo.InOrder: {it("ns/b", true, rep(b1))},
			fifo.PerKey:  {it("ns/b", true, rep(b1))},
		},
	}})
}

func TestResync(t *testing.T) {
	a0, a1, b0, c0 := p("a", "0"), p("a", "1"), p("b", "0"), p("c", "0")
	runScripts(t, []scriptCase{{
		// Nothing was written yet, so these Syncs are not part of an
		// initial list: isInInitialList is false. (client-go passes
		// !HasSynced() instead, which is true here; an informer's cache is
		// empty before its first list, so only a pre-filled KnownObjects
		// can tell the two apart.)
		name:  "every known object with nothing queued gets a Sync",
		known: []pod{a0, b0},
		steps: []step{sResync(), sSynced(false)},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", false, syn(a0)), it("ns/b", false, syn(b0))},
			fifo.PerKey:  {it("ns/a", false, syn(a0)), it("ns/b", false, syn(b0))},
		},
	}, {
		// A queued change is newer than the store: resyncing the store's
		// copy behind it would undo it.
		name:  "a key with a queued update is skipped",
		known: []pod{a0, b0},
		steps: []step{sUpd(a1), sResync()},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", false, upd(a1)), it("ns/b", false, syn(b0))},
			fifo.PerKey:  {it("ns/a", false, upd(a1)), it("ns/b", false, syn(b0))},
		},
	}, {
		name:  "a key with a queued deletion is skipped",
		known: []pod{a0, c0},
		steps: []step{sDel(a1), sResync()},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", false, del(a1)), it("ns/c", false, syn(c0))},
			fifo.PerKey:  {it("ns/a", false, del(a1)), it("ns/c", false, syn(c0))},
		},
	}, {
		name:  "a second Resync skips the queued Sync; after processing it syncs again",
		known: []pod{a0},
		steps: []step{sAdd(b0), sResync(), sResync(), sPop(), sPop(), sResync()},
		want: [2][]iv{
			fifo.InOrder: {it("ns/b", false, add(b0)), it("ns/a", false, syn(a0)), it("ns/a", false, syn(a0)), it("ns/b", false, syn(b0))},
			fifo.PerKey:  {it("ns/b", false, add(b0)), it("ns/a", false, syn(a0)), it("ns/a", false, syn(a0)), it("ns/b", false, syn(b0))},
		},
	}, {
		name:    "without KnownObjects Resync does nothing",
		known:   []pod{a0},
		noKnown: true,
		steps:   []step{sResync()},
	}, {
		name:  "resync racing with a queued update that is popped later",
		known: []pod{a0},
		steps: []step{sUpd(a1), sResync(), sPop(), sResync()},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", false, upd(a1)), it("ns/a", false, syn(a1))},
			fifo.PerKey:  {it("ns/a", false, upd(a1)), it("ns/a", false, syn(a1))},
		},
	}})
}

func TestHasSynced(t *testing.T) {
	a1, a2, b1, c1, x0 := p("a", "1"), p("a", "2"), p("b", "1"), p("c", "1"), p("x", "0")
	runScripts(t, []scriptCase{{
		name: "false until every item of the first Replace is processed",
		steps: []step{
			sSynced(false), sReplace(a1, b1), sSynced(false), sAdd(c1),
			sPop(), sSynced(false), sPop(), sSynced(true), sPop(), sSynced(true),
		},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", true, rep(a1)), it("ns/b", true, rep(b1)), it("ns/c", false, add(c1))},
			fifo.PerKey:  {it("ns/a", true, rep(a1)), it("ns/b", true, rep(b1)), it("ns/c", false, add(c1))},
		},
	}, {
		// A consumer restarting with a non-empty store: the first list's
		// tombstones are part of the initial list.
		name:  "inferred deletions of the first Replace are initial items",
		ko:    &fakeKnown{objs: []pod{x0}},
		steps: []step{sReplace(a1), sPop(), sSynced(false), sPop(), sSynced(true)},
		want: [2][]iv{
			fifo.InOrder: {it("ns/x", true, tomb(x0)), it("ns/a", true, rep(a1))},
			fifo.PerKey:  {it("ns/a", true, rep(a1)), it("ns/x", true, tomb(x0))},
		},
	}, {
		name:  "a failed process keeps HasSynced false and the item initial",
		steps: []step{sReplace(a1), sPopFail(), sSynced(false), sPopFail(), sPop(), sSynced(true)},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", true, rep(a1))},
			fifo.PerKey:  {it("ns/a", true, rep(a1))},
		},
	}, {
		name:  "a write before any Replace makes HasSynced true",
		steps: []step{sAdd(a1), sSynced(true), sReplace(b1), sSynced(true)},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", false, add(a1)), it("ns/a", false, tomb(a1)), it("ns/b", false, rep(b1))},
			fifo.PerKey:  {it("ns/a", false, add(a1), tomb(a1)), it("ns/b", false, rep(b1))},
		},
	}, {
		// PerKey drops the deletion (neither known nor queued), but as in
		// DeltaFIFO the call still counts as the first write.
		name:  "an ignored delete before any Replace counts as a write",
		steps: []step{sDel(a1), sSynced(true)},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", false, del(a1))},
			fifo.PerKey:  nil,
		},
	}, {
		name:  "an empty first Replace syncs at once",
		steps: []step{sReplace(), sSynced(true)},
	}, {
		name:  "Resync is not a write",
		ko:    &fakeKnown{objs: []pod{x0}},
		steps: []step{sResync(), sSynced(false), sReplace(x0), sSynced(false)},
		want: [2][]iv{
			// The queued Sync is in the queue when the first Replace runs, so
			// it counts as part of the initial list (as in client-go, which
			// sets the count to the queue length).
			fifo.InOrder: {it("ns/x", true, syn(x0)), it("ns/x", true, rep(x0))},
			fifo.PerKey:  {it("ns/x", true, syn(x0), rep(x0))},
		},
	}, {
		name:  "a later Replace does not restart the initial list",
		steps: []step{sReplace(a1), sPop(), sSynced(true), sReplace(a2), sSynced(true)},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", true, rep(a1)), it("ns/a", false, rep(a2))},
			fifo.PerKey:  {it("ns/a", true, rep(a1)), it("ns/a", false, rep(a2))},
		},
	}, {
		name:  "PerKey: a delta merged into an initial item is handed out as initial",
		steps: []step{sReplace(a1, b1), sUpd(a2), sAdd(c1)},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", true, rep(a1)), it("ns/b", true, rep(b1)), it("ns/a", false, upd(a2)), it("ns/c", false, add(c1))},
			fifo.PerKey:  {it("ns/a", true, rep(a1), upd(a2)), it("ns/b", true, rep(b1)), it("ns/c", false, add(c1))},
		},
	}})
}

func TestSyncedChannel(t *testing.T) {
	orderings(t, func(t *testing.T, o fifo.Ordering) {
		q := fifo.New(opts{Ordering: o})
		select {
		case <-q.Synced():
			t.Fatal("Synced() closed before anything happened")
		default:
		}
		must(t, q.Replace([]pod{p("a", "1")}, "1"))
		select {
		case <-q.Synced():
			t.Fatal("Synced() closed before the initial list was processed")
		default:
		}
		popOne(t, q, nil)
		select {
		case <-q.Synced():
		case <-time.After(10 * time.Second):
			t.Fatal("Synced() not closed after the initial list was processed")
		}
	})
}

func TestDeleteOfUnknownObject(t *testing.T) {
	a1, b0 := p("a", "1"), p("b", "0")
	runScripts(t, []scriptCase{{
		name:  "with KnownObjects: PerKey ignores it, InOrder queues it",
		known: []pod{b0},
		steps: []step{sDel(a1)},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", false, del(a1))},
			fifo.PerKey:  nil,
		},
	}, {
		// Deliberate deviation, documented on Queue.Delete: DeltaFIFO
		// without KnownObjects drops the deletion of any key that is not
		// queued; fifo only drops deletions when it can ask KnownObjects, so
		// a consumer without a cache still sees every deletion.
		name:    "without KnownObjects: both orderings queue it",
		noKnown: true,
		steps:   []step{sDel(a1)},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", false, del(a1))},
			fifo.PerKey:  {it("ns/a", false, del(a1))},
		},
	}, {
		name:  "PerKey keeps the deletion of a queued but unknown key",
		known: []pod{b0},
		steps: []step{sAdd(a1), sDel(a1)},
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", false, add(a1)), it("ns/a", false, del(a1))},
			fifo.PerKey:  {it("ns/a", false, add(a1), del(a1))},
		},
	}})
}

func TestPopBlocksUntilWrite(t *testing.T) {
	orderings(t, func(t *testing.T, o fifo.Ordering) {
		q := fifo.New(opts{Ordering: o})
		got := make(chan iv, 1)
		errc := make(chan error, 1)
		go func() {
			errc <- q.Pop(context.Background(), func(it item, initial bool) error {
				got <- viewItem(it, initial, podID)
				return nil
			})
		}()
		select {
		case v := <-got:
			t.Fatalf("Pop returned %v from an empty queue", v)
		case <-time.After(50 * time.Millisecond):
		}
		a1 := p("a", "1")
		must(t, q.Add(a1))
		if err := <-errc; err != nil {
			t.Fatalf("Pop: %v", err)
		}
		if diff := cmp.Diff(it("ns/a", false, add(a1)), <-got); diff != "" {
			t.Errorf("popped item mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestPopContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"cancelled while waiting", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
		{"already cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, context.Canceled},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 20*time.Millisecond)
		}, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orderings(t, func(t *testing.T, o fifo.Ordering) {
				q := fifo.New(opts{Ordering: o})
				for _, batch := range []bool{false, true} {
					ctx, cancel := tc.ctx()
					var err error
					if batch {
						err = q.PopBatch(ctx, func([]item, bool) error { t.Error("process called"); return nil })
					} else {
						err = q.Pop(ctx, func(item, bool) error { t.Error("process called"); return nil })
					}
					cancel()
					if !errors.Is(err, tc.want) {
						t.Errorf("batch=%v: got error %v, want %v", batch, err, tc.want)
					}
				}
			})
		})
	}
}

func TestClose(t *testing.T) {
	orderings(t, func(t *testing.T, o fifo.Ordering) {
		t.Run("wakes a waiting Pop", func(t *testing.T) {
			q := fifo.New(opts{Ordering: o})
			errc := make(chan error, 1)
			go func() { errc <- q.Pop(context.Background(), func(item, bool) error { return nil }) }()
			time.Sleep(20 * time.Millisecond)
			q.Close()
			select {
			case err := <-errc:
				if !errors.Is(err, fifo.ErrClosed) {
					t.Fatalf("got %v, want ErrClosed", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Pop still blocked after Close")
			}
		})
		t.Run("queued items are still handed out, then ErrClosed", func(t *testing.T) {
			q := fifo.New(opts{Ordering: o})
			a1, b1 := p("a", "1"), p("b", "1")
			must(t, q.Add(a1))
			must(t, q.Add(b1))
			q.Close()
			q.Close() // idempotent
			got := []iv{popOne(t, q, nil)}
			must(t, q.PopBatch(popCtx(t), func(items []item, initial bool) error {
				for _, x := range items {
					got = append(got, viewItem(x, initial, podID))
				}
				return nil
			}))
			want := []iv{it("ns/a", false, add(a1)), it("ns/b", false, add(b1))}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("popped items mismatch (-want +got):\n%s", diff)
			}
			if err := q.Pop(context.Background(), func(item, bool) error { return nil }); !errors.Is(err, fifo.ErrClosed) {
				t.Errorf("Pop on closed empty queue: got %v, want ErrClosed", err)
			}
			if err := q.PopBatch(context.Background(), func([]item, bool) error { return nil }); !errors.Is(err, fifo.ErrClosed) {
				t.Errorf("PopBatch on closed empty queue: got %v, want ErrClosed", err)
			}
		})
		t.Run("writes fail", func(t *testing.T) {
			store := newStore(t)
			must(t, store.Add(p("k", "0")))
			q := fifo.New(opts{Ordering: o, KnownObjects: store})
			q.Close()
			for name, write := range map[string]func() error{
				"Add":     func() error { return q.Add(p("a", "1")) },
				"Update":  func() error { return q.Update(p("a", "1")) },
				"Delete":  func() error { return q.Delete(p("k", "1")) },
				"Replace": func() error { return q.Replace([]pod{p("a", "1")}, "1") },
				"Resync":  q.Resync,
			} {
				if err := write(); !errors.Is(err, fifo.ErrClosed) {
					t.Errorf("%s after Close: got %v, want ErrClosed", name, err)
				}
			}
			if n := q.Len(); n != 0 {
				t.Errorf("Len() = %d after rejected writes, want 0", n)
			}
			// Without KnownObjects, Resync is a no-op and returns nil
			// before looking at the queue's state, closed or not.
			q2 := fifo.New(opts{Ordering: o})
			q2.Close()
			if err := q2.Resync(); err != nil {
				t.Errorf("Resync without KnownObjects after Close: got %v, want nil", err)
			}
		})
	})
}

func TestProcessErrorRequeues(t *testing.T) {
	a1, a2, b1, c1, d1 := p("a", "1"), p("a", "2"), p("b", "1"), p("c", "1"), p("d", "1")
	errBoom := errors.New("boom")
	for _, tc := range []struct {
		name     string
		batch    bool
		maxBatch int
		want     [2][]iv
	}{{
		name: "Pop",
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", false, add(a1)), it("ns/b", false, add(b1)), it("ns/c", false, add(c1)), it("ns/a", false, upd(a2)), it("ns/d", false, add(d1))},
			fifo.PerKey:  {it("ns/a", false, add(a1), upd(a2)), it("ns/b", false, add(b1)), it("ns/c", false, add(c1)), it("ns/d", false, add(d1))},
		},
	}, {
		name: "PopBatch", batch: true, maxBatch: 2,
		want: [2][]iv{
			fifo.InOrder: {it("ns/a", false, add(a1)), it("ns/b", false, add(b1)), it("ns/c", false, add(c1)), it("ns/a", false, upd(a2)), it("ns/d", false, add(d1))},
			fifo.PerKey:  {it("ns/a", false, add(a1), upd(a2)), it("ns/b", false, add(b1)), it("ns/c", false, add(c1)), it("ns/d", false, add(d1))},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			orderings(t, func(t *testing.T, o fifo.Ordering) {
				q := fifo.New(opts{Ordering: o, MaxBatch: tc.maxBatch})
				for _, x := range []pod{a1, b1, c1} {
					must(t, q.Add(x))
				}
				var failed []iv
				for range 3 { // fail repeatedly: the same head comes back each time
					var seen []iv
					fail := func(items []item, initial bool) error {
						for _, x := range items {
							seen = append(seen, viewItem(x, initial, podID))
						}
						return errBoom
					}
					var err error
					if tc.batch {
						err = q.PopBatch(popCtx(t), fail)
					} else {
						err = q.Pop(popCtx(t), func(x item, initial bool) error { return fail([]item{x}, initial) })
					}
					if !errors.Is(err, errBoom) {
						t.Fatalf("got %v, want the process error", err)
					}
					if failed != nil {
						if diff := cmp.Diff(failed, seen); diff != "" {
							t.Fatalf("retry handed out different items (-first +retry):\n%s", diff)
						}
					}
					failed = seen
				}
				if q.Len() != 3 {
					t.Fatalf("Len() = %d after failed pops, want 3", q.Len())
				}
				// Newer deltas queued after the failure stay behind the
				// requeued ones.
				must(t, q.Update(a2))
				must(t, q.Add(d1))
				var got []iv
				for q.Len() > 0 {
					must(t, q.PopBatch(popCtx(t), func(items []item, initial bool) error {
						for _, x := range items {
							got = append(got, viewItem(x, initial, podID))
						}
						return nil
					}))
				}
				if diff := cmp.Diff(tc.want[o], got); diff != "" {
					t.Errorf("popped items mismatch (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestPopBatch(t *testing.T) {
	pods := func(prefix string, n int) []pod {
		out := make([]pod, n)
		for i := range out {
			out[i] = p(fmt.Sprintf("%s%d", prefix, i), "1")
		}
		return out
	}
	type batch struct {
		N       int
		Initial bool
	}
	for _, tc := range []struct {
		name     string
		maxBatch int
		initial  []pod // first Replace
		later    []pod // Adds after it
		want     [2][]batch
	}{{
		name: "up to MaxBatch, never mixing initial and later items", maxBatch: 3,
		initial: pods("i", 5), later: pods("l", 4),
		want: [2][]batch{
			fifo.InOrder: {{3, true}, {2, true}, {3, false}, {1, false}},
			fifo.PerKey:  {{3, true}, {2, true}, {3, false}, {1, false}},
		},
	}, {
		name: "the initial list ends a batch early", maxBatch: 10,
		initial: pods("i", 2), later: pods("l", 4),
		want: [2][]batch{
			fifo.InOrder: {{2, true}, {4, false}},
			fifo.PerKey:  {{2, true}, {4, false}},
		},
	}, {
		name: "MaxBatch 1", maxBatch: 1,
		initial: pods("i", 1), later: pods("l", 2),
		want: [2][]batch{
			fifo.InOrder: {{1, true}, {1, false}, {1, false}},
			fifo.PerKey:  {{1, true}, {1, false}, {1, false}},
		},
	}, {
		name:    "default MaxBatch",
		initial: pods("i", 1500), later: pods("l", 10),
		want: [2][]batch{
			fifo.InOrder: {{1000, true}, {500, true}, {10, false}},
			fifo.PerKey:  {{1000, true}, {500, true}, {10, false}},
		},
	}, {
		// Deliberate deviation: RealFIFO's PopBatch closes a batch at the
		// first repeated key; an InOrder batch may hold several deltas of
		// one key, in order. (PerKey items have distinct keys anyway.)
		name: "an InOrder batch may hold one key several times", maxBatch: 10,
		later: []pod{p("a", "1"), p("a", "2"), p("b", "1"), p("a", "3")},
		want: [2][]batch{
			fifo.InOrder: {{4, false}},
			fifo.PerKey:  {{2, false}},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			orderings(t, func(t *testing.T, o fifo.Ordering) {
				q := fifo.New(opts{Ordering: o, MaxBatch: tc.maxBatch})
				if tc.initial != nil {
					must(t, q.Replace(tc.initial, "1"))
				}
				for _, x := range tc.later {
					must(t, q.Add(x))
				}
				var got []batch
				var order []string
				for q.Len() > 0 {
					must(t, q.PopBatch(popCtx(t), func(items []item, initial bool) error {
						got = append(got, batch{len(items), initial})
						for _, x := range items {
							order = append(order, x.Key.Name)
						}
						return nil
					}))
				}
				if diff := cmp.Diff(tc.want[o], got); diff != "" {
					t.Errorf("batches mismatch (-want +got):\n%s", diff)
				}
				var wantOrder []string
				seen := map[string]bool{}
				for _, x := range append(tc.initial, tc.later...) {
					if o == fifo.PerKey && seen[x.Name] {
						continue
					}
					seen[x.Name] = true
					wantOrder = append(wantOrder, x.Name)
				}
				if diff := cmp.Diff(wantOrder, order); diff != "" {
					t.Errorf("item order mismatch (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// transformer renames the RV (rv -> rv') so that a transformed object is
// recognisable in views and a second transform would show as rv”. It counts
// calls per input object.
type transformer struct {
	calls map[string]int
	fail  map[string]error // by input podID
	nils  map[string]bool
}

func newTransformer() *transformer {
	return &transformer{calls: map[string]int{}, fail: map[string]error{}, nils: map[string]bool{}}
}

func (tr *transformer) fn(o pod) (pod, error) {
	id := podID(o)
	tr.calls[id]++
	if err := tr.fail[id]; err != nil {
		return nil, err
	}
	if tr.nils[id] {
		return nil, nil
	}
	c := o.DeepCopy()
	c.ResourceVersion += "'"
	return c, nil
}

func TestTransform(t *testing.T) {
	a1, a2, a3 := p("a", "1"), p("a", "2"), p("a", "3")
	b1, c1, k0 := p("b", "1"), p("c", "1"), p("k", "0")
	tf := func(o pod) pod { c := o.DeepCopy(); c.ResourceVersion += "'"; return c }
	orderings(t, func(t *testing.T, o fifo.Ordering) {
		t.Run("once per object entering; never for Sync or inferred deletions", func(t *testing.T) {
			store := newStore(t)
			must(t, store.Add(k0)) // already in the cache: went through the transform before
			tr := newTransformer()
			q := fifo.New(opts{Ordering: o, KnownObjects: sortedKnown{store}, Transform: tr.fn})
			must(t, q.Add(a1))
			must(t, q.Update(a2))
			must(t, q.Delete(a3))
			must(t, q.Add(c1))
			// a's last queued object is the transformed a3, k's the cached k0.
			must(t, q.Replace([]pod{b1}, "2"))
			got := drain(t, q, store)
			must(t, q.Resync()) // b1' from the store: no second transform
			got = append(got, drain(t, q, store)...)

			want := map[fifo.Ordering][]iv{
				fifo.InOrder: {
					it("ns/a", false, add(tf(a1))), it("ns/a", false, upd(tf(a2))), it("ns/a", false, del(tf(a3))),
					it("ns/c", false, add(tf(c1))), it("ns/c", false, tomb(tf(c1))), it("ns/k", false, tomb(k0)),
					it("ns/b", false, rep(tf(b1))), it("ns/b", false, syn(tf(b1))),
				},
				fifo.PerKey: {
					it("ns/a", false, add(tf(a1)), upd(tf(a2)), del(tf(a3))),
					it("ns/c", false, add(tf(c1)), tomb(tf(c1))),
					it("ns/b", false, rep(tf(b1))), it("ns/k", false, tomb(k0)),
					it("ns/b", false, syn(tf(b1))),
				},
			}[o]
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("popped items mismatch (-want +got):\n%s", diff)
			}
			wantCalls := map[string]int{"ns/a@1": 1, "ns/a@2": 1, "ns/a@3": 1, "ns/b@1": 1, "ns/c@1": 1}
			if diff := cmp.Diff(wantCalls, tr.calls); diff != "" {
				t.Errorf("transform calls mismatch (-want +got):\n%s", diff)
			}
		})
		t.Run("pointer identity of inferred deletions and Syncs", func(t *testing.T) {
			store := newStore(t)
			var out []pod
			q := fifo.New(opts{Ordering: o, KnownObjects: store, Transform: func(x pod) (pod, error) {
				c := x.DeepCopy()
				out = append(out, c)
				return c, nil
			}})
			must(t, q.Add(a1))
			must(t, q.Replace(nil, "2"))
			var objs []pod
			for q.Len() > 0 {
				must(t, q.Pop(popCtx(t), func(x item, _ bool) error {
					for _, d := range x.Deltas {
						objs = append(objs, d.Object)
					}
					return nil
				}))
			}
			if len(objs) != 2 || objs[0] != out[0] || objs[1] != out[0] {
				t.Fatalf("popped objects %v; want the transformed object %p for the Added and the inferred Deleted delta", objs, out[0])
			}
			must(t, q.Add(b1))
			popOne(t, q, store)
			must(t, q.Resync())
			must(t, q.Pop(popCtx(t), func(x item, _ bool) error {
				if x.Newest().Object != out[1] {
					t.Errorf("Sync object %p is not the stored transformed object %p", x.Newest().Object, out[1])
				}
				return nil
			}))
			if len(out) != 2 {
				t.Errorf("transform ran %d times, want 2", len(out))
			}
		})
		t.Run("PerKey ignored delete is not transformed", func(t *testing.T) {
			tr := newTransformer()
			q := fifo.New(opts{Ordering: o, KnownObjects: newStore(t), Transform: tr.fn})
			must(t, q.Delete(a1))
			want := map[fifo.Ordering]int{fifo.InOrder: 1, fifo.PerKey: 0}[o]
			if got := tr.calls["ns/a@1"]; got != want {
				t.Errorf("transform calls for an unknown deletion = %d, want %d", got, want)
			}
		})
		t.Run("an error fails the write and queues nothing", func(t *testing.T) {
			errT := errors.New("transform failed")
			for _, tc := range []struct {
				name   string
				write  func(q *queue) error
				target error
			}{
				{"Add", func(q *queue) error { return q.Add(a1) }, errT},
				{"Update", func(q *queue) error { return q.Update(a1) }, errT},
				{"Delete", func(q *queue) error { return q.Delete(a1) }, errT},
				{"Replace", func(q *queue) error { return q.Replace([]pod{b1, a1, c1}, "1") }, errT},
				{"nil result", func(q *queue) error { return q.Add(a2) }, cache.ErrNilObject},
			} {
				t.Run(tc.name, func(t *testing.T) {
					tr := newTransformer()
					tr.fail["ns/a@1"] = errT
					tr.nils["ns/a@2"] = true
					q := fifo.New(opts{Ordering: o, Transform: tr.fn})
					err := tc.write(q)
					if !errors.Is(err, tc.target) {
						t.Fatalf("got %v, want %v", err, tc.target)
					}
					if !strings.Contains(err.Error(), "transform") || !strings.Contains(err.Error(), "ns/a") {
						t.Errorf("error %q does not name the transform and the key", err)
					}
					if n := q.Len(); n != 0 {
						t.Errorf("Len() = %d after a failed write, want 0", n)
					}
				})
			}
		})
	})
}

func TestKeyErrors(t *testing.T) {
	noName := mkPod("ns", "", "1")
	badKey := errors.New("no key for you")
	for _, tc := range []struct {
		name    string
		keyFunc cache.KeyFunc[pod]
		write   func(q *queue) error
		target  error
		msg     string
	}{
		{"Add nil", nil, func(q *queue) error { return q.Add(nil) }, cache.ErrNilObject, "fifo: Added: cache: nil object"},
		{"Update nil", nil, func(q *queue) error { return q.Update(nil) }, cache.ErrNilObject, "fifo: Updated: cache: nil object"},
		{"Delete nil", nil, func(q *queue) error { return q.Delete(nil) }, cache.ErrNilObject, "fifo: Deleted: cache: nil object"},
		{"Add without name", nil, func(q *queue) error { return q.Add(noName) }, cache.ErrNoName, `fifo: Added: cache: object has no name (namespace "ns")`},
		{"Replace with a nil item", nil, func(q *queue) error { return q.Replace([]pod{p("a", "1"), nil}, "7") }, cache.ErrNilObject, `fifo: replace at "7": item 1: cache: nil object`},
		{"Replace with a nameless item", nil, func(q *queue) error { return q.Replace([]pod{noName}, "7") }, cache.ErrNoName, `fifo: replace at "7": item 0: cache: object has no name`},
		{"custom KeyFunc", func(pod) (cache.Key, error) { return cache.Key{}, badKey }, func(q *queue) error { return q.Update(p("a", "1")) }, badKey, "fifo: Updated: no key for you"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orderings(t, func(t *testing.T, o fifo.Ordering) {
				q := fifo.New(opts{Ordering: o, KeyFunc: tc.keyFunc, KnownObjects: newStore(t)})
				err := tc.write(q)
				if !errors.Is(err, tc.target) {
					t.Fatalf("got %v, want %v", err, tc.target)
				}
				if !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("error %q does not contain %q", err, tc.msg)
				}
				if n := q.Len(); n != 0 {
					t.Errorf("Len() = %d after a failed write, want 0", n)
				}
				// A write rejected for its key is not the first write: unlike
				// DeltaFIFO's Add/Update, which set populated before keying,
				// HasSynced stays false.
				if q.HasSynced() {
					t.Errorf("HasSynced() = true after a rejected write")
				}
			})
		})
	}
}

func TestDeltaTypeString(t *testing.T) {
	got := []string{}
	for _, d := range []fifo.DeltaType{fifo.Added, fifo.Updated, fifo.Deleted, fifo.Replaced, fifo.Sync, 0, 9} {
		got = append(got, d.String())
	}
	want := []string{"Added", "Updated", "Deleted", "Replaced", "Sync", "DeltaType(0)", "DeltaType(9)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DeltaType.String mismatch (-want +got):\n%s", diff)
	}
}

func TestItemNewest(t *testing.T) {
	a1, a2 := p("a", "1"), p("a", "2")
	for _, tc := range []struct {
		name string
		item item
		want delta
	}{
		{"empty", item{}, delta{}},
		{"one", item{Deltas: []delta{{Type: fifo.Added, Object: a1}}}, delta{Type: fifo.Added, Object: a1}},
		{"last wins", item{Deltas: []delta{{Type: fifo.Added, Object: a1}, {Type: fifo.Updated, Object: a2}}}, delta{Type: fifo.Updated, Object: a2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.item.Newest()); diff != "" {
				t.Errorf("Newest() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLenAndOptionsDefaults checks Len for both orderings and that the zero
// Options give an InOrder queue keyed by namespace/name.
func TestLenAndOptionsDefaults(t *testing.T) {
	q := fifo.New(opts{})
	for _, x := range []pod{p("a", "1"), p("a", "2"), mkPod("", "cluster", "1")} {
		must(t, q.Add(x))
	}
	if q.Len() != 3 {
		t.Errorf("InOrder Len() = %d, want 3", q.Len())
	}
	got := drain(t, q, nil)
	want := []iv{it("ns/a", false, add(p("a", "1"))), it("ns/a", false, add(p("a", "2"))), it("cluster", false, add(mkPod("", "cluster", "1")))}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("zero Options mismatch (-want +got):\n%s", diff)
	}
	pk := fifo.New(opts{Ordering: fifo.PerKey})
	must(t, pk.Add(p("a", "1")))
	must(t, pk.Add(p("a", "2")))
	if pk.Len() != 1 {
		t.Errorf("PerKey Len() = %d, want 1", pk.Len())
	}
}

// TestProcessPanic: a panicking process function must not wedge the queue.
// The panic goes on to the caller; the lock is released and the items go
// back to the head unchanged, as for an error, so HasSynced and
// isInInitialList are unaffected. (Before the fix the lock was leaked and
// every later write blocked forever.)
func TestProcessPanic(t *testing.T) {
	a1, b1, c1 := p("a", "1"), p("b", "1"), p("c", "1")
	for _, batch := range []bool{false, true} {
		t.Run(map[bool]string{false: "Pop", true: "PopBatch"}[batch], func(t *testing.T) {
			orderings(t, func(t *testing.T, o fifo.Ordering) {
				q := fifo.New(opts{Ordering: o})
				must(t, q.Replace([]pod{a1, b1}, "1"))
				var recovered any
				func() {
					defer func() { recovered = recover() }()
					boom := func() error { panic("handler bug") }
					if batch {
						_ = q.PopBatch(popCtx(t), func([]item, bool) error { return boom() })
					} else {
						_ = q.Pop(popCtx(t), func(item, bool) error { return boom() })
					}
				}()
				if recovered != "handler bug" {
					t.Fatalf("recovered %v, want the process func's panic", recovered)
				}
				done := make(chan error, 1)
				go func() { done <- q.Add(c1) }()
				select {
				case err := <-done:
					must(t, err)
				case <-time.After(10 * time.Second):
					t.Fatal("Add blocked after a panicking process: the queue lock was not released")
				}
				if q.HasSynced() {
					t.Error("HasSynced() = true after the initial item's process panicked")
				}
				want := []iv{it("ns/a", true, rep(a1)), it("ns/b", true, rep(b1)), it("ns/c", false, add(c1))}
				if diff := cmp.Diff(want, drain(t, q, nil)); diff != "" {
					t.Errorf("popped items after the panic mismatch (-want +got):\n%s", diff)
				}
				if !q.HasSynced() {
					t.Error("HasSynced() = false after the initial list was processed")
				}
			})
		})
	}
}

// TestRetainObjects: Item and Deltas slices are only valid during process
// (InOrder reuses them for the next pop; see Pop and PopBatch), but the
// Delta values and objects copied out stay valid.
func TestRetainObjects(t *testing.T) {
	a1, a2, b1 := p("a", "1"), p("a", "2"), p("b", "1")
	orderings(t, func(t *testing.T, o fifo.Ordering) {
		q := fifo.New(opts{Ordering: o})
		for _, x := range []pod{a1, b1, a2} {
			must(t, q.Add(x))
		}
		var kept []delta
		for q.Len() > 0 {
			must(t, q.Pop(popCtx(t), func(x item, _ bool) error {
				kept = append(kept, x.Deltas...) // copies the Delta values
				return nil
			}))
		}
		want := map[fifo.Ordering][]delta{
			fifo.InOrder: {{Type: fifo.Added, Object: a1}, {Type: fifo.Added, Object: b1}, {Type: fifo.Added, Object: a2}},
			fifo.PerKey:  {{Type: fifo.Added, Object: a1}, {Type: fifo.Added, Object: a2}, {Type: fifo.Added, Object: b1}},
		}[o]
		if diff := cmp.Diff(want, kept); diff != "" {
			t.Errorf("kept deltas mismatch (-want +got):\n%s", diff)
		}
	})
}

// A Transform that panics fails the write with ErrTransformPanic, queues
// nothing and leaves the queue usable.
func TestTransformPanicIsAnError(t *testing.T) {
	for _, o := range []fifo.Ordering{fifo.InOrder, fifo.PerKey} {
		q := fifo.New(fifo.Options[*corev1.Pod]{Ordering: o, Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
			if p.Name == "bad" {
				panic("transform bug")
			}
			return p, nil
		}})
		bad := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "bad"}}
		good := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "good"}}
		if err := q.Add(bad); !errors.Is(err, fifo.ErrTransformPanic) {
			t.Errorf("ordering %v: Add(bad) = %v, want ErrTransformPanic", o, err)
		}
		if err := q.Replace([]*corev1.Pod{good, bad}, "1"); !errors.Is(err, fifo.ErrTransformPanic) {
			t.Errorf("ordering %v: Replace = %v, want ErrTransformPanic", o, err)
		}
		if err := q.Add(good); err != nil {
			t.Fatal(err)
		}
		if n := q.Len(); n != 1 {
			t.Errorf("ordering %v: Len = %d, want 1 (only good)", o, n)
		}
	}
}
