package fifo_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
)

// Unit tests of Queue. Every test in which a Pop may block runs in a
// synctest bubble: synctest.Wait returns once every goroutine of the
// bubble is durably blocked, which is how the tests tell "Pop is waiting"
// from "Pop has not run yet", without sleeping.

// popper pops a queue in a goroutine of the bubble.
type popper[R any] struct{ ch chan R }

func goPop[R any](pop func() R) popper[R] {
	p := popper[R]{ch: make(chan R, 1)}
	go func() { p.ch <- pop() }()
	return p
}

// blocked fails unless the pop is still waiting; call it after
// synctest.Wait.
func (p popper[R]) blocked(t *testing.T, why string) {
	t.Helper()
	select {
	case r := <-p.ch:
		t.Fatalf("%s: Pop returned %+v, want it blocked", why, r)
	default:
	}
}

// result returns what the pop returned; call it after synctest.Wait.
func (p popper[R]) result(t *testing.T, why string) R {
	t.Helper()
	select {
	case r := <-p.ch:
		return r
	default:
		t.Fatalf("%s: Pop is still blocked", why)
		panic("unreachable")
	}
}

type batch struct {
	ds  []dv
	err error
}

// popBatch pops q and copies the batch (Pop reuses its slice).
func popBatch(ctx context.Context, q *fifo.Queue[pod], reg *registry) batch {
	ds, err := q.Pop(ctx)
	return batch{reg.viewDeltas(ds), err}
}

func TestQueueOrderAndBatches(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		maxBatch, n int
		want        []int // batch sizes
	}{
		{3, 10, []int{3, 3, 3, 1}},
		{1, 3, []int{1, 1, 1}},
		{5, 5, []int{5}},
		{0, 2500, []int{1000, 1000, 500}}, // DefaultMaxBatch
		{-1, 1001, []int{1000, 1}},
	} {
		t.Run(fmt.Sprintf("MaxBatch=%d/n=%d", tc.maxBatch, tc.n), func(t *testing.T) {
			reg := newRegistry()
			q := fifo.New[pod](fifo.Options{MaxBatch: tc.maxBatch})
			var want []dv
			for i := range tc.n {
				d := delta{Type: []fifo.DeltaType{fifo.Added, fifo.Updated, fifo.Deleted}[i%3], Entry: ent(reg.pod(i % numKeys))}
				must(t, q.Push(d))
				want = append(want, reg.viewDelta(d))
			}
			if q.Len() != tc.n {
				t.Fatalf("Len() = %d, want %d", q.Len(), tc.n)
			}
			var got []dv
			var sizes []int
			for q.Len() > 0 {
				b := popBatch(ctx, q, reg)
				must(t, b.err)
				sizes = append(sizes, len(b.ds))
				got = append(got, b.ds...)
			}
			if diff := gocmp.Diff(tc.want, sizes); diff != "" {
				t.Errorf("batch sizes (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(want, got); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
		})
	}
}

// TestQueueCarriesDeltasAsIs: the queue infers nothing and changes nothing:
// no key is computed, no tombstone made, no delta merged or dropped.
func TestQueueCarriesDeltasAsIs(t *testing.T) {
	reg := newRegistry()
	p0, p1 := reg.pod(0), reg.pod(1)
	in := []delta{
		{Type: fifo.Deleted, Entry: ent(p0)},
		{Type: fifo.Deleted, Entry: ent(p0)}, // deletions do not collapse
		{Type: fifo.Deleted, Entry: entry{Key: cache.Key{Name: "other"}, Object: p1}},
		{Type: fifo.Refused, Entry: entry{Key: cache.Key{Name: "bad"}}, ResourceVersion: "8", Err: errors.New("refused")},
		{Type: fifo.Updated, Entry: entry{Object: p1}}, // no key computed
		{Type: fifo.Sync},
		{Type: fifo.Bookmark, ResourceVersion: "9"},
		{Type: fifo.ReplaceEnd, ResourceVersion: "10"}, // not checked either
		{Type: fifo.DeltaType(42)},
		{},
	}
	q := fifo.New[pod](fifo.Options{})
	must(t, q.Push(in...))
	ds, err := q.Pop(context.Background())
	must(t, err)
	if diff := gocmp.Diff(reg.viewDeltas(in), reg.viewDeltas(ds)); diff != "" {
		t.Errorf("Pop (-pushed +popped):\n%s", diff)
	}
}

func TestQueueReplaceLayout(t *testing.T) {
	reg := newRegistry()
	a, b := reg.pod(0), reg.pod(1)
	odd := entry{Key: cache.Key{Namespace: "x", Name: "y"}, Object: reg.pod(2)}
	q := fifo.New[pod](fifo.Options{})
	must(t, q.Push(delta{Type: fifo.Added, Entry: ent(a)}))
	must(t, replace(q, []entry{ent(a), ent(b), odd, ent(a)}, "7"))
	must(t, replace(q, nil, "8"))
	want := []delta{
		{Type: fifo.Added, Entry: ent(a)},
		{Type: fifo.ReplaceStart},
		{Type: fifo.Replaced, Entry: ent(a)},
		{Type: fifo.Replaced, Entry: ent(b)},
		{Type: fifo.Replaced, Entry: odd}, // the entry as given
		{Type: fifo.Replaced, Entry: ent(a)},
		{Type: fifo.ReplaceEnd, ResourceVersion: "7"},
		{Type: fifo.ReplaceStart},
		{Type: fifo.ReplaceEnd, ResourceVersion: "8"},
	}
	if q.Len() != len(want) {
		t.Fatalf("Len() = %d, want %d", q.Len(), len(want))
	}
	ds, err := q.Pop(context.Background())
	must(t, err)
	if diff := gocmp.Diff(reg.viewDeltas(want), reg.viewDeltas(ds)); diff != "" {
		t.Errorf("Pop (-want +got):\n%s", diff)
	}
}

func TestQueuePopWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := newRegistry()
		ctx := context.Background()
		q := fifo.New[pod](fifo.Options{})
		p := goPop(func() batch { return popBatch(ctx, q, reg) })
		synctest.Wait()
		p.blocked(t, "empty queue")

		d := delta{Type: fifo.Added, Entry: ent(reg.pod(0))}
		must(t, q.Push(d))
		synctest.Wait()
		got := p.result(t, "after Push")
		if got.err != nil || !gocmp.Equal(got.ds, reg.viewDeltas([]delta{d})) {
			t.Fatalf("Pop = %+v, want the pushed delta", got)
		}

		// A Push of several deltas wakes a waiting Pop with all of them.
		p = goPop(func() batch { return popBatch(ctx, q, reg) })
		synctest.Wait()
		p.blocked(t, "drained queue")
		group := []delta{{Type: fifo.ReplaceStart}, {Type: fifo.Replaced, Entry: ent(reg.pod(1))}, {Type: fifo.ReplaceEnd, ResourceVersion: "3"}}
		must(t, q.Push(group...))
		synctest.Wait()
		if got := p.result(t, "after Push of 3"); got.err != nil || len(got.ds) != 3 {
			t.Fatalf("Pop = %+v, want the 3 deltas of one Push", got)
		}
	})
}

