package warm

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var podsID = Identity{Resource: "pods", Type: TypeName[*corev1.Pod]()}

func pods(n int) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p" + string(rune('a'+i%26)), ResourceVersion: "7", Labels: map[string]string{"i": "x"}},
			Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "img"}}},
		}
	}
	return out
}

func load[T any](t *testing.T, path string, id Identity) ([]T, Header, error) {
	t.Helper()
	f, err := Open[T](path, id)
	if err != nil {
		return nil, Header{}, err
	}
	defer f.Close()
	var got []T
	err = f.Load(func(o T) error { got = append(got, o); return nil })
	return got, f.Header, err
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c")
	want := pods(30)
	if _, err := Save(path, podsID, "42", want); err != nil {
		t.Fatal(err)
	}
	got, hdr, err := load[*corev1.Pod](t, path, podsID)
	if err != nil {
		t.Fatal(err)
	}
	if hdr.Encoding != "protobuf" || hdr.ResourceVersion != "42" || hdr.Objects != 30 {
		t.Errorf("header = %+v", hdr)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("loaded objects differ (-saved +loaded):\n%s", d)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after a save, want the file alone", len(entries))
	}
}

func TestRoundTripJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c")
	id := Identity{Resource: "widgets.example.com", Type: TypeName[*unstructured.Unstructured]()}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w", "resourceVersion": "3"}, "spec": map[string]any{"size": int64(3)}}}
	if _, err := Save(path, id, "3", []*unstructured.Unstructured{u}); err != nil {
		t.Fatal(err)
	}
	got, hdr, err := load[*unstructured.Unstructured](t, path, id)
	if err != nil {
		t.Fatal(err)
	}
	if hdr.Encoding != "json" || len(got) != 1 || cmp.Diff(u.Object, got[0].Object) != "" {
		t.Errorf("header %+v, loaded %v, want %v", hdr, got, u)
	}
}

func TestOpenRefusesForeign(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c")
	if _, err := Save(path, podsID, "42", pods(2)); err != nil {
		t.Fatal(err)
	}
	for name, id := range map[string]Identity{
		"resource": {Resource: "secrets", Type: podsID.Type},
		"type":     {Resource: "pods", Type: "*example.com/v1.Pod"},
		"cluster":  {Resource: "pods", Type: podsID.Type, Cluster: "b"},
		"selector": {Resource: "pods", Type: podsID.Type, Selector: "labels=a=b;fields="},
	} {
		if _, err := Open[*corev1.Pod](path, id); !errors.Is(err, ErrForeign) {
			t.Errorf("another %s: Open = %v, want ErrForeign", name, err)
		}
	}
}

// TestLoadFindsEveryCut checks that the file cut anywhere is refused as
// corrupt, by Open or by Load.
func TestLoadFindsEveryCut(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c")
	if _, err := Save(path, podsID, "42", pods(5)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut")
	for n := 0; n < len(b); n++ {
		if err := os.WriteFile(cut, b[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := load[*corev1.Pod](t, cut, podsID); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("file cut at %d of %d bytes: %v, want ErrCorrupt", n, len(b), err)
		}
	}
}

// manyPods are enough pods for Load to decode in parallel, each told
// apart by its name.
func manyPods(n int) []*corev1.Pod {
	out := pods(n)
	for i, p := range out {
		p.Name = fmt.Sprintf("p-%05d", i)
	}
	return out
}

// TestLoadParallel: a file large enough to be decoded by several
// goroutines loads every object in the saved order; cut or edited
// anywhere (sampled), it is refused as corrupt with the objects before the
// damage handed over in order; an error of each ends the load with it;
// and no goroutine is left behind either way.
func TestLoadParallel(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	base := runtime.NumGoroutine()
	dir := t.TempDir()
	path := filepath.Join(dir, "c")
	want := manyPods(5*chunkObjects + 17)
	if _, err := Save(path, podsID, "42", want); err != nil {
		t.Fatal(err)
	}
	got, _, err := load[*corev1.Pod](t, path, podsID)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("loaded objects differ (-saved +loaded):\n%s", d)
	}

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	bad := filepath.Join(dir, "bad")
	inOrder := func(got []*corev1.Pod) bool {
		for i, p := range got {
			if p.Name != want[i].Name {
				return false
			}
		}
		return true
	}
	for range 40 {
		n := rng.IntN(len(b))
		cut := b[:n]
		edited := slices.Clone(b)
		edited[n] ^= 0x5a
		for what, content := range map[string][]byte{"cut": cut, "edited": edited} {
			if err := os.WriteFile(bad, content, 0o600); err != nil {
				t.Fatal(err)
			}
			got, _, err := load[*corev1.Pod](t, bad, podsID)
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrForeign) {
				t.Fatalf("seed %d: file %s at byte %d of %d: %v, want it refused", seed, what, n, len(b), err)
			}
			// What came before a cut is the saved objects, in order (an
			// edit may change the object it hits).
			if what == "cut" && !inOrder(got) {
				t.Fatalf("seed %d: file cut at byte %d: objects before the cut not in the saved order", seed, n)
			}
		}
	}

	stopAt := errors.New("enough")
	f, err := Open[*corev1.Pod](path, podsID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = f.Load(func(*corev1.Pod) error {
		if n++; n == chunkObjects+3 {
			return stopAt
		}
		return nil
	})
	f.Close()
	if !errors.Is(err, stopAt) || n != chunkObjects+3 {
		t.Errorf("Load with each failing at object %d = %v after %d objects", chunkObjects+3, err, n)
	}
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > base && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > base {
		t.Errorf("%d goroutines after the loads, %d before", g, base)
	}
}
