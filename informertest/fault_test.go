package informertest_test

// The faults of the module's reliability document that the other tests do
// not inject in the form its entry asks, each as a named test on the fake
// source, through the public Faulty wrapper and Checker.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/informertest"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// faultSeed is the seed of a fault test's plan and churn, logged so that a
// failure replays.
func faultSeed(t *testing.T, seed uint64) *rand.Rand {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d", seed)
		}
	})
	return rand.New(rand.NewPCG(seed, 0xfa17))
}

// churner makes random changes to a fake: updates, deletes and creations
// of new names, never re-using a deleted name.
type churner struct {
	fake *sourcetest.Fake[*corev1.Pod]
	rng  *rand.Rand
	live []cache.Key
	next int
}

func newChurner(fake *sourcetest.Fake[*corev1.Pod], rng *rand.Rand) *churner {
	c := &churner{fake: fake, rng: rng}
	for _, p := range fake.Items() {
		c.live = append(c.live, cache.KeyOf(p))
	}
	slices.SortFunc(c.live, func(a, b cache.Key) int { return cmpKey(a, b) })
	return c
}

func cmpKey(a, b cache.Key) int {
	if a.Namespace != b.Namespace {
		if a.Namespace < b.Namespace {
			return -1
		}
		return 1
	}
	switch {
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}

// change makes one change and returns the key of a deleted object, if it
// deleted one.
func (c *churner) change(t *testing.T) (deleted cache.Key, ok bool) {
	t.Helper()
	switch r := c.rng.IntN(10); {
	case r < 2 || len(c.live) == 0:
		c.next++
		p := it.Pod("churn", fmt.Sprintf("new-%d", c.next), nil)
		if _, err := c.fake.Create(p); err != nil {
			t.Fatal(err)
		}
		c.live = append(c.live, cache.KeyOf(p))
	case r < 8:
		k := c.live[c.rng.IntN(len(c.live))]
		p, err := c.fake.Get(k)
		if err != nil {
			t.Fatal(err)
		}
		p.Labels = map[string]string{"n": fmt.Sprint(c.rng.IntN(1 << 20))}
		if _, err := c.fake.Update(p); err != nil {
			t.Fatal(err)
		}
	default:
		i := c.rng.IntN(len(c.live))
		k := c.live[i]
		if _, err := c.fake.Delete(k); err != nil {
			t.Fatal(err)
		}
		c.live[i] = c.live[len(c.live)-1]
		c.live = c.live[:len(c.live)-1]
		return k, true
	}
	return cache.Key{}, false
}

// faultRig is an informer over a Faulty fake with a Checker's handler.
func faultRig(t *testing.T, fake *sourcetest.Fake[*corev1.Pod], fopts sourcetest.FaultOptions, iopts typed.Options[*corev1.Pod]) (*sourcetest.Faulty[*corev1.Pod], *podChecker, *typed.Informer[*corev1.Pod]) {
	t.Helper()
	faulty, err := sourcetest.NewFaulty[*corev1.Pod](fake, fopts)
	if err != nil {
		t.Fatal(err)
	}
	chk, err := informertest.NewChecker[*corev1.Pod](fake, informertest.Options[*corev1.Pod]{Faults: faulty, PollInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	iopts.ErrorHandler = chk.ErrorHandler
	inf, err := typed.NewInformer[*corev1.Pod](faulty, iopts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chk.AddHandler(inf, typed.HandlerOptions{}); err != nil {
		t.Fatal(err)
	}
	return faulty, chk, inf
}

func podsIn(ns string, n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = it.Pod(ns, fmt.Sprintf("p-%05d", i), nil)
	}
	return pods
}

// TestFault01RandomWatchCuts: fault 1. The watch of an informer over
// 10,000 pods is cut 100 times, at random events, while 2,000 changes
// happen. Converge checks I1-I4, I6, I7 and I8 (no list beyond the first:
// a cut is re-watched from the last resourceVersion); the test's leak
// check (TestMain) and the bubble check I5.
func TestFault01RandomWatchCuts(t *testing.T) {
	const objects, changes, cuts = 10000, 2000, 100
	for _, watchList := range []bool{true, false} {
		t.Run(fmt.Sprint("watchList=", watchList), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := faultSeed(t, 1)
				fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: podsIn("a", objects), NoWatchList: !watchList, Window: 100000})
				// Next calls: a streaming list's events, then one per change
				// (a cut's re-watch hands out the events after the cut only).
				base := 0
				if watchList {
					base = objects + 1 // the objects and the end bookmark
				}
				var script []sourcetest.Fault
				for _, at := range rng.Perm(changes)[:cuts] {
					script = append(script, sourcetest.Fault{Kind: sourcetest.FaultCut, Op: sourcetest.OpNext, At: base + 1 + at})
				}
				faulty, chk, inf := faultRig(t, fake, sourcetest.FaultOptions{Seed: 1, Script: script}, typed.Options[*corev1.Pod]{})
				run(t, inf)
				if err := inf.WaitForSync(t.Context()); err != nil {
					t.Fatal(err)
				}
				c := newChurner(fake, rng)
				for range changes {
					c.change(t)
					// The informer takes each event in a Next call of its
					// own, so that the script's calls are the changes'.
					time.Sleep(10 * time.Millisecond)
				}
				// The informer backs off after short watches: let it take
				// every change (and so every scripted cut) before healing.
				cutsDone := func() int {
					n := 0
					for _, r := range faulty.Log() {
						if r.Kind == sourcetest.FaultCut {
							n++
						}
					}
					return n
				}
				for start := time.Now(); cutsDone() < cuts && time.Since(start) < 24*time.Hour; {
					time.Sleep(time.Second) // virtual: a cut short watch is followed by a backoff of up to a minute
				}
				faulty.Heal()
				if err := converge(t, chk, inf); err != nil {
					t.Fatal(err)
				}
				if got := cutsDone(); got != cuts {
					t.Errorf("%d cuts happened, want %d: the test tested less than it says", got, cuts)
				}
				if st := inf.Status().Stats; st.Relists != 0 {
					t.Errorf("I8: %d relists after %d cuts, want 0 (stats %+v)", st.Relists, cuts, st)
				}
			})
		})
	}
}

