package fifo_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
)

// Shared helpers: type shorthands, the seed of the randomised tests, a
// registry that names test objects by identity, and printable views of
// deltas.

type (
	pod   = *corev1.Pod
	delta = fifo.Delta[*corev1.Pod]
	entry = cache.Entry[*corev1.Pod]
)

var (
	seedFlag    = flag.Uint64("fifo.seed", 0, "seed of the randomised fifo tests (0: from the clock)")
	scriptsFlag = flag.Int("fifo.scripts", 0, "number of random scripts per randomised fifo test (0: the default)")
)

// testSeed returns the seed of a randomised test and logs it if the test
// fails, so that -fifo.seed reproduces the failure.
func testSeed(t testing.TB) uint64 {
	t.Helper()
	s := *seedFlag
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("random seed %d: rerun with -fifo.seed=%d", s, s)
		}
	})
	return s
}

// numScripts is -fifo.scripts, or def (def/10 with -short).
func numScripts(def int) int {
	if *scriptsFlag > 0 {
		return *scriptsFlag
	}
	if testing.Short() {
		return max(1, def/10)
	}
	return def
}

// scriptRand is the generator of script i of a run seeded with seed.
func scriptRand(seed uint64, i int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(i)))
}

// failer is the part of testing.TB the script runners use, so that a test
// can check that a runner does fail (see TestRunnersCanFail).
type failer interface {
	Helper()
	Fatalf(format string, args ...any)
}

// numKeys keys: k%3 picks the namespace ("a", "b" or cluster-scoped), so
// keys print as "a/p0", "b/p1", "p2", ...
const numKeys = 6

func keyOfIndex(i int) cache.Key {
	return cache.Key{Namespace: [...]string{"a", "b", ""}[i%3], Name: "p" + strconv.Itoa(i)}
}

// registry makes the test objects: every object is a new pointer with a
// serial resourceVersion, and id names an object by identity, so two
// different pointers never print alike even with equal content.
type registry struct {
	ids map[pod]string
	n   int
}

func newRegistry() *registry { return &registry{ids: map[pod]string{}} }

// pod returns a new object for key index k.
func (r *registry) pod(k int) pod {
	r.n++
	key := keyOfIndex(k)
	o := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, ResourceVersion: strconv.Itoa(r.n)}}
	r.ids[o] = key.String() + "#" + o.ResourceVersion
	return o
}

// rv returns a new resourceVersion for a list or a bookmark.
func (r *registry) rv() string {
	r.n++
	return strconv.Itoa(r.n)
}

func (r *registry) id(o pod) string {
	if o == nil {
		return "<nil>"
	}
	if s, ok := r.ids[o]; ok {
		return s
	}
	return fmt.Sprintf("foreign(%s/%s@%s %p)", o.Namespace, o.Name, o.ResourceVersion, o)
}

// anyID is id for an object from client-go (an interface{}).
func (r *registry) anyID(o any) string {
	switch o := o.(type) {
	case nil:
		return "<nil>"
	case pod:
		return r.id(o)
	}
	return fmt.Sprintf("non-pod(%T)", o)
}

// dv is a printable delta.
type dv struct {
	Type string
	Key  string
	Obj  string
	RV   string `json:",omitempty"`
	Err  string `json:",omitempty"`
}

func (r *registry) viewDelta(d delta) dv {
	v := dv{Type: d.Type.String(), Key: d.Key.String(), Obj: r.id(d.Object), RV: d.ResourceVersion}
	if d.Err != nil {
		v.Err = d.Err.Error()
	}
	return v
}

func (r *registry) viewDeltas(ds []delta) []dv {
	if ds == nil {
		return nil
	}
	out := make([]dv, 0, len(ds))
	for _, d := range ds {
		out = append(out, r.viewDelta(d))
	}
	return out
}

// ent is the entry of o with its key.
func ent(o pod) entry { return entry{Key: cache.KeyOf(o), Object: o} }

// replace pushes a whole list at once, as a reflector pushes a list that
// came in one page: ReplaceStart, a Replaced delta per entry, ReplaceEnd
// at rv.
func replace(q *fifo.Queue[pod], list []entry, rv string) error {
	ds := make([]delta, 0, len(list)+2)
	ds = append(ds, delta{Type: fifo.ReplaceStart})
	for _, e := range list {
		ds = append(ds, delta{Type: fifo.Replaced, Entry: e})
	}
	ds = append(ds, delta{Type: fifo.ReplaceEnd, ResourceVersion: rv})
	return q.Push(ds...)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