// TestQueuePushAtomic: while a producer pushes groups of deltas, Pop
// never returns a part of a group: every batch is a multiple of the group
// size (so is MaxBatch).
func TestQueuePushAtomic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const groups, size = 2000, 5
		reg := newRegistry()
		q := fifo.New[pod](fifo.Options{MaxBatch: 4 * size})
		var want []delta
		for g := range groups {
			if g%3 == 0 { // a list: ReplaceStart, size-2 Replaced, ReplaceEnd
				var list []entry
				for k := range size - 2 {
					list = append(list, ent(reg.pod(k)))
				}
				want = append(want, delta{Type: fifo.ReplaceStart})
				for _, e := range list {
					want = append(want, delta{Type: fifo.Replaced, Entry: e})
				}
				want = append(want, delta{Type: fifo.ReplaceEnd, ResourceVersion: strconv.Itoa(g)})
				continue
			}
			for k := range size {
				want = append(want, delta{Type: fifo.Updated, Entry: ent(reg.pod(k))})
			}
		}
		go func() {
			for g := range groups {
				grp := want[g*size : (g+1)*size]
				if grp[0].Type == fifo.ReplaceStart {
					var list []entry
					for _, d := range grp[1 : size-1] {
						list = append(list, d.Entry)
					}
					_ = replace(q, list, grp[size-1].ResourceVersion)
				} else {
					_ = q.Push(grp...)
				}
				runtime.Gosched()
			}
		}()
		var got []dv
		pops := 0
		for len(got) < len(want) {
			ds, err := q.Pop(context.Background())
			must(t, err)
			pops++
			if len(ds)%size != 0 {
				t.Fatalf("Pop %d returned %d deltas: a part of a Push of %d", pops, len(ds), size)
			}
			got = append(got, reg.viewDeltas(ds)...)
		}
		if diff := gocmp.Diff(reg.viewDeltas(want), got); diff != "" {
			t.Fatalf("deltas (-want +got):\n%s", diff)
		}
		t.Logf("%d groups in %d pops", groups, pops)
	})
}

func TestQueueClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := newRegistry()
		ctx := context.Background()
		q := fifo.New[pod](fifo.Options{MaxBatch: 2})

		// A waiting Pop returns ErrClosed when the queue is closed.
		p := goPop(func() batch { return popBatch(ctx, q, reg) })
		synctest.Wait()
		p.blocked(t, "empty queue")
		q2 := fifo.New[pod](fifo.Options{})
		p2 := goPop(func() batch { return popBatch(ctx, q2, reg) })
		synctest.Wait()
		p2.blocked(t, "empty queue")
		q2.Close()
		synctest.Wait()
		if got := p2.result(t, "after Close"); !errors.Is(got.err, fifo.ErrClosed) || got.ds != nil {
			t.Fatalf("Pop = %+v, want ErrClosed", got)
		}

		// Queued deltas are drained first, then Pop returns ErrClosed.
		ds := []delta{{Type: fifo.Added, Entry: ent(reg.pod(0))}, {Type: fifo.Sync}, {Type: fifo.Deleted, Entry: ent(reg.pod(1))}}
		must(t, q.Push(ds...))
		synctest.Wait()
		first := p.result(t, "after Push")
		q.Close()
		q.Close() // idempotent
		if err := q.Push(delta{Type: fifo.Sync}); !errors.Is(err, fifo.ErrClosed) {
			t.Errorf("Push after Close: %v, want ErrClosed", err)
		}
		if err := replace(q, []entry{ent(reg.pod(2))}, "5"); !errors.Is(err, fifo.ErrClosed) {
			t.Errorf("Replace after Close: %v, want ErrClosed", err)
		}
		if q.Len() != 1 {
			t.Errorf("Len() after refused writes = %d, want 1", q.Len())
		}
		rest := popBatch(ctx, q, reg)
		if first.err != nil || rest.err != nil || !gocmp.Equal(append(first.ds, rest.ds...), reg.viewDeltas(ds)) {
			t.Errorf("drained %+v then %+v, want %v", first, rest, reg.viewDeltas(ds))
		}
		for range 2 {
			if got := popBatch(ctx, q, reg); !errors.Is(got.err, fifo.ErrClosed) || got.ds != nil {
				t.Errorf("Pop of a closed, drained queue = %+v, want ErrClosed", got)
			}
		}
	})
}

func TestQueuePopContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := newRegistry()
		q := fifo.New[pod](fifo.Options{})

		ctx, cancel := context.WithCancel(context.Background())
		p := goPop(func() batch { return popBatch(ctx, q, reg) })
		synctest.Wait()
		p.blocked(t, "empty queue")
		cancel()
		synctest.Wait()
		if got := p.result(t, "after cancel"); !errors.Is(got.err, context.Canceled) || got.ds != nil {
			t.Fatalf("Pop = %+v, want context.Canceled", got)
		}
		if got := popBatch(ctx, q, reg); !errors.Is(got.err, context.Canceled) {
			t.Fatalf("Pop with a cancelled context = %+v, want context.Canceled", got)
		}

		// A deadline: the bubble's clock advances once everything waits.
		tctx, tcancel := context.WithTimeout(context.Background(), time.Minute)
		defer tcancel()
		if got := popBatch(tctx, q, reg); !errors.Is(got.err, context.DeadlineExceeded) {
			t.Fatalf("Pop = %+v, want context.DeadlineExceeded", got)
		}

		// The queue works on after abandoned Pops.
		d := delta{Type: fifo.Added, Entry: ent(reg.pod(0))}
		must(t, q.Push(d))
		if got := popBatch(context.Background(), q, reg); got.err != nil || !gocmp.Equal(got.ds, reg.viewDeltas([]delta{d})) {
			t.Fatalf("Pop = %+v, want the pushed delta", got)
		}
	})
}

