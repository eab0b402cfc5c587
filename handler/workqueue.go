package handler

import (
	"k8s.io/client-go/util/workqueue"

	"github.com/typedinformer/informer/cache"
)

// EnqueueKeys returns a Handler that adds the key of every added, updated
// or deleted object to q, the usual first step of a controller. Use
// workqueue.NewTypedRateLimitingQueue[cache.Key] for q; the reconcile loop
// then gets typed keys and reads objects from the informer's lister.
func EnqueueKeys[T cache.Object](q workqueue.TypedInterface[cache.Key]) Funcs[T] {
	return Funcs[T]{
		AddFunc:    func(obj T, _ bool) { q.Add(cache.KeyOf(obj)) },
		UpdateFunc: func(_, obj T) { q.Add(cache.KeyOf(obj)) },
		DeleteFunc: func(d Deleted[T]) { q.Add(d.Key) },
	}
}

// EnqueueStringKeys is EnqueueKeys for queues of client-go's "namespace/name"
// strings, for code that shares a queue with client-go informers.
func EnqueueStringKeys[T cache.Object](q workqueue.TypedInterface[string]) Funcs[T] {
	return Funcs[T]{
		AddFunc:    func(obj T, _ bool) { q.Add(cache.KeyOf(obj).String()) },
		UpdateFunc: func(_, obj T) { q.Add(cache.KeyOf(obj).String()) },
		DeleteFunc: func(d Deleted[T]) { q.Add(d.Key.String()) },
	}
}