// TestFault02GoneAfterCompaction: fault 2 on the fake. The watch of a
// synced informer misses every change of a gap (the events reach no
// watch: a watch that is down), among them deletes, then the history is
// compacted and the watch cut: the re-watch from the old resourceVersion
// gets 410 Gone. Exactly one relist follows (I8); every object deleted in
// the gap gives the handler exactly one Delete, marked final-state-unknown,
// carrying the last state the handler had; Converge checks I1-I4 and I6.
func TestFault02GoneAfterCompaction(t *testing.T) {
	const objects, gap = 1000, 300
	for _, watchList := range []bool{true, false} {
		t.Run(fmt.Sprint("watchList=", watchList), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := faultSeed(t, 2)
				fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: podsIn("a", objects), NoWatchList: !watchList, Window: 100000})
				_, chk, inf := faultRig(t, fake, sourcetest.FaultOptions{}, typed.Options[*corev1.Pod]{})
				rec := it.NewRecorder()
				if _, err := inf.AddHandler(rec); err != nil {
					t.Fatal(err)
				}
				run(t, inf)
				if err := inf.WaitForSync(t.Context()); err != nil {
					t.Fatal(err)
				}
				c := newChurner(fake, rng)
				for range 200 { // live changes before the gap
					c.change(t)
				}
				it.Eventually(t, "the informer has the live changes", func() bool {
					return inf.LastSyncResourceVersion() == fake.ResourceVersion()
				})
				synctest.Wait()
				before := inf.Status().Stats
				// The last state each handler had of the objects the gap deletes.
				had := map[cache.Key]string{}
				fake.DropEvents(gap)
				for range gap {
					if k, ok := c.change(t); ok {
						if evs := rec.Events(k); len(evs) > 0 { // else created in the gap
							had[k] = evs[len(evs)-1].RV
						}
					}
				}
				fake.Compact()
				fake.CutWatches()
				if len(had) == 0 {
					t.Fatal("the gap deleted nothing: the test tests nothing")
				}
				if err := converge(t, chk, inf); err != nil {
					t.Fatal(err)
				}
				after := inf.Status().Stats
				if n := after.Relists - before.Relists; n != 1 {
					t.Errorf("I8: %d relists after one 410, want exactly 1 (stats %+v)", n, after)
				}
				want, got := map[cache.Key][]informertest.Event{}, map[cache.Key][]informertest.Event{}
				for k, rv := range had {
					want[k] = []informertest.Event{{Kind: "delete", RV: rv, FSU: true}}
					var deletes []informertest.Event
					for _, e := range rec.Events(k) {
						if e.Kind == "delete" {
							deletes = append(deletes, informertest.Event{Kind: e.Kind, RV: e.RV, FSU: e.FSU})
						}
					}
					got[k] = deletes
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Deletes of the objects deleted in the gap (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// listLog is a source in front of a Faulty that records each list and
// watch request, and which of them were answered "too large resource
// version", at start or in the stream.
type listLog struct {
	*sourcetest.Faulty[*corev1.Pod]
	mu   sync.Mutex
	reqs []listReq
}

type listReq struct {
	List     bool // a LIST, or a streaming list
	RV       string
	Continue bool
	TooLarge bool
}

func isTooLarge(err error) bool {
	return err != nil && (apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) ||
		strings.Contains(err.Error(), "Too large resource version"))
}

func (l *listLog) add(r listReq) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, r)
	return len(l.reqs) - 1
}