// TestQueueConcurrentProducers: producers push concurrently (single deltas,
// groups, lists) while one consumer pops; every delta comes out once, each
// producer's in its order, each group whole and contiguous. Run with -race.
func TestQueueConcurrentProducers(t *testing.T) {
	seed := testSeed(t)
	synctest.Test(t, func(t *testing.T) {
		const producers, perProducer = 6, 600
		q := fifo.New[pod](fifo.Options{MaxBatch: 7})
		reg := newRegistry()
		// Pods are made up front: the registry is not safe for
		// concurrent use. Producer i pushes objs[i] in order.
		objs := make([][]entry, producers)
		owner := map[string][2]int{} // object id -> producer, index
		for i := range objs {
			for j := range perProducer {
				e := ent(reg.pod(i))
				objs[i] = append(objs[i], e)
				owner[reg.id(e.Object)] = [2]int{i, j}
			}
		}
		var wg sync.WaitGroup
		for i := range producers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(seed, uint64(i)))
				for j := 0; j < perProducer; {
					n := min(1+rng.IntN(4), perProducer-j)
					var err error
					switch {
					case n == 1:
						err = q.Push(delta{Type: fifo.Added, Entry: objs[i][j]})
					case rng.IntN(2) == 0:
						err = replace(q, objs[i][j:j+n], "")
					default:
						var ds []delta
						for _, e := range objs[i][j : j+n] {
							ds = append(ds, delta{Type: fifo.Updated, Entry: e})
						}
						err = q.Push(ds...)
					}
					if err != nil {
						t.Errorf("producer %d: %v", i, err)
						return
					}
					j += n
				}
			})
		}
		next := make([]int, producers)
		list := -1 // while a list is open: its producer, or -2 before its first delta
		// Until every delta came out and the last list is closed: a
		// list's ReplaceEnd may come in the batch after its last item.
		for seen := 0; seen < producers*perProducer || list != -1; {
			ds, err := q.Pop(context.Background())
			must(t, err)
			for _, d := range ds {
				switch d.Type {
				case fifo.ReplaceStart:
					if list != -1 {
						t.Fatalf("ReplaceStart inside a list")
					}
					list = -2
					continue
				case fifo.ReplaceEnd:
					list = -1
					continue
				}
				o := owner[reg.id(d.Object)]
				if list == -2 {
					list = o[0]
				}
				if (list >= 0) != (d.Type == fifo.Replaced) || list >= 0 && list != o[0] {
					t.Fatalf("delta %v of producer %d, in the list of producer %d (-1: none)", reg.viewDelta(d), o[0], list)
				}
				if o[1] != next[o[0]] {
					t.Fatalf("producer %d: delta %d came out, want %d", o[0], o[1], next[o[0]])
				}
				next[o[0]]++
				seen++
			}
		}
		wg.Wait()
		if q.Len() != 0 {
			t.Fatalf("Len() = %d after every delta came out", q.Len())
		}
		q.Close()
		if _, err := q.Pop(context.Background()); !errors.Is(err, fifo.ErrClosed) {
			t.Fatalf("Pop after Close: %v", err)
		}
	})
}

func TestDeltaTypeString(t *testing.T) {
	want := map[fifo.DeltaType]string{
		fifo.Added: "Added", fifo.Updated: "Updated", fifo.Deleted: "Deleted",
		fifo.Replaced: "Replaced", fifo.Sync: "Sync", fifo.ReplaceStart: "ReplaceStart",
		fifo.ReplaceEnd: "ReplaceEnd", fifo.Bookmark: "Bookmark",
		0: "DeltaType(0)", 200: "DeltaType(200)",
	}
	for dt, s := range want {
		if got := dt.String(); got != s {
			t.Errorf("DeltaType(%d).String() = %q, want %q", uint8(dt), got, s)
		}
	}
}

// A bounded queue (Options.MaxLen) makes Push wait while it is full, until
// Pop makes room or Close is called; one Push is taken whole.
func TestQueueBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := newRegistry()
		ctx := context.Background()
		q := fifo.New[pod](fifo.Options{MaxLen: 3, MaxBatch: 2})
		must(t, q.Push(delta{Type: fifo.Sync}, delta{Type: fifo.Sync}))
		must(t, q.Push(delta{Type: fifo.Added, Entry: ent(reg.pod(0))}, delta{Type: fifo.Added, Entry: ent(reg.pod(1))})) // 2 < 3: taken whole
		if q.Len() != 4 {
			t.Fatalf("Len = %d, want 4", q.Len())
		}
		pushed := make(chan error, 1)
		go func() { pushed <- q.Push(delta{Type: fifo.Added, Entry: ent(reg.pod(2))}) }()
		synctest.Wait()
		select {
		case err := <-pushed:
			t.Fatalf("Push into a full queue returned %v, want it waiting", err)
		default:
		}
		if got := popBatch(ctx, q, reg); len(got.ds) != 2 {
			t.Fatalf("Pop = %+v", got)
		}
		synctest.Wait()
		select {
		case err := <-pushed:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("Push still waiting after Pop made room")
		}
		if q.Len() != 3 {
			t.Fatalf("Len = %d, want 3 (full again)", q.Len())
		}
		go func() { pushed <- q.Push(delta{Type: fifo.Sync}) }()
		synctest.Wait()
		q.Close()
		synctest.Wait()
		select {
		case err := <-pushed:
			if !errors.Is(err, fifo.ErrClosed) {
				t.Errorf("waiting Push after Close = %v, want ErrClosed", err)
			}
		default:
			t.Fatal("Push still waiting after Close")
		}
	})
}
