// Package reconcile runs a reconcile loop over a [typed.Informer]: the keys
// of the informer's changes go into client-go's typed rate-limited
// workqueue, and workers hand each one to a [Reconciler], retrying failures
// with backoff.
//
//	inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{})
//	ctrl, err := reconcile.New(inf, reconcile.Func(func(ctx context.Context, key cache.Key) error {
//		pod, err := inf.Lister().Namespace(key.Namespace).Get(key.Name)
//		if apierrors.IsNotFound(err) {
//			return nil // deleted
//		}
//		...
//	}), reconcile.Options[*corev1.Pod]{Workers: 4})
//	g.Go(func() error { return inf.Run(ctx) })
//	g.Go(func() error { return ctrl.Run(ctx) })
//
// # What the loop guarantees
//
//   - A key is never reconciled by two workers at once; a key that changes
//     while it is being reconciled is reconciled again afterwards.
//   - A nil error forgets the key's failures; an error or a panic (recovered,
//     reported with its stack) retries it after Options.RateLimiter's delay,
//     until Options.MaxRetries, after which the key is dropped and the drop
//     reported as a [*KeyError] wrapping [ErrDropped].
//   - Background work waits behind live changes: keys brought only by the
//     initial list (isInInitialList), a resync, or a relist of an unchanged
//     object. A change made while a large initial list is being worked
//     through is reconciled next, not after the whole list; a queued
//     background key that then changes moves up; a retry keeps its key's
//     level. Under a flood of live changes one background key still goes
//     after every hundred live ones, so the initial list is never starved.
//   - [Options.Predicates] drop changes that need no work before they are
//     queued: [GenerationChanged], [LabelsChanged], [IgnoreResync], or
//     functions of your own over an [Event].
//   - When Run's context ends no new key starts, reconciles in progress
//     finish (within Options.DrainTimeout), and Run returns nil with no
//     goroutine left behind.
//
// The package's documentation in the repository, docs/reconcile.md,
// compares it with controller-runtime's reconciler.
package reconcile
