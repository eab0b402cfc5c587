package fifo_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
)

// Unit tests of KeyedQueue with explicit expectations. The differential
// test checks the same cases against DeltaFIFO; these say what the
// behaviour is.

// keyed is a KeyedQueue under test with its registry.
type keyed struct {
	t   *testing.T
	reg *registry
	q   *fifo.KeyedQueue[pod]
}

func newKeyed(t *testing.T) *keyed {
	return &keyed{t: t, reg: newRegistry(), q: fifo.NewKeyed[pod](fifo.Options{})}
}

func (k *keyed) add(i int) pod { return k.write(fifo.Added, i) }
func (k *keyed) upd(i int) pod { return k.write(fifo.Updated, i) }
func (k *keyed) del(i int) pod { return k.write(fifo.Deleted, i) }

func (k *keyed) write(t fifo.DeltaType, i int) pod {
	k.t.Helper()
	o := k.reg.pod(i)
	e := entry{Object: o}
	var err error
	switch t {
	case fifo.Added:
		err = k.q.Add(e)
	case fifo.Updated:
		err = k.q.Update(e)
	default:
		err = k.q.Delete(e)
	}
	must(k.t, err)
	return o
}

// replace lists key indexes and returns the listed objects.
func (k *keyed) replace(is ...int) []pod {
	k.t.Helper()
	var objs []pod
	var list []entry
	for _, i := range is {
		o := k.reg.pod(i)
		objs = append(objs, o)
		list = append(list, entry{Object: o})
	}
	must(k.t, k.q.Replace(list, k.reg.rv()))
	return objs
}

// pop pops one item; the queue must not be empty.
func (k *keyed) pop() iv {
	k.t.Helper()
	if k.q.Len() == 0 {
		k.t.Fatalf("pop: the queue is empty")
	}
	it, err := k.q.Pop(context.Background())
	must(k.t, err)
	return k.reg.viewItem(it)
}

// expect pops len(want) items and compares them; sorted compares them
// sorted by key (for runs queued in map order).
func (k *keyed) expect(sorted bool, want ...iv) {
	k.t.Helper()
	var got []iv
	for range want {
		got = append(got, k.pop())
	}
	if sorted {
		slices.SortFunc(got, func(a, b iv) int { return cmp.Compare(a.Key, b.Key) })
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		k.t.Fatalf("popped items (-want +got):\n%s", diff)
	}
}

func (k *keyed) empty() {
	k.t.Helper()
	if n := k.q.Len(); n != 0 {
		k.t.Fatalf("Len() = %d, want an empty queue", n)
	}
}

func (k *keyed) synced(want bool) {
	k.t.Helper()
	if got := k.q.HasSynced(); got != want {
		k.t.Fatalf("HasSynced() = %v, want %v", got, want)
	}
}

// Delta and item views for expectations.
func (k *keyed) d(t fifo.DeltaType, o pod) dv {
	return dv{Type: t.String(), Key: cache.KeyOf(o).String(), Obj: k.reg.id(o)}
}
func (k *keyed) tomb(o pod) dv { d := k.d(fifo.Deleted, o); d.FSU = true; return d }
func (k *keyed) item(o pod, initial bool, ds ...dv) iv {
	return iv{Key: cache.KeyOf(o).String(), Deltas: ds, Initial: initial}
}

func TestKeyedAccumulatesPerKey(t *testing.T) {
	k := newKeyed(t)
	a1, b1 := k.add(0), k.add(1)
	a2, a3 := k.upd(0), k.upd(0)
	if k.q.Len() != 2 {
		t.Fatalf("Len() = %d, want 2 keys", k.q.Len())
	}
	k.synced(true) // a write before any Replace
	k.expect(false,
		k.item(a1, false, k.d(fifo.Added, a1), k.d(fifo.Updated, a2), k.d(fifo.Updated, a3)),
		k.item(b1, false, k.d(fifo.Added, b1)))
	k.empty()
}

