package factory_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/factory"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// cacheFiles lists the saved caches of dir.
func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".cache") {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestFactoryWarmStart: Options.WarmStart gives each informer a file of
// its own; the next factory over the same directory starts them from
// their files with no LIST, and leaves out Secrets.
func TestFactoryWarmStart(t *testing.T) {
	leakcheck.Check(t)
	dir := t.TempDir()
	fs := newFakes(sourcetest.FakeOptions[*corev1.Pod]{})
	for _, ns := range []string{"", "shop"} {
		for i := range 3 {
			if _, err := fs.of(ns).Create(it.Pod("shop", "web-"+string(rune('a'+i)), nil)); err != nil {
				t.Fatal(err)
			}
		}
	}
	secrets := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Secret]{Resource: schema.GroupResource{Resource: "secrets"}})
	build := func() (*factory.Factory, *typed.Informer[*corev1.Pod], *typed.Informer[*corev1.Pod]) {
		f := newFactory(t, fs, factory.Options{WarmStart: &factory.WarmStart{Dir: dir}})
		if err := factory.Register(f, func(factory.Scope) (source.Source[*corev1.Secret], error) { return secrets, nil }); err != nil {
			t.Fatal(err)
		}
		all, _ := informerFor[*corev1.Pod](t, f, factory.Scope{})
		shop, _ := informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: "shop"})
		informerFor[*corev1.Secret](t, f, factory.Scope{})
		return f, all, shop
	}

	f, _, _ := build()
	stop := start(t, f)
	waitSynced(t, f)
	stop() // saves
	files := cacheFiles(t, dir)
	if len(files) != 2 || files[0] == files[1] {
		t.Fatalf("saved files = %q, want one per pod informer and none for the Secrets", files)
	}
	for _, name := range files {
		if !strings.HasPrefix(name, "pods") {
			t.Errorf("file %q is not named after its resource", name)
		}
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("file %q: %v, mode %v; want 0600", name, err, fi.Mode().Perm())
		}
	}

	lists := fs.of("").ListCalls() + fs.of("shop").ListCalls()
	f, all, shop := build()
	stop = start(t, f)
	accepted := make(chan struct{})
	go func() { // the server accepts the watches from the saved versions
		for {
			select {
			case <-accepted:
				return
			case <-time.After(20 * time.Millisecond):
				fs.of("").Bookmark()
				fs.of("shop").Bookmark()
			}
		}
	}()
	waitSynced(t, f)
	close(accepted)
	defer stop()
	for _, inf := range []*typed.Informer[*corev1.Pod]{all, shop} {
		if st := inf.Status().Stats; st.WarmStarts != 1 || st.Lists != 0 {
			t.Errorf("%s: Stats = %+v, want a warm start and no list", inf.Name(), st)
		}
		if n := inf.Store().Len(); n != 3 {
			t.Errorf("%s: %d pods after the warm start, want 3", inf.Name(), n)
		}
	}
	if n := fs.of("").ListCalls() + fs.of("shop").ListCalls() - lists; n != 0 {
		t.Errorf("the warm starts sent %d LIST requests, want 0", n)
	}
	if got := cacheFiles(t, dir); !slices.Equal(got, files) {
		t.Errorf("files after the warm start = %q, want %q", got, files)
	}
}

// TestFactoryWarmStartRefuses: a missing or non-directory Dir, and a Path
// of its own, fail New.
func TestFactoryWarmStartRefuses(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, ws := range map[string]*factory.WarmStart{
		"no Dir":        {},
		"missing Dir":   {Dir: filepath.Join(t.TempDir(), "missing")},
		"Dir is a file": {Dir: file},
		"a Path":        {Dir: t.TempDir(), Informer: typed.WarmStart{Path: "x.cache"}},
	} {
		if _, err := factory.New(nil, factory.Options{WarmStart: ws}); err == nil {
			t.Errorf("%s: New succeeded", name)
		} else if name == "missing Dir" && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want ErrNotExist", name, err)
		}
	}
}
