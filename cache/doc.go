// Package cache is the typed, thread-safe object cache at the bottom of the
// informer pipeline.
//
// It defines the [Object] constraint that every cached type satisfies (any
// pointer to a Kubernetes API struct, such as *corev1.Pod, or
// *unstructured.Unstructured), the concrete [Key] that identifies an object,
// and a cache in two halves, as kube-rs splits its reflector store:
//
//   - [Writer], the write side, owned by whoever keeps the cache current
//     (an informer, or your own code). [Writer.Apply] makes a batch of
//     changes as one write; [Writer.Replace] swaps the whole content.
//   - [Store], the read side, what controllers use: Get, List, iterators,
//     index queries, and the [Lister]. A reader sees the cache between two
//     writes, never in the middle of one, so a relist applied with one
//     write is atomic for every reader.
//
// Nothing in this package takes or returns interface{}: a *corev1.Pod goes in
// and a *corev1.Pod comes out, with no type assertion anywhere on the way.
//
// # Keys
//
// A [Key] is a namespace and a name. Its String form is client-go's
// "namespace/name" (or just "name" for cluster-scoped objects), so keys can be
// exchanged with client-go code and workqueues; [ParseKey] reads it back.
// [KeyOf] is the one key function.
//
// # Indexes
//
// Every store maintains a namespace index ([NamespaceIndex]). Custom
// indexes are [IndexFunc]s declared in [Options.Indexers] or added later
// with [Writer.AddIndexers]; [Writer.Prepare] computes their values once
// per object, without any lock, before the object is written, and refuses
// an object an index function fails on. Label indexes are declared as data
// ([Options.LabelIndexes]): the [Lister] answers equality and
// set-membership selectors on those labels straight from the index.
//
// # Locks
//
// One read-write lock guards the content. It is never held while user code
// runs: index functions run before a write takes it, and a [Lister] matches
// a selector's requirements under the read lock (that is apimachinery's
// code, not yours) but a custom [labels.Selector] that does not list its
// requirements after releasing it, on a copy of the candidates. Iterators
// ([Store.All], [Store.ByIndexSeq], [Lister.ListSeq]) yield from a
// snapshot with no lock held, and after warm-up allocate nothing per
// object.
//
// # Scans
//
// Objects are kept by namespace, then by name, so that listing a namespace
// reads its objects in place. From the first List that has labels to match
// on, each stored object's slot also carries a 64-bit summary (a Bloom
// filter) of its labels: a scan for app=x, or app in (x, y), rules out
// almost every object without those labels from the slot alone, and reads
// the labels of the few that remain, so it costs about the same whether
// the objects share label sets (pods of one ReplicaSet) or each has its
// own (pods of a StatefulSet). Until that first List, writes do not look
// at labels: a cache read only by key or index pays nothing for it.
//
// A label index ([Options.LabelIndexes]) holds the objects of each value
// side by side: a List it answers copies them out, with no lookup per
// object.
package cache
