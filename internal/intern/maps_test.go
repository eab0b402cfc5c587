package intern

import (
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

func sameMap[M any](a, b M) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// TestCanonicalMap: equal maps get one copy, in whatever order they were
// filled; unequal ones do not; a copy no object holds is forgotten; an
// empty map or one too long is left as it is.
func TestCanonicalMap(t *testing.T) {
	tb := newMapTable()
	a := canonicalMap(tb, map[string]string{"app": "web", "tier": "fe"}, hashStringEntry)
	b := canonicalMap(tb, map[string]string{"tier": "fe", "app": "web"}, hashStringEntry)
	if !sameMap(a, b) {
		t.Errorf("equal maps are two copies")
	}
	if c := canonicalMap(tb, map[string]string{"app": "db", "tier": "fe"}, hashStringEntry); sameMap(a, c) || c["app"] != "db" {
		t.Errorf("a map of other values got the canonical copy %v", c)
	}
	if !maps.Equal(a, map[string]string{"app": "web", "tier": "fe"}) {
		t.Errorf("the canonical copy changed: %v", a)
	}
	big := map[string]string{}
	for i := range maxMapLen + 1 {
		big[fmt.Sprint(i)] = "v"
	}
	if got := canonicalMap(tb, big, hashStringEntry); !sameMap(got, big) {
		t.Errorf("a map of %d entries was replaced", len(big))
	}
	empty := map[string]string{}
	if got := canonicalMap(tb, empty, hashStringEntry); !sameMap(got, empty) {
		t.Errorf("an empty map was replaced")
	}

	q := canonicalMap(tb, map[string]resource.Quantity{"cpu": resource.MustParse("250m")}, hashQuantityEntry)
	if r := canonicalMap(tb, map[string]resource.Quantity{"cpu": resource.MustParse("250m")}, hashQuantityEntry); !sameMap(q, r) {
		t.Errorf("equal resource lists are two copies")
	}
	if r := canonicalMap(tb, map[string]resource.Quantity{"cpu": resource.MustParse("500m")}, hashQuantityEntry); sameMap(q, r) {
		t.Errorf("resource lists of other quantities share a copy")
	}

	// Dropped: forgotten after a collection and a sweep.
	for i := range 10000 {
		canonicalMap(tb, map[string]string{"gone": fmt.Sprint(i)}, hashStringEntry)
	}
	runtime.GC()
	runtime.GC()
	for i := range 10000 {
		canonicalMap(tb, map[string]string{"new": fmt.Sprint(i)}, hashStringEntry)
	}
	if n := tb.size(); n > 15000 {
		t.Errorf("%d entries after 10000 dead maps and 10000 new ones: the dead are not swept", n)
	}
	runtime.KeepAlive(a)
	runtime.KeepAlive(q)
}
