package sharding_test

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	upstream "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"

	"github.com/typedinformer/informer/sharding"
)

func TestSelector(t *testing.T) {
	tests := []struct {
		name string
		r    sharding.Range
		key  sharding.Key
		want string
	}{
		{"full", sharding.Full, sharding.ByUID, "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"},
		{"first half", sharding.Range{End: 1 << 63}, sharding.ByUID, "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"},
		{"second half", sharding.Range{Start: 1 << 63}, sharding.ByNamespace, "shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')"},
		{"small", sharding.Range{Start: 0xab, End: 0xabc}, sharding.ByUID, "shardRange(object.metadata.uid, '0x00000000000000ab', '0x0000000000000abc')"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.r.Selector(tt.key)); diff != "" {
				t.Errorf("Selector (-want +got):\n%s", diff)
			}
		})
	}
}

// bound is what the API server accepts as a bound: 16 lowercase hex digits,
// or 2^64.
var bound = regexp.MustCompile(`'0x([0-9a-f]{16}|10000000000000000)'`)

func TestSplit(t *testing.T) {
	tests := []struct {
		name    string
		weights []int
		want    []sharding.Range
		wantErr bool
	}{
		{"one", []int{1}, []sharding.Range{sharding.Full}, false},
		{"two", []int{1, 1}, []sharding.Range{{End: 1 << 63}, {Start: 1 << 63}}, false},
		{"three", []int{1, 1, 1}, []sharding.Range{{End: 0x5555555555555555}, {Start: 0x5555555555555555, End: 0xaaaaaaaaaaaaaaaa}, {Start: 0xaaaaaaaaaaaaaaaa}}, false},
		{"weighted", []int{1, 3}, []sharding.Range{{End: 1 << 62}, {Start: 1 << 62}}, false},
		{"none", nil, nil, true},
		{"zero", []int{1, 0}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := sharding.Split(tt.weights...)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Split error %v, want error %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Split (-want +got):\n%s", diff)
			}
			for _, r := range got {
				if n := len(bound.FindAllString(r.Selector(sharding.ByUID), -1)); n != 2 {
					t.Errorf("%v: selector %q has %d valid bounds, want 2", r, r.Selector(sharding.ByUID), n)
				}
			}
		})
	}
}

// TestContainsMatchesUpstream checks Shard.Contains against the API
// machinery's own Matches, and Hash against HashField, on random objects
// and ranges (the server uses the same code).
func TestContainsMatchesUpstream(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 1))
	defer func() {
		if t.Failed() {
			t.Logf("seed %d", seed)
		}
	}()
	for i := 0; i < 2000; i++ {
		a, b := rng.Uint64(), rng.Uint64()
		if a > b {
			a, b = b, a
		}
		r := sharding.Range{Start: a, End: b}
		switch i % 4 {
		case 0:
			r.End = 0 // up to 2^64
		case 1:
			r.Start = 0
		}
		if r.End != 0 && r.Start >= r.End {
			continue
		}
		key := sharding.Key(i % 2)
		obj := &corev1.Pod{}
		obj.UID = types.UID(fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint64()&0xffffffffffff))
		obj.Namespace = fmt.Sprintf("ns-%d", rng.IntN(1000))
		s := sharding.Shard{Key: key, Range: r}
		bounds := bound.FindAllStringSubmatch(s.Selector(), -1)
		sel := upstream.NewSelector(upstream.ShardRangeRequirement{Key: key.String(), Start: "0x" + bounds[0][1], End: "0x" + bounds[1][1]})
		want, err := sel.Matches(obj)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Contains(obj); got != want {
			t.Fatalf("%v Contains(%s) = %v, upstream Matches = %v", s, obj.UID, got, want)
		}
		v := string(obj.UID)
		if key == sharding.ByNamespace {
			v = obj.Namespace
		}
		if got, want := fmt.Sprintf("%016x", sharding.Hash(v)), upstream.HashField(v); got != want {
			t.Fatalf("Hash(%q) = %s, HashField = %s", v, got, want)
		}
	}
}

func TestOverlapsAndFraction(t *testing.T) {
	half := sharding.Range{End: 1 << 63}
	upper := sharding.Range{Start: 1 << 63}
	tests := []struct {
		name string
		a, b sharding.Range
		want bool
	}{
		{"halves", half, upper, false},
		{"full and half", sharding.Full, upper, true},
		{"adjacent", sharding.Range{Start: 1, End: 5}, sharding.Range{Start: 5, End: 9}, false},
		{"inside", sharding.Range{Start: 1, End: 9}, sharding.Range{Start: 3, End: 4}, true},
		{"tail", sharding.Range{Start: 10}, sharding.Range{Start: 3, End: 11}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.Overlaps(tt.b); got != tt.want {
				t.Errorf("%v.Overlaps(%v) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
			if got := tt.b.Overlaps(tt.a); got != tt.want {
				t.Errorf("%v.Overlaps(%v) = %v, want %v", tt.b, tt.a, got, tt.want)
			}
		})
	}
	if got := half.Fraction() + upper.Fraction(); got != 1 {
		t.Errorf("halves add up to %v, want 1", got)
	}
	if got := sharding.Full.Fraction(); got != 1 {
		t.Errorf("Full.Fraction() = %v, want 1", got)
	}
}
