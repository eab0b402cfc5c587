package warm

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

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
