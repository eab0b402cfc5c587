// Package sharding spreads the objects of one resource over the replicas
// of a controller with the API server's sharded list and watch
// (KEP-5866, the ShardedListAndWatch feature) and Leases, with no
// coordinator: Kubernetes is the distributed engine.
//
// # Shards
//
// A Shard is a hash Key (ByUID or ByNamespace: FNV-1a 64 of
// metadata.uid or metadata.namespace, as the server hashes them) and a
// Range [Start, End) of the 64-bit hash space. Set one as
// typed.Options.Shard and the informer sends Range.Selector as
// ListOptions.ShardSelector on every list and watch:
//
//	shardRange(object.metadata.uid, '0x0000000000000000', '0x5555555555555555')
//
// A server with the feature filters and echoes the selector in
// ListMeta.ShardInfo; a server without it (feature off, older version) is
// detected by the missing echo, and the informer filters on the client
// (typed.Status.Shard.ClientFiltering, and the metric
// informer_shard_client_filtering). Watch events carry no shard
// information and are always checked on the client. Shard.Contains hashes
// without formatting a string per object.
//
// # Membership
//
// Membership keeps one Lease per replica in a namespace (named
// <group>-<identity>, labelled GroupLabel=<group>) and computes, from the
// live Leases sorted by identity, contiguous ranges proportional to the
// replicas' weights (Split). Every replica computes the same; there is no
// leader. A replica whose own renewals fail for the lease duration takes
// itself out of the assignment.
//
// # Sharded informers
//
// Informer runs one typed.Informer on this replica's range and moves it when
// the range changes: the objects that left the range reach the handlers as
// a Deleted with MovedOut set (not a deletion: another replica has them
// now), the objects that entered as adds, after a relist of the new range.
//
// Handoff: before it starts on a range, a replica records the range in its
// Lease (HeldAnnotation), waits until its Lease informer has seen that
// write, and then until no other live replica's Lease holds an overlapping
// range; a replica records that it holds nothing once it stopped. The Lease
// writes are linearised by the API server, so of two replicas that want
// overlapping ranges at most one can start; a crashed replica's claim ends
// when its Lease expires. Status.HandoffGap is how long after the previous
// holder's claim ended the range started.
//
// What this cannot promise: a replica that lost its Lease (a long pause, a
// partition) stops when it notices, by its own clock; writes it already
// sent may land after another replica took over. Guard writes with
// resourceVersion preconditions. docs/sharding.md in the repository has the
// design, the measured numbers and the limits.
package sharding
