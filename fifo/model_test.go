package fifo_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/typedinformer/informer/fifo"
)

// Reference-model tests: a script runs against a Queue and against a plain
// model of what the package documents, and everything
// observable is compared after every op: what Pop returns (deltas by
// identity, batch sizes, Item.Initial, errors), Len, HasSynced, and the
// errors of writes (ErrClosed after Close). Scripts include close ops with
// ops after them. A pop op on an empty queue pops with a cancelled
// context: it must return context.Canceled, or ErrClosed once closed.

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
		wantErr(r.t, "Replace", r.closed, replace(r.q, list, rv))
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
