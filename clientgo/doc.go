// Package clientgo serves a typed informer to code written for client-go:
// [SharedIndexInformer] returns a k8s.io/client-go/tools/cache
// SharedIndexInformer that is a view of a *typed.Informer, sharing its cache
// and its watch. Nothing is listed, watched or stored twice: the view's
// store answers from the informer's cache, and the view's event handlers
// are handlers of the informer.
//
// Use it to hand an informer of this module to a library that takes
// client-go's interfaces: a generated lister
// (corelisters.NewPodLister(v.GetIndexer())), cache.WaitForCacheSync,
// cache.NewGenericLister, a controller framework that adds
// ResourceEventHandlers.
//
//	inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{})
//	v, err := clientgo.SharedIndexInformer(inf, clientgo.Options[*corev1.Pod]{})
//	lister := corelisters.NewPodLister(v.GetIndexer())
//
// # Events
//
// A client-go ResourceEventHandler added to the view gets OnAdd(obj,
// isInInitialList), OnUpdate(old, new) and OnDelete(obj) with the
// informer's objects. A deletion the informer inferred from a relist
// (handler.Deleted with FinalStateUnknown) reaches OnDelete as a
// cache.DeletedFinalStateUnknown whose Key is the "namespace/name" key and
// whose Obj is the last state the cache held, as client-go delivers it.
//
// # The cache belongs to the informer
//
// GetStore and GetIndexer read the informer's cache; their write methods
// (Add, Update, Delete, Replace) return an error wrapping [ErrReadOnly].
// AddIndexers adds indexes to the informer's cache, running client-go index
// functions on the typed objects. Errors are returned, never panics: an
// object of the wrong type, an index function that fails or panics.
//
// # What the view cannot change
//
// A typed informer takes its error handler and its transform at
// construction (typed.Options.ErrorHandler and Transform). To let a library
// set them with SetWatchErrorHandler and SetTransform before the informer
// starts, build the informer with the methods of a [Hooks] and pass the
// same Hooks in [Options.Hooks]; without it those setters return an error
// wrapping [ErrNoHooks]. Resync periods are the informer's
// (typed.Options.ResyncPeriod): a period asked for with
// AddEventHandlerWithResyncPeriod is not applied, which client-go's contract
// allows ("some informers do no resyncs at all").
package clientgo
