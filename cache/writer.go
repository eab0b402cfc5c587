package cache

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Options configures [NewWriter]. The zero value is ready to use.
type Options[T Object] struct {
	// Indexers are custom indexes, queried with [Store.ByIndex]. The
	// namespace index ([NamespaceIndex]) is always maintained besides
	// them. Default: none.
	Indexers Indexers[T]
	// LabelIndexes are label keys to index: a [Lister] answers equality
	// and set-membership selectors on these labels from the index, without
	// scanning or matching. Default: none.
	LabelIndexes []string
	// Resource names the objects in the [Lister]'s NotFound errors.
	// Default: {Resource: "objects"}.
	Resource schema.GroupResource
	// Scope says whether the objects are namespaced. The [Lister] uses it
	// to refuse a lookup in the wrong scope. Default: ScopeUnknown, the
	// scope is inferred from the stored objects.
	Scope Scope
}

// core is the state a Writer and its Store share.
type core[T Object] struct {
	resource  schema.GroupResource
	scope     Scope
	labelKeys []string // immutable

	// set is the current index set, read without the lock by Prepare.
	set atomic.Pointer[indexSet[T]]

	mu     sync.RWMutex
	cur    *indexSet[T]       // the set the maps below follow; equals set
	tab    table[T]           // the objects; also the namespace index
	vals   map[Key][][]string // per key, aligned with cur.names; empty without custom indexes
	custom []index            // aligned with cur.names
	labels []labelIndex[T]    // aligned with labelKeys
	rev    uint64

	bufs chan *buffer[T] // free iteration buffers
}

// Writer is the write side of a cache: it stores, replaces and deletes
// objects and maintains every index. Its [Store] is the read side, which it
// keeps consistent: a reader sees every change of one [Writer.Apply] or
// [Writer.Replace] call, or none of it.
//
// All methods are safe for concurrent use. Index functions (user code) run
// without any lock held. An informer owns its Writer; build one yourself to
// keep a cache of your own.
type Writer[T Object] struct {
	c     *core[T]
	store *Store[T]
}

// NewWriter returns an empty cache. It fails if an index is declared twice,
// has no function, or a label index key is not a valid label key.
func NewWriter[T Object](opts Options[T]) (*Writer[T], error) {
	if err := checkLabelKeys(opts.LabelIndexes); err != nil {
		return nil, err
	}
	c := &core[T]{
		resource:  opts.Resource,
		scope:     opts.Scope,
		labelKeys: slices.Clone(opts.LabelIndexes),
		tab:       newTable[T](false),
		vals:      map[Key][][]string{},
		bufs:      make(chan *buffer[T], 4),
	}
	if c.resource.Empty() {
		c.resource = schema.GroupResource{Resource: "objects"}
	}
	for range c.labelKeys {
		c.labels = append(c.labels, labelIndex[T]{})
	}
	empty := newIndexSet[T](c, nil, nil)
	set, err := empty.with(opts.Indexers)
	if err != nil {
		return nil, err
	}
	for range set.names {
		c.custom = append(c.custom, index{})
	}
	c.cur = set
	c.set.Store(set)
	return &Writer[T]{c: c, store: &Store[T]{c: c}}, nil
}

// Store returns the read side of the cache.
func (w *Writer[T]) Store() *Store[T] { return w.store }

// Prepare makes an entry for obj: its key and the values of every custom
// index, without storing anything. It fails, and obj must then be refused,
// if obj is nil, has no name, or an index function fails or panics on it.
// An informer prepares every object before it queues it, so that an object
// the cache cannot take is refused before the informer moves past its
// resourceVersion, and index values are computed once.
func (w *Writer[T]) Prepare(obj T) (Entry[T], error) {
	k, err := checkedKey(obj)
	if err != nil {
		return Entry[T]{}, err
	}
	s := w.c.set.Load()
	vals, err := s.values(obj, make([][]string, 0, len(s.names)), 0)
	if err != nil {
		return Entry[T]{}, err // the caller names the object
	}
	return Entry[T]{Key: k, Object: obj, idx: preparedFor(s, vals)}, nil
}

// Entry returns the entry stored under key: the object with the index
// values the cache holds for it. Writing it again changes nothing and
// computes nothing; an informer uses it to keep the object it already has
// when a relist brings the same version again.
func (w *Writer[T]) Entry(key Key) (Entry[T], bool) {
	c := w.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.tab.get(key)
	if !ok {
		return Entry[T]{}, false
	}
	return Entry[T]{Key: key, Object: s.obj, idx: preparedFor(c.cur, c.vals[key])}, true
}

