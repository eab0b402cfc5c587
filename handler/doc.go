// Package handler defines how controller code is told about changes to the
// objects of an informer: a [Handler] gets typed Add, Update and Delete
// calls. [Funcs] builds one from functions, [Filter] narrows one to the
// objects a predicate accepts, and [EnqueueKeys] feeds client-go's typed
// workqueue.
//
// A deletion arrives as a [Deleted] value, never as an untyped tombstone:
// when the informer inferred the deletion from a relist (the object vanished
// while the watch was down), FinalStateUnknown is set and Object is the last
// state the cache held.
package handler
