package cache

import (
	"hash/maphash"
	"sync/atomic"
	"unsafe"
)

// table holds the stored objects by namespace, then by name. A scan of one
// namespace or of all of them reads slots in place, without a lookup per
// object.
//
// Once labeled (the first List that matches labels makes it so, see
// core.list), each slot also carries the object's label set,
// shared with every other stored object that has the same labels, and a
// scan matches a selector once per distinct label set, which stays in the
// CPU's cache, instead of against each object's own labels map, a cache
// miss or more per object. Until then writes do not read labels at all: a
// cache that is only read by key pays nothing for it.
type table[T Object] struct {
	ns      map[string]map[string]slot[T] // namespace -> name -> slot; no empty inner map
	n       int
	labeled bool // every slot's ls is its object's label set
	sets    labelSets
}

// slot is one stored object.
type slot[T Object] struct {
	obj T
	ls  *labelSet // nil: no labels, or the table is not labeled
}

func newTable[T Object](size int, labeled bool) table[T] {
	return table[T]{ns: make(map[string]map[string]slot[T]), labeled: labeled, sets: newLabelSets(size)}
}

// label gives every slot its label set, from now on.
func (t *table[T]) label() {
	if t.labeled {
		return
	}
	for _, m := range t.ns {
		for name, s := range m {
			s.ls = t.sets.acquire(s.obj.GetLabels(), nil)
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

// put stores obj under k. m, old and existed are what lookup returned for
// k. The label set of old is tried first for obj's labels: an update
// rarely changes labels.
func (t *table[T]) put(m map[string]slot[T], k Key, obj T, old slot[T], existed bool) {
	var ls *labelSet
	if t.labeled {
		ls = t.sets.acquire(obj.GetLabels(), old.ls)
		if existed {
			t.sets.release(old.ls)
		}
	}
	if m == nil {
		m = make(map[string]slot[T])
		t.ns[k.Namespace] = m
	}
	m[k.Name] = slot[T]{obj: obj, ls: ls}
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

// del removes k, whose slot is old.
func (t *table[T]) del(k Key, old slot[T]) {
	m := t.ns[k.Namespace]
	delete(m, k.Name)
	if len(m) == 0 {
		delete(t.ns, k.Namespace)
	}
	if t.labeled {
		t.sets.release(old.ls)
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

// labelSet is one distinct set of labels among the stored objects. Its map
// is the labels map of the first object stored with these labels: stored
// objects are never mutated, so it stays equal to the labels of every
// object that refers to it.
type labelSet struct {
	m          map[string]string
	keys, vals []string // m's labels, for comparing without iterating a map
	hash       uint64
	refs       int
	next       *labelSet // the next set with the same hash

	// memo is the last answer a query gave for this set: the query's
	// number shifted left by one, ored with 1 if it matched.
	memo atomic.Uint64
}

// labelSets counts the stored objects of each distinct label set.
type labelSets struct {
	seed   maphash.Seed
	byHash map[uint64]*labelSet
}

func newLabelSets(size int) labelSets {
	return labelSets{seed: maphash.MakeSeed(), byHash: make(map[uint64]*labelSet, min(size, 64))}
}

// acquire returns the set for labels with one more reference; hint, if not
// nil, is tried first. Empty labels have no set.
func (s *labelSets) acquire(labels map[string]string, hint *labelSet) *labelSet {
	if len(labels) == 0 {
		return nil
	}
	if hint != nil && hint.equals(labels) {
		hint.refs++
		return hint
	}
	h := s.hashOf(labels)
	first := s.byHash[h]
	for ls := first; ls != nil; ls = ls.next {
		if ls.equals(labels) {
			ls.refs++
			return ls
		}
	}
	ls := &labelSet{m: labels, hash: h, refs: 1, next: first}
	ls.keys = make([]string, 0, len(labels))
	ls.vals = make([]string, 0, len(labels))
	for k, v := range labels {
		ls.keys, ls.vals = append(ls.keys, k), append(ls.vals, v)
	}
	s.byHash[h] = ls
	return ls
}

// equals reports whether labels are the labels of ls: as many, and each of
// ls's in labels with the same value. The same map is equal without
// reading it.
func (ls *labelSet) equals(labels map[string]string) bool {
	if len(labels) != len(ls.keys) {
		return false
	}
	if *(*unsafe.Pointer)(unsafe.Pointer(&labels)) == *(*unsafe.Pointer)(unsafe.Pointer(&ls.m)) {
		return true
	}
	for i, k := range ls.keys {
		if v, ok := labels[k]; !ok || v != ls.vals[i] {
			return false
		}
	}
	return true
}

// release drops one reference to ls, and ls itself with the last one.
func (s *labelSets) release(ls *labelSet) {
	if ls == nil {
		return
	}
	if ls.refs--; ls.refs > 0 {
		return
	}
	p := s.byHash[ls.hash]
	if p == ls {
		if ls.next == nil {
			delete(s.byHash, ls.hash)
		} else {
			s.byHash[ls.hash] = ls.next
		}
		return
	}
	for ; p != nil; p = p.next {
		if p.next == ls {
			p.next = ls.next
			return
		}
	}
}

// hashOf hashes labels independently of the map's iteration order.
func (s *labelSets) hashOf(labels map[string]string) uint64 {
	var h uint64
	for k, v := range labels {
		hk := maphash.String(s.seed, k)
		hv := maphash.String(s.seed, v)
		h += (hk ^ (hv*0x9e3779b97f4a7c15 + hk<<6 + hk>>2)) * 0xff51afd7ed558ccd
	}
	return h
}
