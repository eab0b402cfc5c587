package sharding

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrBadWeights is wrapped by the errors of Split for no weights or a
// weight below 1.
var ErrBadWeights = errors.New("sharding: weights must be at least 1")

// Key is what an object's shard is computed from: the FNV-1a 64 hash of
// its UID or of its namespace, the two keys the API server supports.
type Key uint8

const (
	// ByUID hashes metadata.uid: objects spread evenly over the shards.
	ByUID Key = iota
	// ByNamespace hashes metadata.namespace: every object of a namespace
	// is in the same shard.
	ByNamespace
)

// String returns the field path the selector names:
// object.metadata.uid or object.metadata.namespace.
func (k Key) String() string {
	switch k {
	case ByUID:
		return "object.metadata.uid"
	case ByNamespace:
		return "object.metadata.namespace"
	}
	return "Key(" + strconv.Itoa(int(k)) + ")"
}

// valid reports whether k is one of the keys.
func (k Key) valid() bool { return k == ByUID || k == ByNamespace }

// Hash returns the hash of obj's key field, the value the server compares
// with the range bounds.
func (k Key) Hash(obj metav1.Object) uint64 {
	if k == ByNamespace {
		return Hash(obj.GetNamespace())
	}
	return Hash(string(obj.GetUID()))
}

// FNV-1a 64 parameters.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// Hash is FNV-1a 64 over s's bytes, as the API server hashes a shard key,
// without allocating.
func Hash(s string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// Range is a contiguous part of the 64-bit hash space: the hashes h with
// Start <= h < End. End 0 stands for 2^64, the end of the space, so the
// zero Range, Full, is the whole space. An empty range cannot be written
// (a replica without a range has no Range).
type Range struct {
	// Start is the first hash in the range.
	Start uint64
	// End is the first hash after the range; 0 means 2^64.
	End uint64
}

// Full is the whole hash space.
var Full = Range{}

// Contains reports whether hash h is in r.
func (r Range) Contains(h uint64) bool {
	if r.End == 0 {
		return h >= r.Start
	}
	return h >= r.Start && h < r.End
}

// Overlaps reports whether r and o have a hash in common.
func (r Range) Overlaps(o Range) bool {
	// r.Start < o.End && o.Start < r.End, with End 0 as 2^64.
	return (o.End == 0 || r.Start < o.End) && (r.End == 0 || o.Start < r.End)
}

// Intersect returns the hashes r and o have in common, nil if none.
func (r Range) Intersect(o Range) *Range {
	if !r.Overlaps(o) {
		return nil
	}
	out := Range{Start: max(r.Start, o.Start), End: r.End}
	if r.End == 0 || (o.End != 0 && o.End < r.End) {
		out.End = o.End
	}
	return &out
}

// Fraction is the share of the hash space r covers, in [0, 1].
func (r Range) Fraction() float64 {
	n := r.End - r.Start // wraps to the right size for End 0
	if r.End == 0 && r.Start == 0 {
		return 1
	}
	return float64(n) / (1 << 64)
}

// String shows r as a half-open interval of hexadecimal bounds.
func (r Range) String() string {
	return "[" + hexBound(r.Start, false) + ", " + hexBound(r.End, true) + ")"
}

// Selector returns the shard selector of r over k in the API server's
// syntax, which the server echoes unchanged in ListMeta.ShardInfo:
//
//	shardRange(object.metadata.uid, '0x0000000000000000', '0x5555555555555555')
func (r Range) Selector(k Key) string {
	return "shardRange(" + k.String() + ", '" + hexBound(r.Start, false) + "', '" + hexBound(r.End, true) + "')"
}

// hexBound writes a bound as the server wants it: 0x and exactly 16
// lowercase hex digits, or 0x10000000000000000 for an end of 2^64.
func hexBound(v uint64, end bool) string {
	if end && v == 0 {
		return "0x10000000000000000"
	}
	return fmt.Sprintf("0x%016x", v)
}

// Split cuts the hash space into contiguous ranges, one per weight, in
// order, each of a size proportional to its weight: Split(1, 1, 1) gives
// three equal thirds. Every replica that splits the same weights gets the
// same ranges. It fails for no weights or a weight below 1.
func Split(weights ...int) ([]Range, error) {
	if len(weights) == 0 {
		return nil, fmt.Errorf("%w: none given", ErrBadWeights)
	}
	var total uint64
	for i, w := range weights {
		if w < 1 {
			return nil, fmt.Errorf("%w: weight %d is %d", ErrBadWeights, i, w)
		}
		total += uint64(w)
	}
	out := make([]Range, len(weights))
	var cum uint64
	var start uint64
	for i, w := range weights {
		cum += uint64(w)
		var end uint64 // 2^64 for the last
		if i < len(weights)-1 {
			// floor(cum * 2^64 / total); cum < total, so the quotient fits.
			end, _ = bits.Div64(cum, 0, total)
		}
		out[i] = Range{Start: start, End: end}
		start = end
	}
	return out, nil
}

// Shard is a hash key and a range: the shard an informer is restricted to
// with typed.Options.Shard.
type Shard struct {
	// Key is the hashed field.
	Key Key
	// Range is the range of hashes in the shard.
	Range Range
}

// Selector returns the shard's selector (see Range.Selector).
func (s Shard) Selector() string { return s.Range.Selector(s.Key) }

// Contains reports whether obj is in the shard: the check the API server
// makes, computed from the hash as a number rather than compared as hex
// text, with no allocation.
func (s Shard) Contains(obj metav1.Object) bool { return s.Range.Contains(s.Key.Hash(obj)) }