func (l *listLog) List(ctx context.Context, opts metav1.ListOptions) (source.List[*corev1.Pod], error) {
	list, err := l.Faulty.List(ctx, opts)
	l.add(listReq{List: true, RV: opts.ResourceVersion, Continue: opts.Continue != "", TooLarge: isTooLarge(err)})
	return list, err
}

func (l *listLog) Watch(ctx context.Context, opts metav1.ListOptions) (source.Watcher[*corev1.Pod], error) {
	w, err := l.Faulty.Watch(ctx, opts)
	i := l.add(listReq{List: opts.SendInitialEvents != nil && *opts.SendInitialEvents, RV: opts.ResourceVersion, TooLarge: isTooLarge(err)})
	if err != nil {
		return nil, err
	}
	return &loggedWatch{Watcher: w, l: l, i: i}, nil
}

type loggedWatch struct {
	source.Watcher[*corev1.Pod]
	l *listLog
	i int
}

func (w *loggedWatch) Next(ctx context.Context) (source.Event[*corev1.Pod], error) {
	ev, err := w.Watcher.Next(ctx)
	if isTooLarge(err) {
		w.l.mu.Lock()
		w.l.reqs[w.i].TooLarge = true
		w.l.mu.Unlock()
	}
	return ev, err
}

// afterTooLarge returns, for each request answered too large, the request
// that followed it.
func (l *listLog) afterTooLarge() (got []listReq, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, r := range l.reqs {
		if r.TooLarge && i+1 < len(l.reqs) {
			n++
			next := l.reqs[i+1]
			next.TooLarge = false
			got = append(got, next)
		}
	}
	return got, n
}

// TestFault03TooLargeResourceVersion: fault 3. Lists and watches at a
// version are refused as "too large resource version", in each of the
// three forms the API server gives it, under random plans: the request
// after each refusal is a quorum list (RV "", from its first page), no
// more lists happen than one plus one per refusal (Converge's I8: no
// loop), and the informer converges (I1-I4, I6) while pods change.
func TestFault03TooLargeResourceVersion(t *testing.T) {
	forms, checked := map[string]int{}, 0
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := faultSeed(t, seed)
				fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: podsIn("a", 200), NoWatchList: seed%2 == 0, Window: 100000})
				faulty, err := sourcetest.NewFaulty[*corev1.Pod](fake, sourcetest.FaultOptions{
					Seed: seed, ListRate: 0.5, WatchRate: 0.5, NextRate: 0.02,
					Kinds: []sourcetest.FaultKind{sourcetest.FaultTooLarge, sourcetest.FaultCut, sourcetest.FaultGone},
				})
				if err != nil {
					t.Fatal(err)
				}
				chk, err := informertest.NewChecker[*corev1.Pod](fake, informertest.Options[*corev1.Pod]{Faults: faulty, PollInterval: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				logged := &listLog{Faulty: faulty}
				inf, err := typed.NewInformer[*corev1.Pod](logged, typed.Options[*corev1.Pod]{ErrorHandler: chk.ErrorHandler, PageSize: 50})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := chk.AddHandler(inf, typed.HandlerOptions{}); err != nil {
					t.Fatal(err)
				}
				run(t, inf)
				c := newChurner(fake, rng)
				for i := range 600 {
					c.change(t)
					if i%5 == 0 {
						time.Sleep(100 * time.Millisecond)
					}
				}
				faulty.Heal()
				if err := converge(t, chk, inf); err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, r := range faulty.Log() {
					if r.Kind == sourcetest.FaultTooLarge {
						form, _, _ := strings.Cut(r.Form, ",") // the rest says where
						forms[form]++
						n++
					}
				}
				got, refused := logged.afterTooLarge()
				var want []listReq
				for range got {
					want = append(want, listReq{List: true, RV: ""})
				}
				checked += refused
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("the requests after %d too-large answers (-want +got):\n%s", refused, diff)
				}
				t.Logf("%d too-large answers; requests %+v", n, faulty.Requests())
			})
		})
	}
	t.Logf("too-large answers by form: %v; %d followed by a request", forms, checked)
	if checked == 0 {
		t.Error("no too-large answer was followed by a request: the test tests nothing")
	}
	if len(forms) < 3 {
		t.Errorf("too-large forms seen %v, want the server's three: the plans test less than they say", forms)
	}
}

