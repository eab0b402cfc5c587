// Package cache is the typed, thread-safe object cache at the bottom of the
// informer pipeline.
//
// It defines the [Object] constraint that every cached type satisfies (any
// pointer to a Kubernetes API struct, such as *corev1.Pod, or
// *unstructured.Unstructured), the concrete [Key] that identifies an object,
// the [Store] contract, the [Indexer] that implements it with typed index
// functions, and the [Lister] that answers controller queries.
//
// Nothing in this package takes or returns interface{}: a *corev1.Pod goes in
// and a *corev1.Pod comes out, with no type assertion anywhere on the way.
//
// # Keys
//
// A [Key] is a namespace and a name. Its String form is client-go's
// "namespace/name" (or just "name" for cluster-scoped objects), so keys can be
// exchanged with client-go code and workqueues; [ParseKey] reads it back.
//
// # Indexes
//
// An [Indexer] maintains any number of named indexes, each computed by an
// [IndexFunc]. A namespace index ([NamespaceIndex]) is maintained by default
// without calling any function, so namespace-scoped listing never scans the
// whole cache. An index function that fails makes the write return an error
// and leaves the store and every index exactly as they were.
//
// # Iteration
//
// The iterator methods ([Indexer.All], [Indexer.Values], [Indexer.Keys],
// [Lister.Seq]) take a snapshot under the read lock into a pooled buffer and
// yield with no lock held, so the loop body may call any method of the cache,
// including writes. After warm-up they allocate nothing per item.
package cache
