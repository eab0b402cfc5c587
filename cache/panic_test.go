package cache_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/cache"
)

// An index function that panics is an index function that fails: the panic
// does not escape, Prepare refuses the object, Apply stores a literal entry
// without that index, AddIndexers changes nothing, and the cache stays
// usable.
func TestIndexFuncPanicIsAnError(t *testing.T) {
	boom := func(p *corev1.Pod) ([]string, error) {
		if p.Name == "bad" {
			panic("index bug")
		}
		return []string{p.Name}, nil
	}
	good := newPod("a", "good", "1")
	bad := newPod("a", "bad", "1")

	w := mustWriter(t, podOptions{Indexers: podIndexes{"boom": boom}})
	st := w.Store()
	mustPut(t, w, good)
	if _, err := w.Prepare(bad); !errors.Is(err, cache.ErrIndexPanic) {
		t.Errorf("Prepare(bad) = %v, want ErrIndexPanic", err)
	}
	for name, op := range map[string]func() error{
		"Apply":   func() error { _, err := w.Apply([]podChange{put(bad)}); return err },
		"Replace": func() error { _, err := w.Replace(entries(good, bad)); return err },
	} {
		if err := op(); !errors.Is(err, cache.ErrIndexPanic) {
			t.Errorf("%s = %v, want ErrIndexPanic", name, err)
		}
		checkIndexes(t, st, map[string]map[string][]string{
			"boom":               {"good": {"a/good@1"}},
			cache.NamespaceIndex: {"a": {"a/bad@1", "a/good@1"}},
		})
	}

	plain := mustWriter(t, podOptions{})
	mustPut(t, plain, good, bad)
	before := stateOf(t, plain.Store(), "boom")
	if err := plain.AddIndexers(podIndexes{"boom": boom}); !errors.Is(err, cache.ErrIndexPanic) {
		t.Errorf("AddIndexers = %v, want ErrIndexPanic", err)
	}
	if diff := cmp.Diff(before, stateOf(t, plain.Store(), "boom")); diff != "" {
		t.Errorf("state changed by the failed AddIndexers (-want +got):\n%s", diff)
	}
	mustApply(t, plain, delPod(bad))
	if err := plain.AddIndexers(podIndexes{"boom": boom}); err != nil {
		t.Errorf("AddIndexers once bad is gone: %v", err)
	}
	checkIndexes(t, plain.Store(), map[string]map[string][]string{"boom": {"good": {"a/good@1"}}})
}
