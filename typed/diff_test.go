package typed_test

// Differential test: this module's informer and client-go's default
// informer (SharedIndexInformer, AtomicFIFO) watch the same fake server,
// which random scripts change: creates, updates, deletes, watch cuts that
// replay history, and gaps (missed events, compaction) that force a
// relist. After every step both must hold the server's state, and every
// handler must have heard, per key, the same calls.
//
// Known, documented differences are normalised before comparing, each
// counted so the test shows they happen:
//   - An object replaced under the same name by one with a new UID, found
//     by a relist: client-go calls OnUpdate(old, new) across the two UIDs;
//     this module calls OnDelete(old, final state unknown) then OnAdd(new).
//   - A DELETED event for a key the handler never had (its ADDED was lost):
//     client-go calls OnDelete; this module does not (there is nothing to
//     delete).
//
// Watches are cut only after they lasted two (virtual) seconds: client-go
// relists after a watch shorter than a second that delivered nothing,
// where this module re-watches from its resourceVersion after a backoff,
// and the two paths give different (both valid) call sequences.

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/informertest"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

var diffScripts = flag.Int("diff.scripts", 40, "differential test: number of random scripts")

// call is one handler call as both sides can record it.
type call struct {
	Kind    string // add, update, delete
	RV      string
	UID     string
	OldUID  string // update: the old object's UID
	FSU     bool
	Initial bool
}

// callLog records calls per key, for one side.
type callLog struct {
	mu   sync.Mutex
	have informertest.State // the handler's view: key -> "rv/uid"
	log  map[cache.Key][]call
}

func newCallLog() *callLog { return &callLog{have: informertest.State{}, log: map[cache.Key][]call{}} }

func (l *callLog) add(k cache.Key, c call) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch c.Kind {
	case "delete":
		delete(l.have, k)
	default:
		l.have[k] = c.RV + "/" + c.UID
	}
	l.log[k] = append(l.log[k], c)
}

// take returns and clears the calls so far.
func (l *callLog) take() map[cache.Key][]call {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.log
	l.log = map[cache.Key][]call{}
	return out
}

func (l *callLog) state() informertest.State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.have)
}

func oursHandler(l *callLog) handler.Funcs[*corev1.Pod] {
	return handler.Funcs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, initial bool) {
			l.add(cache.KeyOf(p), call{Kind: "add", RV: p.ResourceVersion, UID: string(p.UID), Initial: initial})
		},
		UpdateFunc: func(old, p *corev1.Pod) {
			l.add(cache.KeyOf(p), call{Kind: "update", RV: p.ResourceVersion, UID: string(p.UID), OldUID: string(old.UID)})
		},
		DeleteFunc: func(d handler.Deleted[*corev1.Pod]) {
			l.add(d.Key, call{Kind: "delete", RV: d.Object.ResourceVersion, UID: string(d.Object.UID), FSU: d.FinalStateUnknown})
		},
	}
}

func clientGoHandler(l *callLog) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			p := obj.(*corev1.Pod)
			l.add(cache.KeyOf(p), call{Kind: "add", RV: p.ResourceVersion, UID: string(p.UID), Initial: initial})
		},
		UpdateFunc: func(oldObj, obj any) {
			p, old := obj.(*corev1.Pod), oldObj.(*corev1.Pod)
			l.add(cache.KeyOf(p), call{Kind: "update", RV: p.ResourceVersion, UID: string(p.UID), OldUID: string(old.UID)})
		},
		DeleteFunc: func(obj any) {
			c := call{Kind: "delete"}
			p, ok := obj.(*corev1.Pod)
			if d, isTomb := obj.(toolscache.DeletedFinalStateUnknown); isTomb {
				c.FSU = true
				p, ok = d.Obj.(*corev1.Pod)
			}
			if ok && p != nil {
				c.RV, c.UID = p.ResourceVersion, string(p.UID)
				l.add(cache.KeyOf(p), c)
			}
		},
	}
}

// normalise rewrites our calls for one key into client-go's vocabulary:
// Delete(FSU) of UID u then Add of UID v becomes Update(u -> v).
func normalise(calls []call, counts map[string]int) []call {
	var out []call
	for i := 0; i < len(calls); i++ {
		c := calls[i]
		if c.Kind == "delete" && c.FSU && i+1 < len(calls) && calls[i+1].Kind == "add" && calls[i+1].UID != c.UID {
			n := calls[i+1]
			out = append(out, call{Kind: "update", RV: n.RV, UID: n.UID, OldUID: c.UID, Initial: false})
			counts["new UID under the same name: Delete+Add for client-go's Update"]++
			i++
			continue
		}
		out = append(out, c)
	}
	return out
}

// dropUnknownDeletes removes client-go's OnDelete calls for keys its
// handler did not have before the step.
func dropUnknownDeletes(calls []call, had bool, counts map[string]int) []call {
	var out []call
	for _, c := range calls {
		switch {
		case c.Kind == "delete" && !had:
			counts["OnDelete for a key the handler never had (client-go only)"]++
			continue
		case c.Kind == "delete":
			had = false
		default:
			had = true
		}
		out = append(out, c)
	}
	return out
}