func TestKeyedEntryKey(t *testing.T) {
	k := newKeyed(t)
	o := k.reg.pod(2) // cluster-scoped: key "p2"
	must(t, k.q.Add(entry{Object: o}))
	given := cache.Key{Namespace: "given", Name: "key"}
	must(t, k.q.Update(entry{Key: given, Object: o}))
	it, err := k.q.Pop(context.Background())
	must(t, err)
	if it.Key != cache.KeyOf(o) || it.Deltas[0].Key != cache.KeyOf(o) {
		t.Fatalf("a literal entry is queued under %v / %v, want %v", it.Key, it.Deltas[0].Key, cache.KeyOf(o))
	}
	it, err = k.q.Pop(context.Background())
	must(t, err)
	if it.Key != given {
		t.Fatalf("an entry with a key is queued under %v, want %v", it.Key, given)
	}
	if d := (fifo.Item[pod]{}).Newest(); d.Type != 0 || d.Object != nil || d.Key != (cache.Key{}) {
		t.Fatalf("Newest of an empty item is not the zero Delta")
	}
}

func TestKeyedDelete(t *testing.T) {
	k := newKeyed(t)
	k.del(3) // never known nor queued: dropped
	if k.q.Len() != 0 {
		t.Fatalf("Delete of an unknown key queued something")
	}
	k.synced(true) // but it is a write, as in client-go

	a1 := k.add(0)
	a2 := k.del(0) // queued: kept
	k.expect(false, k.item(a1, false, k.d(fifo.Added, a1), k.d(fifo.Deleted, a2)))
	k.del(0) // the consumer deleted it: unknown again
	if k.q.Len() != 0 {
		t.Fatalf("Delete of a deleted key queued something")
	}

	b1 := k.add(1)
	k.expect(false, k.item(b1, false, k.d(fifo.Added, b1)))
	b2 := k.del(1) // known: kept
	b3 := k.add(1) // re-created
	k.expect(false, k.item(b1, false, k.d(fifo.Deleted, b2), k.d(fifo.Added, b3)))
	k.empty()
}

func TestKeyedCollapsesDeletions(t *testing.T) {
	t.Run("two watch deletions keep the first", func(t *testing.T) {
		k := newKeyed(t)
		a := k.add(0)
		k.expect(false, k.item(a, false, k.d(fifo.Added, a)))
		d1 := k.del(0)
		k.del(0)
		k.expect(false, k.item(a, false, k.d(fifo.Deleted, d1)))
		k.empty()
	})
	t.Run("a watch deletion then an inferred one keep the watch's", func(t *testing.T) {
		k := newKeyed(t)
		a := k.add(0)
		k.expect(false, k.item(a, false, k.d(fifo.Added, a)))
		d1 := k.del(0)
		k.replace()
		k.expect(false, k.item(a, false, k.d(fifo.Deleted, d1)))
		k.empty()
	})
	t.Run("an inferred deletion then a watch one keep the watch's", func(t *testing.T) {
		k := newKeyed(t)
		a := k.add(0)
		k.expect(false, k.item(a, false, k.d(fifo.Added, a)))
		u := k.upd(0)
		k.replace()
		d1 := k.del(0)
		k.expect(false, k.item(a, false, k.d(fifo.Updated, u), k.d(fifo.Deleted, d1)))
		k.empty()
	})
	t.Run("two inferred deletions keep the newer", func(t *testing.T) {
		k := newKeyed(t)
		a := k.add(0)
		k.expect(false, k.item(a, false, k.d(fifo.Added, a)))
		k.replace()
		k.replace()
		k.expect(false, k.item(a, false, k.tomb(a)))
		k.empty()
	})
}

// TestKeyedReplaceInfersDeletions: a list that lacks a queued key, a known
// key, or a key both known and queued yields a deletion with
// FinalStateUnknown carrying the last state the queue had.
func TestKeyedReplaceInfersDeletions(t *testing.T) {
	k := newKeyed(t)
	known, both := k.add(0), k.add(1)
	k.expect(false, k.item(known, false, k.d(fifo.Added, known)), k.item(both, false, k.d(fifo.Added, both)))
	both2 := k.upd(1)
	queued := k.add(2)
	listed := k.replace(3, 4)
	if k.q.Len() != 5 {
		t.Fatalf("Len() = %d, want 5", k.q.Len())
	}
	// Queued keys first, in their order, then the listed ones, then the
	// known-only keys.
	k.expect(false,
		k.item(both, false, k.d(fifo.Updated, both2), k.tomb(both2)),
		k.item(queued, false, k.d(fifo.Added, queued), k.tomb(queued)),
		k.item(listed[0], false, k.d(fifo.Replaced, listed[0])),
		k.item(listed[1], false, k.d(fifo.Replaced, listed[1])),
		k.item(known, false, k.tomb(known)))

	// Now only the listed keys are known.
	again := k.replace(3)
	k.expect(false, k.item(again[0], false, k.d(fifo.Replaced, again[0])), k.item(listed[1], false, k.tomb(listed[1])))
	k.empty()
}

