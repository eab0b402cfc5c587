package intern

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"
	"weak"
)

// TestTable checks the table of canonical copies: a copy outlives
// collections while a string holds it, is forgotten once none does, and a
// hash collision leaves the string unshared.
func TestTable(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, tb *table) error
	}{
		{"shared across a GC", func(t *testing.T, tb *table) error {
			a := tb.canonical(strings.Clone("ns-0"))
			runtime.GC()
			runtime.GC()
			if b := tb.canonical(strings.Clone("ns-0")); unsafe.StringData(a) != unsafe.StringData(b) {
				return fmt.Errorf("a copy made after a GC is not the first")
			}
			runtime.KeepAlive(a)
			return nil
		}},
		{"forgotten once unused", func(t *testing.T, tb *table) error {
			const dead, kept = 10000, 10000
			for i := range dead {
				tb.canonical(fmt.Sprintf("gone-%d", i))
			}
			runtime.GC()
			runtime.GC()
			held := make([]string, kept) // enough insertions to sweep every shard
			for i := range held {
				held[i] = tb.canonical(fmt.Sprintf("new-%d", i))
			}
			if n := tb.size(); n >= kept+dead/2 {
				return fmt.Errorf("%d entries after %d died and %d were added, want fewer than %d", n, dead, kept, kept+dead/2)
			}
			runtime.KeepAlive(held)
			return nil
		}},
		{"hash collision", func(t *testing.T, tb *table) error {
			other := strings.Clone("other")
			s := strings.Clone("mine")
			h := hashOf(tb, s)
			tb.shards[h%shards].m[h] = entry{p: weak.Make(unsafe.StringData(other)), n: len(other)}
			if got := tb.canonical(s); got != s || unsafe.StringData(got) != unsafe.StringData(s) {
				return fmt.Errorf("got %q at another address, want s itself", got)
			}
			runtime.KeepAlive(other)
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(t, newTable()); err != nil {
				t.Error(err)
			}
		})
	}
}
