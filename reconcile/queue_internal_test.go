package reconcile

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/typedinformer/informer/cache"
)

func k(name string) cache.Key { return cache.Key{Namespace: "ns", Name: name} }

// op is one step on a twoLevel: mark a key background or live, push or
// touch it, forget it, or pop (into the result).
type op struct {
	do  string // "bg", "live", "push", "touch", "forget", "pop"
	key string
}

func TestTwoLevelOrder(t *testing.T) {
	tests := []struct {
		name string
		ops  []op
		want []string
	}{
		{"fifo within a level",
			[]op{{"push", "a"}, {"push", "b"}, {"bg", "x"}, {"push", "x"}, {"bg", "y"}, {"push", "y"}, {"pop", ""}, {"pop", ""}, {"pop", ""}, {"pop", ""}},
			[]string{"a", "b", "x", "y"}},
		{"live before background pushed earlier",
			[]op{{"bg", "x"}, {"push", "x"}, {"push", "a"}, {"pop", ""}, {"pop", ""}},
			[]string{"a", "x"}},
		{"a live change moves a queued background key up",
			[]op{{"bg", "x"}, {"push", "x"}, {"bg", "y"}, {"push", "y"}, {"push", "a"}, {"live", "y"}, {"touch", "y"}, {"pop", ""}, {"pop", ""}, {"pop", ""}},
			[]string{"a", "y", "x"}},
		{"a touch without a live change keeps the level",
			[]op{{"bg", "x"}, {"push", "x"}, {"push", "a"}, {"touch", "x"}, {"pop", ""}, {"pop", ""}},
			[]string{"a", "x"}},
		{"a retry of background work stays background",
			[]op{{"bg", "x"}, {"push", "x"}, {"pop", ""}, {"push", "a"}, {"push", "x"}, {"push", "b"}, {"pop", ""}, {"pop", ""}, {"pop", ""}},
			[]string{"x", "a", "b", "x"}},
		{"forgotten background work comes back live",
			[]op{{"bg", "x"}, {"push", "x"}, {"pop", ""}, {"forget", "x"}, {"push", "a"}, {"push", "x"}, {"push", "b"}, {"pop", ""}, {"pop", ""}, {"pop", ""}},
			[]string{"x", "a", "x", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newTwoLevel()
			var got []string
			for _, o := range tt.ops {
				switch o.do {
				case "bg":
					q.markBackground(k(o.key))
				case "live":
					q.markLive(k(o.key))
				case "push":
					q.Push(k(o.key))
				case "touch":
					q.Touch(k(o.key))
				case "forget":
					q.forget(k(o.key))
				case "pop":
					got = append(got, q.Pop().Name)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("pop order (-want +got):\n%s", diff)
			}
			if q.Len() != 0 || q.background != 0 {
				t.Errorf("after popping everything: Len %d, background %d, want 0, 0", q.Len(), q.background)
			}
		})
	}
}

// TestTwoLevelNoStarvation keeps the live level full: a background key
// still goes after every liveBurst live keys.
func TestTwoLevelNoStarvation(t *testing.T) {
	q := newTwoLevel()
	for i := range 3 {
		key := k(fmt.Sprintf("bg-%d", i))
		q.markBackground(key)
		q.Push(key)
	}
	var at []int
	for i := range 4 * (liveBurst + 1) {
		q.Push(k(fmt.Sprintf("live-%d", i))) // one new live key per pop
		if key := q.Pop(); key.Name[:3] == "bg-" {
			at = append(at, i)
		}
	}
	want := []int{liveBurst, 2*liveBurst + 1, 3*liveBurst + 2}
	if diff := cmp.Diff(want, at); diff != "" {
		t.Errorf("pops that took a background key (-want +got):\n%s", diff)
	}
}