// Apply makes every change, in order, as one write: a reader sees all of
// them or none. It sets Prev and Existed of each change and returns the
// store's new revision (see [Store.Snapshot]).
//
// A change whose entry was not prepared for the current indexes (a literal
// entry, or one prepared before [Writer.AddIndexers]) gets its missing
// index values computed first. If that fails for an index, the object is
// stored but left out of that index, and the returned error says so; a
// change without an object or a key is skipped and reported the same way.
func (w *Writer[T]) Apply(changes []Change[T]) (uint64, error) {
	return w.c.write(changes, false)
}

// Replace makes the store hold exactly entries, as one write. When two
// entries have the same key, the later one wins. Index values are handled
// as by [Writer.Apply]. It returns the store's new revision.
func (w *Writer[T]) Replace(entries []Entry[T]) (uint64, error) {
	changes := make([]Change[T], len(entries))
	for i, e := range entries {
		changes[i].Entry = e
	}
	return w.c.write(changes, true)
}

// presize is the number of changes from which a write into an empty
// store sizes its map for them at once.
const presize = 1024

// write completes the index values of changes without the lock, then, under
// it, empties the store if replace is set and makes the changes; it starts
// over if AddIndexers installed new indexes meanwhile.
func (c *core[T]) write(changes []Change[T], replace bool) (uint64, error) {
	for {
		s := c.set.Load()
		var errs []error
		for i := range changes {
			if err := c.ready(&changes[i], s); err != nil {
				errs = append(errs, err)
			}
		}
		c.mu.Lock()
		if c.cur != s {
			c.mu.Unlock()
			continue
		}
		if replace {
			c.tab, c.vals = newTable[T](c.tab.labeled), map[Key][][]string{}
			for i := range c.custom {
				c.custom[i] = index{}
			}
			for i := range c.labels {
				c.labels[i] = labelIndex[T]{}
			}
		}
		if c.tab.n == 0 && len(changes) >= presize {
			c.presizeLocked(changes) // a first list: grow once
		}
		for i := range changes {
			c.applyLocked(&changes[i])
		}
		c.rev++
		rev := c.rev
		c.mu.Unlock()
		return rev, errors.Join(errs...)
	}
}

// ready checks a change and completes its index values for s, without the
// lock. It reports what cannot be stored.
func (c *core[T]) ready(ch *Change[T], s *indexSet[T]) error {
	ch.refused = false
	var zero T
	if ch.Delete {
		return nil
	}
	if ch.Object == zero {
		ch.refused = true
		return fmt.Errorf("cache: %v: %w", ch.Key, ErrNilObject)
	}
	if ch.Key == (Key{}) {
		k, err := checkedKey(ch.Object)
		if err != nil {
			ch.refused = true
			return err
		}
		ch.Key = k
	}
	e := &ch.Entry
	if e.set() == s {
		return nil
	}
	from := 0
	if old := e.set(); old != nil && old.owner == c && len(e.vals()) <= len(s.names) {
		from = len(e.vals()) // an older set of this writer: its names are a prefix
	}
	vals := slices.Clip(e.vals()[:from])
	var errs []error
	for i := from; i < len(s.names); i++ {
		v, err := callIndexFunc(s.names[i], s.funcs[i], e.Object)
		if err != nil {
			errs = append(errs, fmt.Errorf("cache: %v: %w; stored without this index", e.Key, err))
		}
		vals = append(vals, v)
	}
	e.idx = preparedFor(s, vals)
	if len(errs) > 0 {
		// Not marked as computed: if Apply starts over (AddIndexers
		// installed an index meanwhile), the failure is found and
		// reported again instead of being taken for a computed value.
		e.idx = &prepared[T]{vals: vals}
	}
	return errors.Join(errs...)
}

// presizeLocked sizes the namespaces of an empty store for the objects
// changes will store.
func (c *core[T]) presizeLocked(changes []Change[T]) {
	counts := map[string]int{}
	for i := range changes {
		if !changes[i].Delete {
			counts[changes[i].Key.Namespace]++
		}
	}
	for ns, n := range counts {
		c.tab.presize(ns, n)
	}
}

