package intern

import (
	"hash/maphash"
	"maps"
	"unsafe"
	"weak"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Equal maps are shared too, when Options.Maps asks for it: the pods of
// one ReplicaSet carry the same labels, annotations and container
// resources, and each such map costs a few hundred bytes (a ResourceList
// of one or two quantities, about 600). A map's canonical copy is held
// weakly, as a string's bytes are: the table points weakly to the map's
// runtime header, which lives as long as any object holds the map.
//
// A shared map must not be modified: every object holding it would see
// the change. Objects of an informer's cache are read-only, as in
// client-go (its mutation detector finds a handler that writes to one);
// a caller that modifies an object deep-copies it first.

// maxMapLen is the largest map shared: a map of more entries (a
// ConfigMap's data) is seldom equal in two objects.
const maxMapLen = 32

// mapTable maps the hash of a map's entries to the map's canonical copy.
type mapTable struct {
	seed   maphash.Seed
	shards [shards]shard[mapEntry]
}

// mapEntry is a canonical map: its runtime header, held weakly.
type mapEntry struct{ p weak.Pointer[byte] }

func (e mapEntry) dead() bool { return e.p.Value() == nil }

func newMapTable() *mapTable {
	t := &mapTable{seed: maphash.MakeSeed()}
	for i := range t.shards {
		t.shards[i].m = map[uint64]mapEntry{}
	}
	return t
}

// stringMaps and quantityMaps hold the canonical map[string]string and
// map[string]resource.Quantity (ResourceList) copies.
var (
	stringMaps   = newMapTable()
	quantityMaps = newMapTable()
)

// canonicalMap returns the canonical copy of m (a clone of m if there was
// none), or m itself if it is empty, too long, or another map of the same
// hash holds the slot. hash hashes one entry.
func canonicalMap[V comparable](t *mapTable, m map[string]V, hash func(maphash.Seed, string, V) uint64) map[string]V {
	if len(m) == 0 || len(m) > maxMapLen {
		return m
	}
	h := uint64(len(m))
	for k, v := range m {
		h += hash(t.seed, k, v) // a sum: the order of iteration does not matter
	}
	sh := &t.shards[h%shards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e, ok := sh.m[h]; ok {
		if hdr := e.p.Value(); hdr != nil {
			c := *(*map[string]V)(unsafe.Pointer(&hdr))
			if maps.Equal(c, m) {
				return c
			}
			return m // another map of the same hash
		}
	}
	// The canonical copy is a clone: a map this package allocated on the
	// heap, whatever made m.
	c := maps.Clone(m)
	sh.m[h] = mapEntry{p: weak.Make(*(**byte)(unsafe.Pointer(&c)))}
	sh.added()
	return c
}

func hashStringEntry(seed maphash.Seed, k, v string) uint64 {
	return maphash.String(seed, k)*31 + maphash.String(seed, v)
}

func hashQuantityEntry(seed maphash.Seed, k string, v resource.Quantity) uint64 {
	// Equal quantities have equal milli-values and formats; == on the
	// whole Quantity decides.
	return maphash.String(seed, k)*31 + uint64(v.MilliValue())*0x9e3779b97f4a7c15 + maphash.String(seed, string(v.Format))
}

// size returns the number of entries, dead or alive.
func (t *mapTable) size() int { return size(t.shards[:]) }
