package cache_test

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
)

// An index function that panics fails the write like one that returns an
// error: nothing changes, and the panic does not escape.
func TestIndexFuncPanicIsAnError(t *testing.T) {
	x, err := cache.NewIndexer(cache.IndexerOptions[*corev1.Pod]{Indexers: cache.Indexers[*corev1.Pod]{
		"boom": func(p *corev1.Pod) ([]string, error) {
			if p.Name == "bad" {
				panic("index bug")
			}
			return []string{p.Name}, nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	good := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "good"}}
	bad := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "bad"}}
	if err := x.Add(good); err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{
		"Add":          func() error { return x.Add(bad) },
		"Replace":      func() error { return x.Replace([]*corev1.Pod{good, bad}, "1") },
		"CheckIndexes": func() error { return x.CheckIndexes(bad) },
	} {
		if err := op(); !errors.Is(err, cache.ErrIndexPanic) {
			t.Errorf("%s = %v, want ErrIndexPanic", name, err)
		}
	}
	if keys := x.ListKeys(); len(keys) != 1 || keys[0].Name != "good" {
		t.Errorf("keys after failed writes = %v, want only good", keys)
	}
	if err := x.CheckIndexes(good); err != nil {
		t.Errorf("CheckIndexes(good) = %v", err)
	}
}