// applyLocked makes one change that ready has checked.
func (c *core[T]) applyLocked(ch *Change[T]) {
	k := ch.Key
	m, cur, existed := c.tab.lookup(k)
	old := cur.obj
	ch.Prev, ch.Existed = old, existed
	switch {
	case ch.Delete:
		if existed {
			c.unindexLocked(k, old)
			c.tab.del(k)
			delete(c.vals, k)
		}
		return
	case ch.refused:
		return
	case existed && old == ch.Object:
		return // the same object again (a resync, an unchanged relist item)
	}
	obj := ch.Object
	c.tab.put(m, k, obj, existed)
	if len(c.custom) > 0 {
		oldVals := c.vals[k]
		for i, ix := range c.custom {
			if existed && slices.Equal(oldVals[i], ch.vals()[i]) {
				continue
			}
			if existed {
				ix.removeAll(oldVals[i], k)
			}
			ix.addAll(ch.vals()[i], k)
		}
		c.vals[k] = ch.vals()
	}
	if len(c.labels) > 0 {
		oldLabels, newLabels := map[string]string(nil), obj.GetLabels()
		if existed {
			oldLabels = old.GetLabels()
		}
		for i, lk := range c.labelKeys {
			ov, had := oldLabels[lk]
			nv, has := newLabels[lk]
			if had && (!has || ov != nv) {
				c.labels[i].remove(ov, k)
			}
			if has {
				c.labels[i].put(nv, k, obj) // the index holds the new object
			}
		}
	}
}

// unindexLocked removes k, holding old, from every index.
func (c *core[T]) unindexLocked(k Key, old T) {
	if vals := c.vals[k]; len(vals) > 0 {
		for i, ix := range c.custom {
			ix.removeAll(vals[i], k)
		}
	}
	labels := old.GetLabels()
	for i, lk := range c.labelKeys {
		if v, ok := labels[lk]; ok {
			c.labels[i].remove(v, k)
		}
	}
}

// AddIndexers adds custom indexes, also when objects are already stored:
// the new indexes are built over them, with the index functions running
// without the lock while writes go on. If a name is taken or an index
// function fails on any stored object (including one written while
// AddIndexers runs), nothing changes and the error says which.
func (w *Writer[T]) AddIndexers(add Indexers[T]) error {
	if len(add) == 0 {
		return nil
	}
	c := w.c
	for {
		c.mu.RLock()
		s := c.cur
		todo := make(map[Key]T, c.tab.n)
		c.tab.each(func(k Key, s slot[T]) bool {
			todo[k] = s.obj
			return true
		})
		c.mu.RUnlock()
		next, err := s.with(add)
		if err != nil {
			return err
		}
		done, err := c.buildIndexes(s, next, todo)
		if err != nil || done {
			return err
		}
	}
}

// computed is an object with the values of the indexes being added.
type computed[T Object] struct {
	obj  T
	vals [][]string
}

// buildIndexes computes next's new index values for todo and installs them
// once they cover every stored object, computing again, without the lock,
// for objects written meanwhile. It returns false, nil if the index set
// changed meanwhile (a concurrent AddIndexers): the caller starts over.
func (c *core[T]) buildIndexes(s, next *indexSet[T], todo map[Key]T) (bool, error) {
	from := len(s.names)
	have := make(map[Key]computed[T], len(todo))
	for {
		for k, obj := range todo {
			vals, err := next.values(obj, nil, from)
			if err != nil {
				return false, fmt.Errorf("cache: %v: %w", k, err)
			}
			have[k] = computed[T]{obj: obj, vals: vals}
		}
		c.mu.Lock()
		if c.cur != s {
			c.mu.Unlock()
			return false, nil
		}
		todo = map[Key]T{}
		c.tab.each(func(k Key, s slot[T]) bool {
			if h, ok := have[k]; !ok || h.obj != s.obj {
				todo[k] = s.obj
			}
			return true
		})
		if len(todo) == 0 {
			c.installLocked(next, from, have)
			c.mu.Unlock()
			return true, nil
		}
		c.mu.Unlock()
	}
}

// installLocked adds next's new indexes with their values.
func (c *core[T]) installLocked(next *indexSet[T], from int, have map[Key]computed[T]) {
	added := make([]index, len(next.names)-from)
	for i := range added {
		added[i] = index{}
	}
	c.tab.each(func(k Key, _ slot[T]) bool {
		vals := have[k].vals
		c.vals[k] = slices.Concat(c.vals[k], vals)
		for i, ix := range added {
			ix.addAll(vals[i], k)
		}
		return true
	})
	c.custom = append(slices.Clip(c.custom), added...)
	c.cur = next
	c.set.Store(next)
}