func TestDifferentialAgainstClientGo(t *testing.T) {
	rng := seeded(t, 3)
	counts := map[string]int{}
	var mu sync.Mutex
	for i := range *diffScripts {
		seed := rng.Uint64()
		t.Run(fmt.Sprintf("script-%d", i), func(t *testing.T) {
			local := map[string]int{}
			synctest.Test(t, func(t *testing.T) { runDiffScript(t, seed, local) })
			mu.Lock()
			for k, v := range local {
				counts[k] += v
			}
			mu.Unlock()
			if t.Failed() {
				t.Logf("replay: go test -run 'TestDifferentialAgainstClientGo/script-%d$' ./typed/ (seed %d)", i, seed)
			}
		})
	}
	t.Logf("%d scripts; steps and normalised differences: %v", *diffScripts, counts)
	if counts["relists"] == 0 || counts["cuts"] == 0 {
		t.Errorf("the scripts made %d relists and %d cuts: the test tests little", counts["relists"], counts["cuts"])
	}
}

func runDiffScript(t *testing.T, seed uint64, counts map[string]int) {
	rng := rand.New(rand.NewPCG(seed, 11))
	var seedPods []*corev1.Pod
	for i := range 20 + rng.IntN(40) {
		seedPods = append(seedPods, it.Pod(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("p-%d", i), nil))
	}
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{Window: 100000, NoWatchList: rng.IntN(2) == 0}, seedPods...)

	ours, theirs := newCallLog(), newCallLog()
	inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{ErrorHandler: func(error) {}})
	if _, err := inf.AddHandler(oursHandler(ours)); err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)
	cg := toolscache.NewSharedIndexInformer(fake.ListerWatcher(), &corev1.Pod{}, 0, toolscache.Indexers{})
	if _, err := cg.AddEventHandler(clientGoHandler(theirs)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { cg.RunWithContext(ctx) })

	var live []cache.Key
	for _, p := range seedPods {
		live = append(live, cache.KeyOf(p))
	}
	next := len(seedPods)
	before := informertest.State{} // client-go's handler's view before the step
	step := func(what string) {
		t.Helper()
		want := informertest.StateOf(fake.Items())
		it.Eventually(t, "both converge after "+what, func() bool {
			if !maps.Equal(want, informertest.StateOf(inf.Store().List())) {
				return false
			}
			var got []*corev1.Pod
			for _, o := range cg.GetStore().List() {
				got = append(got, o.(*corev1.Pod))
			}
			return maps.Equal(want, informertest.StateOf(got)) && maps.Equal(want, ours.state()) && maps.Equal(want, theirs.state())
		})
		synctest.Wait()
		had := before
		before = theirs.state()
		oursCalls, theirCalls := ours.take(), theirs.take()
		keys := map[cache.Key]bool{}
		for k := range oursCalls {
			keys[k] = true
		}
		for k := range theirCalls {
			keys[k] = true
		}
		for k := range keys {
			a := normalise(oursCalls[k], counts)
			_, known := had[k]
			b := dropUnknownDeletes(theirCalls[k], known, counts)
			if diff := cmp.Diff(b, a); diff != "" {
				t.Fatalf("after %s, calls for %v differ (-client-go +ours):\n%s", what, k, diff)
			}
		}
	}
	step("the initial list")
	for op := range 40 + rng.IntN(40) {
		switch r := rng.IntN(100); {
		case r < 25 || len(live) < 5:
			next++
			p := it.Pod(fmt.Sprintf("ns-%d", next%3), fmt.Sprintf("p-%d", next), nil)
			if _, err := fake.Create(p); err != nil {
				t.Fatal(err)
			}
			live = append(live, cache.KeyOf(p))
		case r < 60:
			k := live[rng.IntN(len(live))]
			if _, err := fake.Update(it.Pod(k.Namespace, k.Name, map[string]string{"op": fmt.Sprint(op)})); err != nil {
				t.Fatal(err)
			}
		case r < 80:
			j := rng.IntN(len(live))
			if _, err := fake.Delete(live[j]); err != nil {
				t.Fatal(err)
			}
			live = slices.Delete(live, j, j+1)
		case r < 90:
			// A cut of watches that lasted a while: both informers re-watch
			// from their resourceVersion (client-go relists after a watch
			// shorter than a second, so the watches must be older).
			counts["cuts"]++
			time.Sleep(2 * time.Second)
			fake.CutWatches()
		default:
			// A gap: some changes reach no watch, the history is compacted
			// and the watches cut, so both informers must relist. It can
			// delete, re-create under the same name, update, and create.
			counts["relists"]++
			step("the changes before a gap")
			fake.DropEvents(1 << 20)
			for range 1 + rng.IntN(6) {
				j := rng.IntN(len(live))
				k := live[j]
				switch rng.IntN(3) {
				case 0:
					if _, err := fake.Delete(k); err != nil {
						t.Fatal(err)
					}
					if rng.IntN(2) == 0 {
						if _, err := fake.Create(it.Pod(k.Namespace, k.Name, map[string]string{"again": "1"})); err != nil {
							t.Fatal(err)
						}
					} else {
						live = slices.Delete(live, j, j+1)
					}
				case 1:
					if _, err := fake.Update(it.Pod(k.Namespace, k.Name, map[string]string{"gap": fmt.Sprint(op)})); err != nil {
						t.Fatal(err)
					}
				default:
					next++
					p := it.Pod(fmt.Sprintf("ns-%d", next%3), fmt.Sprintf("p-%d", next), nil)
					if _, err := fake.Create(p); err != nil {
						t.Fatal(err)
					}
					live = append(live, cache.KeyOf(p))
				}
			}
			fake.DropEvents(0)
			fake.Compact()
			fake.CutWatches()
			step("a relist")
			continue
		}
		if rng.IntN(8) == 0 {
			step(fmt.Sprintf("op %d", op))
		}
	}
	step("the last op")
}
