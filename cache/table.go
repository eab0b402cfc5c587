package cache

import "hash/maphash"

// table holds the stored objects by namespace, then by name. A scan of one
// namespace or of all of them reads slots in place, without a lookup per
// object.
//
// Once labeled (the first List that matches labels makes it so, see
// core.list), each slot also carries a 64-bit summary of its object's
// labels (see bloomOf), so that a scan for app=x rules out almost every
// object that does not match from the slot alone, without reading the
// object or its labels map: a cache miss or more per object. Until then
// writes do not read labels at all: a cache that is only read by key pays
// nothing for it.
type table[T Object] struct {
	ns      map[string]map[string]slot[T] // namespace -> name -> slot; no empty inner map
	n       int
	labeled bool // every slot's bloom is its object's labels' bloomOf
}

// slot is one stored object.
type slot[T Object] struct {
	obj   T
	bloom uint64 // bloomOf the object's labels; 0 until the table is labeled
}

func newTable[T Object](labeled bool) table[T] {
	return table[T]{ns: make(map[string]map[string]slot[T]), labeled: labeled}
}

// label gives every slot its labels' summary, from now on.
func (t *table[T]) label() {
	if t.labeled {
		return
	}
	for _, m := range t.ns {
		for name, s := range m {
			s.bloom = bloomOf(s.obj.GetLabels())
			m[name] = s
		}
	}
	t.labeled = true
}

// get returns the slot stored under k.
func (t *table[T]) get(k Key) (slot[T], bool) {
	s, ok := t.ns[k.Namespace][k.Name]
	return s, ok
}

// lookup is get for a write: it also returns k's namespace map, nil if
// the namespace has no objects, for put.
func (t *table[T]) lookup(k Key) (map[string]slot[T], slot[T], bool) {
	m := t.ns[k.Namespace]
	s, ok := m[k.Name]
	return m, s, ok
}

// put stores obj under k. m and existed are what lookup returned for k.
func (t *table[T]) put(m map[string]slot[T], k Key, obj T, existed bool) {
	var bloom uint64
	if t.labeled {
		bloom = bloomOf(obj.GetLabels())
	}
	if m == nil {
		m = make(map[string]slot[T])
		t.ns[k.Namespace] = m
	}
	m[k.Name] = slot[T]{obj: obj, bloom: bloom}
	if !existed {
		t.n++
	}
}

// presize makes room for n objects of namespace ns before they are put.
func (t *table[T]) presize(ns string, n int) {
	if t.ns[ns] == nil {
		t.ns[ns] = make(map[string]slot[T], n)
	}
}

// del removes k.
func (t *table[T]) del(k Key) {
	m := t.ns[k.Namespace]
	delete(m, k.Name)
	if len(m) == 0 {
		delete(t.ns, k.Namespace)
	}
	t.n--
}

// each calls f for every slot until f returns false.
func (t *table[T]) each(f func(Key, slot[T]) bool) {
	for ns, m := range t.ns {
		for name, s := range m {
			if !f(Key{Namespace: ns, Name: name}, s) {
				return
			}
		}
	}
}

// bloomSeed seeds the hashes of label pairs, the same for every table,
// so that a query computes its masks once for any store.
var bloomSeed = maphash.MakeSeed()

// bloomOf summarizes labels in 64 bits: for each label, the three bits of
// pairMask(key, value). An object whose bloom lacks a bit of
// pairMask(k, v) does not have label k=v; one that has them all most
// likely has it: with 5 labels at most 15 bits are set, and a pair that is
// not there seems to be about once in 80.
func bloomOf(labels map[string]string) uint64 {
	var b uint64
	for k, v := range labels {
		b |= pairMask(k, v)
	}
	return b
}

// pairMask returns the bits of label k=v in a bloomOf: never zero. Three
// bits suit the few labels (3 to 10) objects usually have.
func pairMask(k, v string) uint64 {
	h := maphash.String(bloomSeed, k)*0x9e3779b97f4a7c15 ^ maphash.String(bloomSeed, v)
	h ^= h >> 29
	return 1<<(h&63) | 1<<(h>>6&63) | 1<<(h>>12&63)
}
