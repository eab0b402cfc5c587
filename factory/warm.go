package factory

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// WarmStart gives a factory's informers warm restarts (Options.WarmStart):
// each informer saves its cache to a file of its own in Dir and starts
// from it on the next run, as typed.WarmStart says.
//
// Informers left out, which list on every start: those of a namespace set
// or a shard, those of Secrets and of the resources of
// Informer.Sensitive (unless Informer.AllowSensitive), and those whose
// type defaults (SetDefaults) give a WarmStart of their own, which they
// keep.
type WarmStart struct {
	// Dir is the directory of the files, which must exist: one file per
	// informer, named after its resource, scope and Go type. Required.
	Dir string
	// Informer is every informer's typed.WarmStart, but for its Path,
	// which must be empty: Interval, Cluster, Accept, Sensitive,
	// AllowSensitive. Default: the zero value, typed.WarmStart's defaults.
	Informer typed.WarmStart
}

func (w *WarmStart) check() error {
	switch {
	case w == nil:
		return nil
	case w.Dir == "":
		return errors.New("factory: Options.WarmStart.Dir is empty")
	case w.Informer.Path != "":
		return fmt.Errorf("factory: Options.WarmStart.Informer.Path %q is set: each informer gets its own file in Dir", w.Informer.Path)
	}
	st, err := os.Stat(w.Dir)
	if err != nil {
		return fmt.Errorf("factory: Options.WarmStart.Dir: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("factory: Options.WarmStart.Dir %s is not a directory", w.Dir)
	}
	return nil
}

// warmFor returns the warm start of the informer of T named name with
// key k over src, or nil for one left out (see WarmStart).
func warmFor[T cache.Object](w *WarmStart, k key, name string, src source.Source[T]) *typed.WarmStart {
	if w == nil || k.namespaces != nil || k.shard != "" {
		return nil
	}
	gr := source.ResourceOf(src).GroupResource
	var zero T
	_, secret := any(zero).(*corev1.Secret)
	sensitive := secret || gr == (schema.GroupResource{Resource: "secrets"}) || slices.Contains(w.Informer.Sensitive, gr)
	if gr.Empty() || (sensitive && !w.Informer.AllowSensitive) {
		return nil
	}
	ws := w.Informer
	ws.Path = filepath.Join(w.Dir, warmFileName(k, name))
	return &ws
}

// warmFileName is the file of the informer named name with key k: its
// name made safe for a file system, and a hash of the name and the Go type
// so that two informers never share a file.
func warmFileName(k key, name string) string {
	safe := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-':
			return r
		}
		return '_'
	}, name)
	if len(safe) > 100 {
		safe = safe[:100]
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00%s", k.typ.PkgPath(), k.typ.String(), name)
	return fmt.Sprintf("%s-%016x.cache", safe, h.Sum64())
}
