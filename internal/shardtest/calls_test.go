package shardtest

import (
	"testing"

	"github.com/typedinformer/informer/cache"
)

func TestStale(t *testing.T) {
	k := cache.Key{Namespace: "ns", Name: "p"}
	for _, tc := range []struct {
		name  string
		calls []Call
		want  int
	}{
		{"a handoff: a says it moved out, b lists the same version", []Call{{"a", k, 5, false}, {"a", k, 5, true}, {"b", k, 5, false}}, 0},
		{"a takeover from a crashed replica, at a later version", []Call{{"a", k, 5, false}, {"b", k, 7, false}}, 0},
		{"a takeover from a crashed replica, at the same version", []Call{{"a", k, 5, false}, {"b", k, 5, false}}, 0},
		{"a paused replica delivers what b handled", []Call{{"a", k, 5, false}, {"b", k, 7, false}, {"a", k, 7, false}}, 1},
		{"a paused replica delivers an older version", []Call{{"a", k, 5, false}, {"b", k, 7, false}, {"a", k, 6, false}}, 1},
		{"a's moved-out notice after the takeover", []Call{{"a", k, 5, false}, {"b", k, 7, false}, {"a", k, 5, true}}, 0},
		{"a rejoins: b moved out, a lists", []Call{{"a", k, 5, false}, {"b", k, 7, false}, {"a", k, 5, true}, {"b", k, 7, true}, {"a", k, 7, false}}, 0},
	} {
		c := Calls{all: tc.calls}
		if got := c.Stale(); len(got) != tc.want {
			t.Errorf("%s: stale %v, want %d", tc.name, got, tc.want)
		}
	}
}