func TestKeyedResync(t *testing.T) {
	k := newKeyed(t)
	must(t, k.q.Resync())
	if k.q.Len() != 0 {
		t.Fatalf("Resync of an empty queue queued %d keys", k.q.Len())
	}
	k.synced(false) // a resync is not a write
	objs := k.replace(0, 1, 2)
	k.expect(false,
		k.item(objs[0], true, k.d(fifo.Replaced, objs[0])),
		k.item(objs[1], true, k.d(fifo.Replaced, objs[1])),
		k.item(objs[2], true, k.d(fifo.Replaced, objs[2])))
	k.synced(true)

	must(t, k.q.Resync())
	k.expect(true, // map order
		k.item(objs[0], false, k.d(fifo.Sync, objs[0])),
		k.item(objs[1], false, k.d(fifo.Sync, objs[1])),
		k.item(objs[2], false, k.d(fifo.Sync, objs[2])))

	// A queued change is newer than the known state: no Sync for its key.
	u := k.upd(1)
	must(t, k.q.Resync())
	must(t, k.q.Resync()) // nothing more: every known key is queued now
	got := []iv{k.pop()}
	k.expect(true, k.item(objs[0], false, k.d(fifo.Sync, objs[0])), k.item(objs[2], false, k.d(fifo.Sync, objs[2])))
	k.empty()
	if diff := gocmp.Diff([]iv{k.item(u, false, k.d(fifo.Updated, u))}, got); diff != "" {
		t.Fatalf("first item after Resync (-want +got):\n%s", diff)
	}
}

func TestKeyedHasSyncedAndInitial(t *testing.T) {
	t.Run("first list with duplicate keys", func(t *testing.T) {
		k := newKeyed(t)
		k.synced(false)
		objs := k.replace(0, 1, 0)
		if k.q.Len() != 2 {
			t.Fatalf("Len() = %d, want 2 keys", k.q.Len())
		}
		k.synced(false)
		c := k.add(2)
		k.expect(false, k.item(objs[0], true, k.d(fifo.Replaced, objs[0]), k.d(fifo.Replaced, objs[2])))
		k.synced(false) // counted per key: one more
		k.expect(false, k.item(objs[1], true, k.d(fifo.Replaced, objs[1])))
		k.synced(true)
		k.expect(false, k.item(c, false, k.d(fifo.Added, c)))
		k.replace(0) // only the first Replace is initial
		if it := k.pop(); it.Initial {
			t.Fatalf("an item of a later Replace is Initial: %+v", it)
		}
	})
	t.Run("empty first list", func(t *testing.T) {
		k := newKeyed(t)
		k.replace()
		k.synced(true)
	})
	t.Run("write before the first list", func(t *testing.T) {
		k := newKeyed(t)
		a := k.add(0)
		k.synced(true)
		objs := k.replace(0, 1)
		k.synced(true)
		k.expect(false,
			k.item(a, false, k.d(fifo.Added, a), k.d(fifo.Replaced, objs[0])),
			k.item(objs[1], false, k.d(fifo.Replaced, objs[1])))
		k.empty()
	})
}

// pops is a Pop of a KeyedQueue in a goroutine of a bubble.
type pops struct {
	it  iv
	err error
}

func TestKeyedPopWaitsAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := newKeyed(t)
		ctx := context.Background()
		pop := func() pops { it, err := k.q.Pop(ctx); return pops{k.reg.viewItem(it), err} }

		p := goPop(pop)
		synctest.Wait()
		p.blocked(t, "empty queue")
		a := k.add(0)
		synctest.Wait()
		if got := p.result(t, "after Add"); got.err != nil || !gocmp.Equal(got.it, k.item(a, false, k.d(fifo.Added, a))) {
			t.Fatalf("Pop = %+v", got)
		}

		p = goPop(pop)
		synctest.Wait()
		p.blocked(t, "drained queue")
		k.replace(0, 1, 2) // wakes the Pop with a whole key
		synctest.Wait()
		if got := p.result(t, "after Replace"); got.err != nil || got.it.Key != "a/p0" {
			t.Fatalf("Pop = %+v, want a/p0", got)
		}

		// Close: writes fail, the rest drains, then ErrClosed.
		k.q.Close()
		k.q.Close()
		e := entry{Object: k.reg.pod(3)}
		for name, err := range map[string]error{
			"Add": k.q.Add(e), "Update": k.q.Update(e), "Delete": k.q.Delete(e),
			"Replace": k.q.Replace([]entry{e}, "1"), "Resync": k.q.Resync(),
		} {
			if !errors.Is(err, fifo.ErrClosed) {
				t.Errorf("%s after Close: %v, want ErrClosed", name, err)
			}
		}
		for _, want := range []string{"b/p1", "p2"} {
			if got := pop(); got.err != nil || got.it.Key != want {
				t.Fatalf("Pop after Close = %+v, want the queued %s", got, want)
			}
		}
		for range 2 {
			if got := pop(); !errors.Is(got.err, fifo.ErrClosed) || got.it.Key != "" {
				t.Fatalf("Pop of a closed, drained queue = %+v, want ErrClosed", got)
			}
		}

		// A waiting Pop returns ErrClosed when the queue is closed.
		q := fifo.NewKeyed[pod](fifo.Options{})
		p2 := goPop(func() error { _, err := q.Pop(ctx); return err })
		synctest.Wait()
		p2.blocked(t, "empty queue")
		q.Close()
		synctest.Wait()
		if err := p2.result(t, "after Close"); !errors.Is(err, fifo.ErrClosed) {
			t.Fatalf("Pop = %v, want ErrClosed", err)
		}
	})
}

func TestKeyedPopContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := fifo.NewKeyed[pod](fifo.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		p := goPop(func() error { _, err := q.Pop(ctx); return err })
		synctest.Wait()
		p.blocked(t, "empty queue")
		cancel()
		synctest.Wait()
		if err := p.result(t, "after cancel"); !errors.Is(err, context.Canceled) {
			t.Fatalf("Pop = %v, want context.Canceled", err)
		}
		reg := newRegistry()
		must(t, q.Add(entry{Object: reg.pod(0)}))
		if it, err := q.Pop(context.Background()); err != nil || it.Key.Name != "p0" {
			t.Fatalf("Pop after an abandoned Pop = %v, %v", it.Key, err)
		}
	})
}

// TestKeyedConcurrentProducers: producers write their own keys concurrently
// while a consumer pops; every key's deltas come out once, in order, and
// the consumer ends with every key's last object. Run with -race.
func TestKeyedConcurrentProducers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const producers, keysEach, writes = 4, 5, 400
		q := fifo.NewKeyed[pod](fifo.Options{})
		reg := newRegistry()
		// objs[i][n] is producer i's n-th write, to key "p<i>-<n%keysEach>".
		objs := make([][]pod, producers)
		for i := range objs {
			for n := range writes {
				o := reg.pod(0)
				o.Namespace, o.Name = "ns", "p"+strconv.Itoa(i)+"-"+strconv.Itoa(n%keysEach)
				objs[i] = append(objs[i], o)
			}
		}
		var wg sync.WaitGroup
		for i := range producers {
			wg.Go(func() {
				for n, o := range objs[i] {
					var err error
					if n < keysEach {
						err = q.Add(entry{Object: o})
					} else {
						err = q.Update(entry{Object: o})
					}
					if err != nil {
						t.Errorf("producer %d: %v", i, err)
						return
					}
				}
			})
		}
		last := map[cache.Key]int{} // key -> index of its last object seen
		index := map[pod]int{}
		for i := range objs {
			for n, o := range objs[i] {
				index[o] = n
			}
		}
		for seen := 0; seen < producers*writes; {
			it, err := q.Pop(context.Background())
			must(t, err)
			for _, d := range it.Deltas {
				n, ok := index[d.Object]
				if !ok || d.Key != it.Key || cache.KeyOf(d.Object) != it.Key {
					t.Fatalf("item %v holds a foreign delta %+v", it.Key, d.Key)
				}
				if prev, ok := last[it.Key]; ok && n != prev+keysEach || !ok && n >= keysEach {
					t.Fatalf("key %v: write %d after write %d", it.Key, n, prev)
				}
				last[it.Key] = n
				seen++
			}
		}
		wg.Wait()
		if q.Len() != 0 || len(last) != producers*keysEach {
			t.Fatalf("Len() = %d, %d keys seen", q.Len(), len(last))
		}
	})
}
