package file

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// fileRecord is what the source knows of one file: the checksum of the
// content last read, the objects of its last good read, and the problems
// of its last read.
type fileRecord[T cache.Object] struct {
	read bool // sum is that of a content that was decoded
	sum  [sha256.Size]byte
	objs []parsed[T]
	errs []error
}

// stored is an object the source serves: a copy with the source's
// resourceVersion, never changed once stored (history and snapshots share
// it), and the parsed object it was made from, to skip comparing contents
// when a scan brings the same parsed object again.
type stored[T cache.Object] struct {
	obj  T
	from T
}

// change is one change the source made, at resourceVersion rv: obj is the
// object after it (for a deletion, the last content at rv), prev the one
// before it (the zero T for an addition).
type change[T cache.Object] struct {
	rv   int64
	typ  watch.EventType
	key  cache.Key
	obj  T
	prev T
}

// manifestFile reports whether a directory entry is a manifest the source
// reads: a regular file (or a link to one) named *.yaml, *.yml or *.json,
// not hidden (editors' and ConfigMap volumes' own files start with a dot).
func (s *Source[T]) manifestFile(e fs.DirEntry) bool {
	name := e.Name()
	if strings.HasPrefix(name, ".") {
		return false
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
	default:
		return false
	}
	if e.Type().IsRegular() {
		return true
	}
	if e.Type()&fs.ModeSymlink == 0 {
		return false
	}
	fi, err := os.Stat(filepath.Join(s.dir, name))
	return err == nil && fi.Mode().IsRegular()
}

// scanLocked reads the directory, applies what changed and returns the
// problems not reported before, and the error reading the directory. The
// caller holds scanMu.
func (s *Source[T]) scanLocked() (fresh []error, dirErr error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		// Keep serving what the files said: a directory that vanishes is
		// more likely a mount going away than the wish to delete all.
		dirErr = &Error{File: s.dir, Err: err}
	} else {
		seen := make(map[string]bool, len(entries))
		for _, e := range entries {
			if !s.manifestFile(e) {
				continue
			}
			if s.readFile(e.Name()) {
				seen[e.Name()] = true
			}
		}
		for name := range s.files {
			if !seen[name] {
				delete(s.files, name)
			}
		}
	}
	desired, problems := s.merge()
	if dirErr != nil {
		problems = append(problems, dirErr)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apply(desired)
	return s.setProblems(problems), dirErr
}

// readFile reads the file called name into its record, and reports whether
// the file is still there. A file that does not read well keeps the
// objects of its last good read, so that a half-edited file takes nothing
// away; its problems are recorded.
func (s *Source[T]) readFile(name string) bool {
	path := filepath.Join(s.dir, name)
	rec := s.files[name]
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false // removed since the directory was read
	}
	if rec == nil {
		rec = &fileRecord[T]{}
		s.files[name] = rec
	}
	if err != nil {
		rec.read, rec.errs = false, []error{&Error{File: path, Err: err}}
		return true
	}
	sum := sha256.Sum256(data)
	if rec.read && sum == rec.sum {
		return true
	}
	objs, errs := s.dec.decode(path, data)
	rec.read, rec.sum, rec.errs = true, sum, errs
	if len(errs) == 0 {
		rec.objs = objs
	}
	return true
}

// merge returns the objects the files define, by key, and the problems of
// the files. Files are taken in the order of their names and documents in
// file order: the first definition of a key wins, and every later one is an
// ErrDuplicate problem.
func (s *Source[T]) merge() (map[cache.Key]T, []error) {
	type origin struct {
		name string
		line int
	}
	names := make([]string, 0, len(s.files))
	n := 0
	for name, rec := range s.files {
		names = append(names, name)
		n += len(rec.objs)
	}
	slices.Sort(names)
	desired := make(map[cache.Key]T, n)
	where := make(map[cache.Key]origin, n)
	var problems []error
	for _, name := range names {
		rec := s.files[name]
		problems = append(problems, rec.errs...)
		path := filepath.Join(s.dir, name)
		for _, p := range rec.objs {
			if o, dup := where[p.key]; dup {
				problems = append(problems, &Error{File: path, Line: p.line, Err: fmt.Errorf("%w: %s %v is ignored: %s:%d defines it first",
					ErrDuplicate, s.dec.gvk.Kind, p.key, o.name, o.line)})
				continue
			}
			desired[p.key] = p.obj
			where[p.key] = origin{name: name, line: p.line}
		}
	}
	return desired, problems
}

// apply turns the difference between the stored objects and desired into
// changes, in key order, each with the next resourceVersion, and hands
// them to the watches. The caller holds mu.
func (s *Source[T]) apply(desired map[cache.Key]T) {
	var keys []cache.Key
	for k, want := range desired {
		cur, ok := s.objects[k]
		switch {
		case !ok:
			keys = append(keys, k)
		case cur.from == want:
		case sameContent(cur.obj, want):
			cur.from = want
		default:
			keys = append(keys, k)
		}
	}
	for k := range s.objects {
		if _, ok := desired[k]; !ok {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return
	}
	slices.SortFunc(keys, compareKeys)
	changes := make([]change[T], 0, len(keys))
	for _, k := range keys {
		s.rv++
		c := change[T]{rv: s.rv, key: k}
		cur, had := s.objects[k]
		if had {
			c.prev = cur.obj
		}
		want, ok := desired[k]
		switch {
		case !ok:
			c.typ, c.obj = watch.Deleted, s.copyAt(cur.obj, s.rv)
			delete(s.objects, k)
		default:
			c.typ = watch.Added
			if had {
				c.typ = watch.Modified
			}
			c.obj = s.copyAt(want, s.rv)
			s.objects[k] = &stored[T]{obj: c.obj, from: want}
		}
		changes = append(changes, c)
	}
	s.history = append(s.history, changes...)
	if over := len(s.history) - s.opts.History; over > 0 {
		s.floor = s.history[over-1].rv
		s.history = slices.Delete(s.history, 0, over)
	}
	for w := range s.watchers {
		w.offer(changes, s.rv)
	}
}

// sameContent reports whether a parsed object has the content of a stored
// one, whose resourceVersion it lacks.
func sameContent[T cache.Object](storedObj, parsedObj T) bool {
	parsedObj.SetResourceVersion(storedObj.GetResourceVersion())
	defer parsedObj.SetResourceVersion("")
	return equality.Semantic.DeepEqual(storedObj, parsedObj)
}

// copyAt returns a copy of obj with resourceVersion rv.
func (s *Source[T]) copyAt(obj T, rv int64) T {
	cp, err := source.As[T](obj.DeepCopyObject())
	if err != nil {
		cp = obj // a T's DeepCopyObject returns a T: cannot happen
	}
	cp.SetResourceVersion(strconv.FormatInt(rv, 10))
	return cp
}

// setProblems records the problems of a scan and returns those the
// previous scan did not have. The caller holds mu.
func (s *Source[T]) setProblems(problems []error) []error {
	before := make(map[string]bool, len(s.problems))
	for _, p := range s.problems {
		before[p.Error()] = true
	}
	var fresh []error
	for _, p := range problems {
		if !before[p.Error()] {
			fresh = append(fresh, p)
		}
	}
	s.problems = problems
	return fresh
}

// compareKeys orders keys by namespace, then name.
func compareKeys(a, b cache.Key) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}
