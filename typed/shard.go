package typed

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Shard restricts an informer to one shard of its resource, as the API
// server's sharded list and watch (the ShardedListAndWatch feature) cut
// it: package sharding builds them from a hash key and a range.
//
// Selector is sent as metav1.ListOptions.ShardSelector on every list and
// watch. A list whose ShardInfo echoes it was filtered by the server; a
// list without the echo (a server without the feature, or an older one)
// is filtered on the client with Contains, which Status().Shard then says.
// Watch events carry no shard information, so each is checked with
// Contains as well. The informer does not use the streaming list while
// sharded: its end bookmark does not echo the selector.
type Shard interface {
	// Selector is the shard selector, such as
	// shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000').
	Selector() string
	// Contains reports whether obj belongs to the shard: the check the
	// server makes for Selector.
	Contains(obj metav1.Object) bool
}
