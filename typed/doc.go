// Package typed is the entry point: [Informer] keeps a typed, indexed cache
// of one resource in step with a [source.Source] and tells any number of
// handlers about every change, with concrete types from end to end.
//
//	src := source.FromClient[*corev1.Pod](clientset.CoreV1().Pods(metav1.NamespaceAll))
//	inf := typed.NewInformer(src, typed.Options[*corev1.Pod]{})
//	reg, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{
//		AddFunc:    func(p *corev1.Pod, initial bool) { ... },
//		UpdateFunc: func(old, cur *corev1.Pod) { ... },
//		DeleteFunc: func(d handler.Deleted[*corev1.Pod]) { ... },
//	})
//	go inf.Run(ctx)
//	if err := inf.WaitForSync(ctx); err != nil { ... } // says why: Forbidden, NotFound...
//	pods, err := inf.Lister().Namespace("default").List(selector)
//
// # Pipeline
//
// A reflector (internal) lists and watches the source into an in-order
// [fifo.Queue]; the informer pops batches, applies them to its
// [cache.Indexer] and hands each handler its notifications in one batch.
// Every handler runs on a goroutine of its own with its own buffer, so a
// slow handler never delays another; Registration.Pending shows how far
// behind a handler is.
//
// # Guarantees
//
//   - Per key, a handler sees the changes in the order the server made them,
//     and the last call it gets for a key matches the cache.
//   - A handler added after the informer started first gets one OnAdd per
//     cached object (isInInitialList true), then live changes, each once.
//   - A handler that panics is recovered, the panic is reported to
//     Options.ErrorHandler with its stack, and the handler keeps getting
//     calls; its HasSynced still becomes true.
//   - Run returns nil when its context ends, after every goroutine it
//     started has stopped; no handler is called after Run returns.
//   - A relist is applied in batches of up to 1,000 objects, not in one
//     step: between batches a lister can see some of a relist's changes and
//     not yet others (client-go's default AtomicFIFO applies a relist at
//     once). LastSyncResourceVersion is what the informer has taken from its
//     source, which the cache may not have applied yet.
//   - An object the cache cannot index (an index function fails or panics)
//     or that Options.Transform refuses never enters the queue: the error
//     is reported, SyncStatus.LastError holds it, and the informer relists
//     after a backoff rather than move past the object.
//   - A Delete for a key the cache never held is not delivered (it cannot
//     follow an Add the handler got).
//   - An object replaced under the same name by one with another UID while
//     the watch was down (found by a relist) is delivered as a Delete with
//     FinalStateUnknown for the old object, then an Add for the new one,
//     never as an Update between two different objects. client-go delivers
//     an Update there.
package typed
