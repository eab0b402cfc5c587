package informertest_test

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// The soak's knobs: make soak sets them; a plain go test runs a short
// soak.
var (
	soakPlans    = flag.Int("soak.plans", 2, "number of random fault plans the soak runs")
	soakDuration = flag.Duration("soak.duration", 0, "stop starting plans after this much real time (0: no bound)")
	soakObjects  = flag.Int("soak.objects", 10000, "objects the fake starts with")
	soakChanges  = flag.Int("soak.changes", 2000, "changes per plan while the faults happen")
	soakSeed     = flag.Uint64("soak.seed", 0, "seed of the first plan (0: from the clock); plan i uses seed+i")
	soakVerbose  = flag.Bool("soak.v", false, "log every plan's fault log")
	soakCoalesce = flag.Bool("soak.coalesce", true, "add a CoalesceByKey handler")
)

// soakTotals add up what the plans did.
type soakTotals struct {
	plans, calls, events, changes, faults, divergences int
	kinds                                              map[sourcetest.FaultKind]int
	lists, relists                                     int
}

// TestSoak runs random fault plans, each in a bubble of its own (time is
// virtual: backoffs, delays and stalls cost no real time): an informer
// over a Faulty fake of -soak.objects pods, with four handlers (an
// unbounded one, a small blocking one, a coalescing one unless
// -soak.coalesce=false, and one added in the middle of the faults), while -soak.changes changes (updates, deletes, re-creations
// with a new UID, compactions, bookmarks) happen; then the faults heal
// and the Checker checks I1-I4 and I6-I8. A divergence fails the test
// with the invariant, the diff and the seed to replay it with
// (-soak.seed=<seed> -soak.plans=1).
func TestSoak(t *testing.T) {
	seed := *soakSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("soak: %d plans (bound %v), %d objects, %d changes each, first seed %d", *soakPlans, *soakDuration, *soakObjects, *soakChanges, seed)
	tot := soakTotals{kinds: map[sourcetest.FaultKind]int{}}
	start := time.Now()
	for i := range *soakPlans {
		if *soakDuration > 0 && time.Since(start) > *soakDuration {
			break
		}
		planSeed := seed + uint64(i)
		synctest.Test(t, func(t *testing.T) { soakPlan(t, planSeed, &tot) })
		if t.Failed() {
			t.Logf("soak: plan with seed %d diverged; replay: go test -race -run '^TestSoak$' ./informertest/ -args -soak.seed=%d -soak.plans=1 -soak.objects=%d -soak.changes=%d",
				planSeed, planSeed, *soakObjects, *soakChanges)
			tot.divergences++
			break
		}
	}
	var kinds []string
	for _, k := range slices.Sorted(maps.Keys(tot.kinds)) {
		kinds = append(kinds, fmt.Sprintf("%v %d", k, tot.kinds[k]))
	}
	t.Logf("soak: %d plans in %v: %d watch events, %d handler calls, %d changes, %d faults (%s), %d lists (%d relists), %d divergences",
		tot.plans, time.Since(start).Round(time.Second), tot.events, tot.calls, tot.changes, tot.faults, strings.Join(kinds, ", "), tot.lists, tot.relists, tot.divergences)
}

// soakOptions draws a plan's fault options from rng: rates spread so that
// some plans are gentle and some stormy, a random subset of kinds, and a
// script of up to 40 faults among the events after the initial list.
func soakOptions(seed uint64, rng *rand.Rand, objects, changes int, watchList bool) sourcetest.FaultOptions {
	initial := 0 // Next calls of the initial list
	if watchList {
		initial = objects
	}
	var kinds []sourcetest.FaultKind
	for _, k := range sourcetest.AllFaults {
		if rng.IntN(4) > 0 {
			kinds = append(kinds, k)
		}
	}
	// Scripted faults in the stream after the initial list (the random
	// rate, kept low for it, rarely reaches the churn's events).
	var next []sourcetest.FaultKind
	for _, k := range kinds {
		switch k {
		case sourcetest.FaultCut, sourcetest.FaultGone, sourcetest.FaultInternal, sourcetest.FaultForbidden,
			sourcetest.FaultDelay, sourcetest.FaultStall, sourcetest.FaultDuplicate, sourcetest.FaultDrop,
			sourcetest.FaultWrongType, sourcetest.FaultNilObject, sourcetest.FaultMalformed:
			next = append(next, k)
		}
	}
	var script []sourcetest.Fault
	for range rng.IntN(40) {
		if len(next) == 0 {
			break
		}
		f := sourcetest.Fault{Kind: next[rng.IntN(len(next))], Op: sourcetest.OpNext, At: initial + 1 + rng.IntN(2*changes)}
		if f.Kind == sourcetest.FaultDelay || f.Kind == sourcetest.FaultStall {
			f.For = time.Duration(1+rng.IntN(5000)) * time.Millisecond
		}
		script = append(script, f)
	}
	return sourcetest.FaultOptions{
		Script:    script,
		Seed:      seed,
		ListRate:  rng.Float64() * 0.2,
		WatchRate: rng.Float64() * 0.3,
		// About two faults per pass over the objects at most: a streaming
		// list of all of them must be able to finish.
		NextRate: rng.Float64() * 2 / float64(max(objects, 100)),
		Kinds:    kinds,
		MaxDelay: time.Duration(1+rng.IntN(5)) * time.Second,
	}
}

