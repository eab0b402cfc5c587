package typed_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/informertest"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

var podsResource = schema.GroupResource{Resource: "pods"}

// fakeOf returns a fake pod source holding objs, with options.
func fakeOf(opts sourcetest.FakeOptions[*corev1.Pod], objs ...*corev1.Pod) *sourcetest.Fake[*corev1.Pod] {
	opts.Objects = append(opts.Objects, objs...)
	if opts.Resource.Empty() {
		opts.Resource = podsResource
	}
	return sourcetest.NewFake(opts)
}

// churnFake makes a few changes of every kind, so convergence after a
// fault covers events that happened after it.
func churnFake(t *testing.T, fake *sourcetest.Fake[*corev1.Pod], tag string) {
	t.Helper()
	if _, err := fake.Create(it.Pod("ns-0", "new-"+tag, nil)); err != nil {
		t.Fatal(err)
	}
	items := fake.Items()
	if _, err := fake.Update(it.Pod(items[0].Namespace, items[0].Name, map[string]string{"tag": tag})); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.Delete(cache.KeyOf(items[len(items)-1])); err != nil {
		t.Fatal(err)
	}
}

// startSynced adds rec's handler (if rec is set) to inf, runs it for the
// length of the test and waits until it and the handler synced.
func startSynced(t *testing.T, inf *typed.Informer[*corev1.Pod], recs ...*informertest.Recorder[*corev1.Pod]) (stop func()) {
	t.Helper()
	var syncers []typed.Syncer
	for _, r := range recs {
		reg, err := inf.AddHandler(r)
		if err != nil {
			t.Fatal(err)
		}
		syncers = append(syncers, reg)
	}
	stop = it.Run(t, inf)
	if err := typed.WaitForCacheSync(t.Context(), append(syncers, inf)...); err != nil {
		t.Fatal(err)
	}
	return stop
}

func rvOf(p *corev1.Pod) int64 {
	n, _ := strconv.ParseInt(p.ResourceVersion, 10, 64)
	return n
}

// tracker is a handler that checks, besides the per-key invariants of its
// recorder (I3, I4), the order of its calls: first the initial Adds of its
// snapshot, each for a distinct key, then live calls only; and that it is
// never called once stopped is set (after Run returned).
type tracker struct {
	rec     *informertest.Recorder[*corev1.Pod]
	stopped *atomic.Bool

	mu          sync.Mutex
	initial     map[cache.Key]string // snapshot: key -> RV of its initial Add
	firstLiveRV int64                // RV of the first live call, 0 if none
	calls       int
	violations  []string
}

func newTracker(stopped *atomic.Bool) *tracker {
	return &tracker{rec: it.NewRecorder(), stopped: stopped, initial: map[cache.Key]string{}}
}

func (tr *tracker) note(k cache.Key, p *corev1.Pod, initial bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.calls++
	if tr.stopped != nil && tr.stopped.Load() {
		tr.violations = append(tr.violations, fmt.Sprintf("I6 %v: handler called after Run returned", k))
	}
	switch {
	case initial && tr.firstLiveRV != 0:
		tr.violations = append(tr.violations, fmt.Sprintf("I4 %v: initial Add after live calls", k))
	case initial:
		if _, dup := tr.initial[k]; dup {
			tr.violations = append(tr.violations, fmt.Sprintf("I4 %v: two initial Adds", k))
		}
		tr.initial[k] = p.ResourceVersion
	case tr.firstLiveRV == 0 && p != nil:
		tr.firstLiveRV = rvOf(p)
	}
}

func (tr *tracker) handler() handler.Funcs[*corev1.Pod] {
	h := tr.rec
	return handler.Funcs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, initial bool) {
			tr.note(cache.KeyOf(p), p, initial)
			h.OnAdd(p, initial)
		},
		UpdateFunc: func(old, cur *corev1.Pod) {
			tr.note(cache.KeyOf(cur), cur, false)
			h.OnUpdate(old, cur)
		},
		DeleteFunc: func(d handler.Deleted[*corev1.Pod]) {
			tr.note(d.Key, d.Object, false)
			h.OnDelete(d)
		},
	}
}

func (tr *tracker) problems() []string {
	tr.mu.Lock()
	out := slices.Clone(tr.violations)
	tr.mu.Unlock()
	return append(out, tr.rec.Violations()...)
}

func (tr *tracker) initialCount() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.initial)
}

func (tr *tracker) callCount() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.calls
}

// opLog is the history of the only writer of a fake: enough to rebuild
// the server's state (key -> RV) at any resourceVersion.
type opLog struct {
	seed map[cache.Key]string
	ops  []logOp
}

type logOp struct {
	rv  int64
	key cache.Key
	del bool
}

// churnOps makes n random changes to fake (adds, updates, deletes of a
// population around its initial size) and logs them; with pace > 0 it
// sleeps a millisecond every pace changes, so the changes are spread out.
func churnOps(t *testing.T, fake *sourcetest.Fake[*corev1.Pod], rng *rand.Rand, n int, log *opLog, stop <-chan struct{}, pace int) {
	var live []cache.Key
	for _, p := range fake.Items() {
		live = append(live, cache.KeyOf(p))
	}
	for i := range n {
		select {
		case <-stop:
			return
		default:
		}
		var p *corev1.Pod
		var err error
		del := false
		switch r := rng.IntN(100); {
		case r < 30 || len(live) < 10:
			p, err = fake.Create(it.Pod(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("c-%d-%d", rng.Uint32(), i), nil))
			if err == nil {
				live = append(live, cache.KeyOf(p))
			}
		case r < 75:
			k := live[rng.IntN(len(live))]
			p, err = fake.Update(it.Pod(k.Namespace, k.Name, map[string]string{"i": strconv.Itoa(i)}))
		default:
			j := rng.IntN(len(live))
			p, err = fake.Delete(live[j])
			live[j] = live[len(live)-1]
			live = live[:len(live)-1]
			del = true
		}
		if err != nil {
			t.Errorf("churn op %d: %v", i, err)
			return
		}
		if log != nil {
			log.ops = append(log.ops, logOp{rv: rvOf(p), key: cache.KeyOf(p), del: del})
		}
		if pace > 0 && i%pace == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

// seeded returns a generator seeded from the test's name and a fixed
// number, and logs the seed so a failure can be replayed.
func seeded(t testing.TB, salt uint64) *rand.Rand {
	seed := salt
	for _, c := range t.Name() {
		seed = seed*31 + uint64(c)
	}
	t.Logf("random seed %d (salt %d)", seed, salt)
	return rand.New(rand.NewPCG(seed, salt))
}
