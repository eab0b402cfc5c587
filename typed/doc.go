// Package typed is the entry point: [Informer] keeps a typed, indexed cache
// of one resource in step with a [source.Source] and tells any number of
// handlers about every change, with concrete types from end to end.
//
//	src, err := source.FromClient[*corev1.Pod](clientset.CoreV1().Pods(metav1.NamespaceAll))
//	inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{})
//	reg, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{
//		AddFunc:    func(p *corev1.Pod, initial bool) { ... },
//		UpdateFunc: func(old, cur *corev1.Pod) { ... },
//		DeleteFunc: func(d handler.Deleted[*corev1.Pod]) { ... },
//	})
//	g, ctx := errgroup.WithContext(ctx) // golang.org/x/sync/errgroup
//	g.Go(func() error { return inf.Run(ctx) })
//	if err := typed.WaitForCacheSync(ctx, inf, reg); err != nil { ... } // says why: Forbidden, NotFound...
//	pods, err := inf.Lister().Namespace("default").List(selector)
//
// # Pipeline
//
// Data moves one way. A reflector (internal) lists and watches the source
// and prepares every object (managedFields dropped, Options.Transform, index
// values) before it enters an in-order [fifo.Queue]; one writer pops
// batches, applies each as one write to the [cache.Writer] and hands every
// handler its notifications; each handler runs on a goroutine of its own
// with its own buffer, and every error goes to Options.ErrorHandler on one
// goroutine. No stage calls back into an earlier one, and no lock of this
// module is held while user code runs.
// docs/architecture.md in the repository draws it.
//
// # Guarantees
//
//   - A list (the initial one or a relist) is applied as one write: a
//     reader of the store or the lister sees the cache before the list or
//     after it, never in between. Handlers hear about it after the swap:
//     first a Delete (FinalStateUnknown) for each object the list lacks,
//     then each listed object in the list's order.
//   - Per key, a handler sees the changes in the order the server made them,
//     and the last call it gets for a key matches the cache.
//   - A handler added after the informer started first gets one OnAdd per
//     cached object (isInInitialList true), then live changes, each once.
//   - A handler that panics is recovered, the panic is reported to
//     Options.ErrorHandler with its stack, and the handler keeps getting
//     calls; its registration still syncs.
//   - Run returns nil when its context ends, after every goroutine it
//     started has stopped; no handler is called after Run returns.
//   - An object the cache cannot index, or that Options.Transform refuses,
//     is quarantined by default: left out of the cache (an older version
//     the cache held stays), reported once per version, listed in
//     Status().Quarantined, and taken when a later version of it passes;
//     the rest of the cache syncs. With Options.OnRefused StopAndRelist
//     it never enters the queue: the error is reported, Status().LastError
//     holds it, and the informer relists after a backoff rather than move
//     past the object.
//   - A watch that delivers nothing for Options.WatchIdleTimeout (once
//     the source has shown it sends periodic bookmarks) is stopped and
//     opened again from the last resourceVersion, without a relist.
//   - A Delete for a key the cache never held is not delivered (it cannot
//     follow an Add the handler got).
//   - An object replaced under the same name by one with another UID while
//     the watch was down (found by a relist) is delivered as a Delete with
//     FinalStateUnknown for the old object, then an Add for the new one,
//     never as an Update between two different objects. client-go delivers
//     an Update there.
//   - A relist that brings an object at the version the cache holds keeps
//     the cached object (handlers get OnUpdate(obj, obj), as for a resync)
//     and frees the copy just decoded at once, so a relist of unchanged
//     objects does not hold the collection twice.
package typed