// TestFault14OddMetadata: fault 14, the metadata a server should never
// send, in a live watch event of a synced informer over 5 pods: never a
// panic, and each has the documented outcome. An object without a name is
// refused (cache.ErrNoName, reported to the ErrorHandler) and the informer
// relists: the cache holds the truth again (I1). An object of a namespaced
// type without a namespace is cached under its name alone, as the server's
// key would be. An object without a resourceVersion is cached, and the
// informer's last synced resourceVersion stays where it was (I3). (The same
// name with a new UID across a gap is TestReliabilitySameNameNewUID.)
func TestFault14OddMetadata(t *testing.T) {
	for _, tc := range []struct {
		name     string
		obj      *corev1.Pod
		wantKey  string // the extra key cached, "" for none
		wantErr  error  // reported, errors.Is
		wantRV   string // LastSyncResourceVersion after it; "" for the fake's
		relisted bool
	}{
		{"no name", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", ResourceVersion: "900"}}, "", cache.ErrNoName, "", true},
		{"no namespace", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", ResourceVersion: "900"}}, "x", nil, "900", false},
		{"no resourceVersion", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x"}}, "a/x", nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: podsIn("a", 5)})
				var mu sync.Mutex
				var errs []error
				inf, err := typed.NewInformer[*corev1.Pod](fake, typed.Options[*corev1.Pod]{ErrorHandler: func(err error) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}})
				if err != nil {
					t.Fatal(err)
				}
				rec := it.NewRecorder()
				if _, err := inf.AddHandler(rec); err != nil {
					t.Fatal(err)
				}
				run(t, inf)
				if err := inf.WaitForSync(t.Context()); err != nil {
					t.Fatal(err)
				}
				fakeRV := fake.ResourceVersion()
				fake.InjectEvent(source.Event[*corev1.Pod]{Type: watch.Added, Object: tc.obj})
				time.Sleep(time.Minute) // virtual: past any backoff
				synctest.Wait()
				var want []string
				for _, p := range fake.Items() {
					want = append(want, cache.KeyOf(p).String())
				}
				if tc.wantKey != "" {
					want = append(want, tc.wantKey)
				}
				var got []string
				for _, k := range inf.Store().ListKeys() {
					got = append(got, k.String())
				}
				slices.Sort(want)
				slices.Sort(got)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("cached keys (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(informertest.StateOf(inf.Store().List()), rec.Replay()); diff != "" {
					t.Errorf("I2: the handler's replay is not the cache (-want +got):\n%s", diff)
				}
				mu.Lock()
				reported := slices.Clone(errs)
				mu.Unlock()
				switch {
				case tc.wantErr == nil && len(reported) > 0:
					t.Errorf("errors reported %v, want none", reported)
				case tc.wantErr != nil && (len(reported) == 0 || !errors.Is(reported[0], tc.wantErr)):
					t.Errorf("errors reported %v, want one wrapping %v", reported, tc.wantErr)
				}
				wantRV := tc.wantRV
				if wantRV == "" {
					wantRV = fakeRV
				}
				if got := inf.LastSyncResourceVersion(); got != wantRV {
					t.Errorf("LastSyncResourceVersion %q, want %q", got, wantRV)
				}
				if r := inf.Status().Stats.Relists; (r > 0) != tc.relisted {
					t.Errorf("%d relists, want relisted=%v", r, tc.relisted)
				}
				rec.Check(t, informertest.StateOf(inf.Store().List()))
			})
		})
	}
}