func soakPlan(t *testing.T, seed uint64, tot *soakTotals) {
	rng := rand.New(rand.NewPCG(seed, 0x50a4))
	pods := make([]*corev1.Pod, 0, *soakObjects)
	for i := range *soakObjects {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprintf("ns-%d", i%7), Name: fmt.Sprintf("p-%d", i), Labels: map[string]string{"gen": "0"},
		}})
	}
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: pods, Window: 500 + rng.IntN(2000)})
	noWatchList := rng.IntN(3) == 0
	fopts := soakOptions(seed, rng, *soakObjects, *soakChanges, !noWatchList)
	faulty, err := sourcetest.NewFaulty[*corev1.Pod](fake, fopts)
	if err != nil {
		t.Fatal(err)
	}
	chk, err := informertest.NewChecker[*corev1.Pod](fake, informertest.Options[*corev1.Pod]{Faults: faulty, PollInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := typed.NewInformer[*corev1.Pod](faulty, typed.Options[*corev1.Pod]{
		ErrorHandler: chk.ErrorHandler, NoWatchList: noWatchList, PageSize: int64(100 + rng.IntN(900)),
	})
	if err != nil {
		t.Fatal(err)
	}
	handlers := []typed.HandlerOptions{{Name: "unbounded"}, {Name: "block", Buffer: typed.Block, Size: 1 + rng.IntN(64)}}
	if *soakCoalesce {
		handlers = append(handlers, typed.HandlerOptions{Name: "coalesce", Buffer: typed.CoalesceByKey})
	}
	for _, o := range handlers {
		if _, err := chk.AddHandler(inf, o); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	// Churn once the informer synced (or gave up for now), so that the
	// changes interleave with watches rather than fold into the first list.
	select {
	case <-inf.Synced():
	case <-time.After(10 * time.Minute):
	}
	changes := churn(t, fake, rng, *soakChanges, func() {
		if _, err := chk.AddHandler(inf, typed.HandlerOptions{Name: "late"}); err != nil {
			t.Errorf("late handler: %v", err)
		}
	})
	faulty.Heal()
	cctx, ccancel := context.WithTimeout(ctx, time.Hour) // virtual: a hang guard
	defer ccancel()
	if err := chk.Converge(cctx, inf); err != nil {
		t.Errorf("seed %d: %v", seed, err)
	}

	log := faulty.Log()
	counts := chk.Counts()
	reqs := faulty.Requests()
	st := inf.Status().Stats
	tot.plans++
	tot.calls += counts.Total()
	tot.events += reqs.Events
	tot.changes += changes
	tot.faults += len(log)
	tot.lists += reqs.CompletedLists
	tot.relists += st.Relists
	byKind := map[sourcetest.FaultKind]int{}
	for _, f := range log {
		byKind[f.Kind]++
		tot.kinds[f.Kind]++
	}
	t.Logf("seed %d: %s; watchlist %v; %d changes; %d faults %v; lists %d (bound %d), watches %d, events %d, relists %d; calls %+v",
		seed, faulty.Plan(), !noWatchList, changes, len(log), byKind, reqs.CompletedLists, reqs.RelistBound(), reqs.Watches, reqs.Events, st.Relists, counts)
	if *soakVerbose {
		for _, f := range log {
			t.Logf("  %v", f)
		}
	}
}

// churn makes n random changes to fake, with virtual pauses between them
// so that they interleave with the faults: updates, deletes, re-creations
// of deleted names (a new UID), now and then a compaction of the history
// or a bookmark; midway it calls mid. It returns how many changes it made.
func churn(t *testing.T, fake *sourcetest.Fake[*corev1.Pod], rng *rand.Rand, n int, mid func()) int {
	t.Helper()
	live := map[cache.Key]bool{}
	for _, p := range fake.Items() {
		live[cache.KeyOf(p)] = true
	}
	keys := slices.Collect(maps.Keys(live))
	slices.SortFunc(keys, func(a, b cache.Key) int { return strings.Compare(a.String(), b.String()) })
	made := 0
	for i := range n {
		if i == n/2 {
			mid()
		}
		k := keys[rng.IntN(len(keys))]
		var err error
		switch r := rng.IntN(100); {
		case !live[k]:
			_, err = fake.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name, Labels: map[string]string{"gen": fmt.Sprint(i)}}})
			live[k] = err == nil
		case r < 15:
			_, err = fake.Delete(k)
			live[k] = err != nil
		case r < 16:
			fake.Compact()
		case r < 18:
			fake.Bookmark()
		default:
			_, err = fake.Update(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name, Labels: map[string]string{"gen": fmt.Sprint(i)}}})
		}
		if err != nil {
			t.Fatalf("change %d to %v: %v", i, k, err)
		}
		made++
		time.Sleep(time.Duration(rng.IntN(100)) * time.Millisecond)
	}
	return made
}
