package fifo_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Op scripts, shared by the reference-model tests, the differential tests
// against client-go and the fuzz targets: the ops, a generator of plausible
// random scripts, a byte encoding for fuzzing and a small text form for
// hand-written scenarios.

type opKind uint8

const (
	opAdd      opKind = iota // a watch ADDED event
	opUpdate                 // a watch MODIFIED event
	opDelete                 // a watch DELETED event
	opReplace                // a full list (List, may repeat keys)
	opResync                 // a resync
	opPop                    // one Pop (Alt: client-go's PopBatch for RealFIFO)
	opBookmark               // a Bookmark delta
	opPush                   // one Push of an Updated per List key
	opClose                  // Close (differential runs: the end of the script)
	numOpKinds
)

var opNames = [...]string{"add", "upd", "del", "replace", "resync", "pop", "bookmark", "push", "close"}

type op struct {
	Kind opKind
	Key  int   // add, upd, del: a key index (keyOfIndex)
	List []int // replace, push: key indexes in order
	Alt  bool  // pop: the variant (see opPop)
}

func (o op) String() string {
	s := opNames[o.Kind]
	switch o.Kind {
	case opAdd, opUpdate, opDelete:
		s += " " + strconv.Itoa(o.Key)
	case opReplace, opPush:
		for _, k := range o.List {
			s += " " + strconv.Itoa(k)
		}
	case opPop:
		if o.Alt {
			s = "popb"
		}
	}
	return s
}

// scriptString prints a script in the form parseScript reads.
func scriptString(ops []op) string {
	var b strings.Builder
	for i, o := range ops {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(o.String())
	}
	return b.String()
}

// parseScript reads ops separated by ";": "add K", "upd K", "del K",
// "replace K...", "resync", "pop", "popb", "bookmark", "push K...",
// "close"; K is a key index. It panics on a malformed script.
func parseScript(s string) []op {
	var ops []op
	for _, f := range strings.Split(s, ";") {
		w := strings.Fields(f)
		if len(w) == 0 {
			continue
		}
		var ints []int
		for _, a := range w[1:] {
			n, err := strconv.Atoi(a)
			if err != nil || n < 0 || n >= numKeys {
				panic(fmt.Sprintf("parseScript: bad key %q in %q", a, f))
			}
			ints = append(ints, n)
		}
		o := op{}
		switch w[0] {
		case "popb":
			o = op{Kind: opPop, Alt: true}
		default:
			k := slices.Index(opNames[:], w[0])
			if k < 0 {
				panic(fmt.Sprintf("parseScript: bad op %q", f))
			}
			o.Kind = opKind(k)
		}
		switch o.Kind {
		case opAdd, opUpdate, opDelete:
			if len(ints) != 1 {
				panic(fmt.Sprintf("parseScript: %q takes one key", f))
			}
			o.Key = ints[0]
		case opReplace, opPush:
			o.List = ints
		default:
			if len(ints) != 0 {
				panic(fmt.Sprintf("parseScript: %q takes no key", f))
			}
		}
		ops = append(ops, o)
	}
	return ops
}

// genConfig selects what genScript generates.
type genConfig struct {
	inOrder bool // bookmark and push ops (Queue scripts)
	close   bool // close ops in the script, with ops after them
}

// genScript generates n ops. It simulates the apiserver's set of objects so
// that most events are plausible (add of an absent key, upd or del of a
// present one) and lists mostly hold what is present, with drift: keys
// deleted or created while the watch was down, the odd duplicate, the odd
// empty list. The rest is arbitrary, which the queues must take too.
func genScript(rng *rand.Rand, n int, cfg genConfig) []op {
	present := map[int]bool{}
	pick := func(want bool) int {
		var ks []int
		for k := range numKeys {
			if present[k] == want {
				ks = append(ks, k)
			}
		}
		if len(ks) == 0 || rng.IntN(5) == 0 {
			return rng.IntN(numKeys)
		}
		return ks[rng.IntN(len(ks))]
	}
	type weighted struct {
		kind opKind
		w    int
	}
	table := []weighted{{opAdd, 16}, {opUpdate, 16}, {opDelete, 12}, {opReplace, 6}, {opResync, 5}, {opPop, 32}}
	if cfg.inOrder {
		table = append(table, weighted{opBookmark, 3}, weighted{opPush, 4})
	}
	if cfg.close {
		table = append(table, weighted{opClose, 1})
	}
	total := 0
	for _, e := range table {
		total += e.w
	}
	ops := make([]op, 0, n)
	for len(ops) < n {
		r := rng.IntN(total)
		var kind opKind
		for _, e := range table {
			if r < e.w {
				kind = e.kind
				break
			}
			r -= e.w
		}
		o := op{Kind: kind}
		switch kind {
		case opAdd:
			o.Key = pick(false)
			present[o.Key] = true
		case opUpdate:
			o.Key = pick(true)
			present[o.Key] = true
		case opDelete:
			o.Key = pick(true)
			delete(present, o.Key)
		case opReplace:
			if rng.IntN(3) == 0 { // missed events
				delete(present, rng.IntN(numKeys))
				present[rng.IntN(numKeys)] = true
			}
			if rng.IntN(20) != 0 {
				for k := range numKeys {
					if present[k] {
						o.List = append(o.List, k)
					}
				}
			}
			rng.Shuffle(len(o.List), func(i, j int) { o.List[i], o.List[j] = o.List[j], o.List[i] })
			if len(o.List) > 0 && rng.IntN(8) == 0 {
				o.List = append(o.List, o.List[rng.IntN(len(o.List))])
			}
			clear(present)
			for _, k := range o.List {
				present[k] = true
			}
		case opPush:
			for range 1 + rng.IntN(4) {
				o.List = append(o.List, rng.IntN(numKeys))
			}
		case opPop:
			o.Alt = rng.IntN(2) == 0
		}
		ops = append(ops, o)
	}
	return ops
}

// The byte encoding of a script, for fuzzing: an op is a header byte h,
// kind = h%9, key = h/9%numKeys, Alt = h/9/numKeys%2; replace and push are
// followed by a length byte (mod 8) and that many key bytes (mod numKeys).
// Every byte string decodes to some script.

func encodeScript(ops []op) []byte {
	var b []byte
	for _, o := range ops {
		alt := 0
		if o.Alt {
			alt = 1
		}
		b = append(b, byte(int(o.Kind)+int(numOpKinds)*(o.Key+numKeys*alt)))
		if o.Kind == opReplace || o.Kind == opPush {
			b = append(b, byte(len(o.List)))
			for _, k := range o.List {
				b = append(b, byte(k))
			}
		}
	}
	return b
}

func decodeScript(b []byte) []op {
	var ops []op
	for len(b) > 0 {
		h := int(b[0])
		b = b[1:]
		o := op{Kind: opKind(h % int(numOpKinds))}
		rest := h / int(numOpKinds)
		o.Alt = rest/numKeys%2 == 1
		switch o.Kind {
		case opAdd, opUpdate, opDelete:
			o.Key = rest % numKeys
		case opReplace, opPush:
			n := 0
			if len(b) > 0 {
				n, b = int(b[0])%8, b[1:]
			}
			for ; n > 0 && len(b) > 0; n-- {
				o.List = append(o.List, int(b[0])%numKeys)
				b = b[1:]
			}
		}
		ops = append(ops, o)
	}
	return ops
}
