// Package informertest checks that an informer, and the handlers it
// calls, stay right under faults: it is what the module's own reliability
// tests use, for controller tests to use too.
//
// A [Checker] gives out handlers that record every call and check each
// against the ones before, and compares the informer's cache and each
// handler's view with the truth, a LIST from a source: the fake behind
// the informer's source, or a real API server. It checks the invariants
// of the module's reliability document: I1 (the cache converges to the
// truth), I2 (each handler's last calls are the truth), I3 (no
// resourceVersion goes back), I4 (no duplicate Add, no Update or Delete of
// an unknown key), I6 (synced, healthy, and every injected error
// reported), I7 (no handed-out object mutated) and, with a
// sourcetest.Faulty in front of the source, I8 (no more lists than the
// errors that force one). A failure is a [*Divergence] with a cmp.Diff
// (-want +got) per broken invariant and the fault plan's seed, so that it
// replays.
//
// # Testing a controller with faults
//
//	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
//	faulty, _ := sourcetest.NewFaulty[*corev1.Pod](fake, sourcetest.FaultOptions{
//		Seed: seed, WatchRate: 0.2, NextRate: 0.01,
//	})
//	chk, _ := informertest.NewChecker[*corev1.Pod](fake, informertest.Options[*corev1.Pod]{Faults: faulty})
//	inf, _ := typed.NewInformer(faulty, typed.Options[*corev1.Pod]{ErrorHandler: chk.ErrorHandler})
//	chk.AddHandler(inf, typed.HandlerOptions{})
//	inf.AddHandler(myController.Handler()) // the code under test, beside it
//	g, ctx := errgroup.WithContext(ctx) // golang.org/x/sync/errgroup
//	g.Go(func() error { return inf.Run(ctx) })
//	// ... change the fake while the faults happen ...
//	faulty.Heal()
//	if err := chk.Converge(ctx, inf); err != nil {
//		t.Fatal(err) // names the invariant, the keys, and the seed
//	}
//
// The module's docs/reliability.md says more.
package informertest
