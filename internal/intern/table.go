package intern

import (
	"hash/maphash"
	"strings"
	"sync"
	"unsafe"
	"weak"
)

// The canonical copies live in a table of weak pointers to their bytes,
// not in package unique: unique.Make(s).Value() returns a string whose
// bytes outlive the Handle, and the canonical map forgets an entry once
// its Handle is collected, at the next GC, even though objects still
// hold the string. A string decoded after a GC then gets a new copy, and
// a cache filled over many GCs shares little. Here an entry lives as long
// as any object holds its bytes: the weak pointer is to the bytes
// themselves.

// shards spreads the table over locks, so that decoding goroutines seldom
// wait for one another.
const shards = 64

// table maps the hash of a string to its canonical copy.
type table struct {
	seed   maphash.Seed
	shards [shards]shard[entry]
}

// shard is one lock's part of a table of weakly held copies (strings'
// bytes here, maps in maps.go), filed by hash.
type shard[E interface{ dead() bool }] struct {
	mu   sync.Mutex
	m    map[uint64]E
	live int // entries alive at the last sweep
	_    [40]byte
}

// added sweeps the shard, under its lock, once it has doubled since the
// last sweep: the sweep's cost is spread over the insertions.
func (sh *shard[E]) added() {
	if len(sh.m) < 2*sh.live+64 {
		return
	}
	for h, e := range sh.m {
		if e.dead() {
			delete(sh.m, h)
		}
	}
	sh.live = len(sh.m)
}

// size returns the number of entries of shards, dead or alive.
func size[E interface{ dead() bool }](shards []shard[E]) int {
	n := 0
	for i := range shards {
		sh := &shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// entry is a canonical copy: its bytes, held weakly, and its length.
type entry struct {
	p weak.Pointer[byte]
	n int
}

func (e entry) dead() bool { return e.p.Value() == nil }

var strs = newTable()

func newTable() *table {
	t := &table{seed: maphash.MakeSeed()}
	for i := range t.shards {
		t.shards[i].m = map[uint64]entry{}
	}
	return t
}

// canonical returns the canonical copy of s, making one if there is none;
// s itself if another string with the same hash holds the slot.
func (t *table) canonical(s string) string { return t.canonicalHashed(s, hashOf(t, s)) }

// canonicalHashed is canonical for s of hash h.
func (t *table) canonicalHashed(s string, h uint64) string {
	sh := &t.shards[h%shards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e, ok := sh.m[h]; ok {
		if p := e.p.Value(); p != nil {
			if c := unsafe.String(p, e.n); c == s {
				return c
			}
			return s // another string of the same hash
		}
	}
	c := strings.Clone(s)
	sh.m[h] = entry{p: weak.Make(unsafe.StringData(c)), n: len(c)}
	sh.added()
	return c
}

// size returns the number of entries, dead or alive.
func (t *table) size() int { return size(t.shards[:]) }

// hashOf is the hash t files s under.
func hashOf(t *table, s string) uint64 { return maphash.String(t.seed, s) }
