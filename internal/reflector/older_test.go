package reflector

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// TestOlderMatchesCompare: the string comparison of resourceVersions
// agrees with parsing them, on seeded random versions of every length,
// with leading zeros, empty and non-numeric ones among them.
func TestOlderMatchesCompare(t *testing.T) {
	seed := rand.Uint64()
	r := rand.New(rand.NewPCG(seed, 0))
	gen := func() string {
		switch r.IntN(8) {
		case 0:
			return ""
		case 1:
			return "0" + strconv.Itoa(r.IntN(100))
		case 2:
			return "12a"
		}
		return strconv.FormatUint(r.Uint64N(1<<uint(1+r.IntN(60))), 10)
	}
	for range 20000 {
		a, b := gen(), gen()
		if r.IntN(4) == 0 && len(a) > 1 {
			b = a[:len(a)-1] + string('0'+byte(r.IntN(10))) // same length, close
		}
		c, err := resourceversion.CompareResourceVersion(a, b)
		want := err == nil && c < 0
		if got := older(a, b); got != want {
			t.Fatalf("older(%q, %q) = %v, want %v (seed %d)", a, b, got, want, seed)
		}
	}
}
