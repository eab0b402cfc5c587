package source

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// shardInfoOf returns the ShardInfo of a list: from its ListMeta for a
// typed list, from metadata.shardInfo for an unstructured one; nil when
// the server set none.
func shardInfoOf(list runtime.Object) *metav1.ShardInfo {
	switch l := list.(type) {
	case interface{ GetShardInfo() *metav1.ShardInfo }:
		return l.GetShardInfo()
	case *unstructured.UnstructuredList:
		sel, found, err := unstructured.NestedString(l.Object, "metadata", "shardInfo", "selector")
		if err != nil || !found {
			return nil
		}
		return &metav1.ShardInfo{Selector: sel}
	}
	return nil
}
