package file_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/file"
)

// wait bounds every wait of these tests: a hang guard, not a performance
// assertion.
const wait = 30 * time.Second

func waitCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	t.Cleanup(cancel)
	return ctx
}

// writeFile writes content to dir/name in place.
func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// renameInto writes content as an editor that saves by rename does: a
// temporary file in the same directory, renamed over dir/name.
func renameInto(t *testing.T, dir, name, content string) {
	t.Helper()
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func removeFile(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// podYAML is the manifest of a pod; labels are "k=v" pairs.
func podYAML(ns, name string, labels ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n", name)
	if ns != "" {
		fmt.Fprintf(&b, "  namespace: %s\n", ns)
	}
	if len(labels) > 0 {
		b.WriteString("  labels:\n")
		for _, l := range labels {
			k, v, _ := strings.Cut(l, "=")
			fmt.Fprintf(&b, "    %s: %q\n", k, v)
		}
	}
	b.WriteString("spec:\n  containers:\n  - name: app\n    image: nginx\n")
	return b.String()
}

// docs joins YAML documents into one stream.
func docs(ds ...string) string { return strings.Join(ds, "---\n") }

// podJSON is the JSON manifest of p.
func podJSON(t *testing.T, p *corev1.Pod) string {
	t.Helper()
	p = p.DeepCopy()
	p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// errSink is an ErrorHandler that keeps what it gets.
type errSink struct {
	mu   sync.Mutex
	errs []error
}

func (s *errSink) handle(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, err)
}

func (s *errSink) all() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.errs)
}

// newPods returns a pod source over dir, with its errors kept in the
// returned sink.
func newPods(t *testing.T, dir string, opts file.Options) (*file.Source[*corev1.Pod], *errSink) {
	t.Helper()
	sink := &errSink{}
	if opts.ErrorHandler == nil {
		opts.ErrorHandler = sink.handle
	}
	src, err := file.New[*corev1.Pod](dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return src, sink
}

// listed returns "namespace/name" of every object src lists.
func listed[T cache.Object](t *testing.T, src source.Source[T], opts metav1.ListOptions) []string {
	t.Helper()
	l, err := src.List(waitCtx(t), opts)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	out := []string{}
	for _, o := range l.Items {
		out = append(out, cache.KeyOf(o).String())
	}
	return out
}

// next returns the next event of w that is not a bookmark, as "TYPE key".
func next[T cache.Object](t *testing.T, w source.Watcher[T]) (string, T) {
	t.Helper()
	for {
		ev, err := w.Next(waitCtx(t))
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if ev.Type != watch.Bookmark {
			return fmt.Sprintf("%s %v", ev.Type, cache.KeyOf(ev.Object)), ev.Object
		}
	}
}

// nextN returns the next n events of w that are not bookmarks.
func nextN[T cache.Object](t *testing.T, w source.Watcher[T], n int) []string {
	t.Helper()
	var out []string
	for range n {
		e, _ := next(t, w)
		out = append(out, e)
	}
	return out
}

// fileErrors returns the *file.Error values among errs, as "base:line:
// sentinel".
func fileErrors(errs []error) []string {
	out := []string{}
	for _, err := range errs {
		var fe *file.Error
		if !errors.As(err, &fe) {
			out = append(out, "not a *file.Error: "+err.Error())
			continue
		}
		kind := "other"
		for _, s := range []error{file.ErrSyntax, file.ErrInvalid, file.ErrDuplicate} {
			if errors.Is(err, s) {
				kind = s.Error()
			}
		}
		out = append(out, fmt.Sprintf("%s:%d: %s", filepath.Base(fe.File), fe.Line, kind))
	}
	return out
}

// waitFor polls cond until it holds, failing the test after the wait
// bound. The bound is a hang guard, not a performance assertion.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
