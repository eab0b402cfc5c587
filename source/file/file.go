package file

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// Errors of New.
var (
	// ErrNotDirectory is returned by New for a path that is not a
	// directory.
	ErrNotDirectory = errors.New("file: not a directory")
	// ErrUnknownKind is returned by New for a T whose apiVersion and kind
	// neither Options.GroupVersionKind nor Options.Scheme gives.
	ErrUnknownKind = errors.New("file: cannot tell the kind of the objects")
)

// Errors about manifests, wrapped by the [Error] that says where.
var (
	// ErrSyntax is wrapped by the error about a document that is not valid
	// YAML or JSON.
	ErrSyntax = errors.New("file: syntax error")
	// ErrInvalid is wrapped by the error about a document that is not an
	// object of the source's kind: no apiVersion or kind, no
	// metadata.name, a field of the wrong type.
	ErrInvalid = errors.New("file: invalid manifest")
	// ErrDuplicate is wrapped by the error about an object whose namespace
	// and name another file (or an earlier document of the same file)
	// already defines.
	ErrDuplicate = errors.New("file: object defined twice")
)

// Error is a problem with one file, or with the directory: where it is and
// what it is. A source reports each to Options.ErrorHandler once, when it
// appears, and lists those of the last scan in [Source.Errors].
type Error struct {
	// File is the file's path (the directory joined with its name), or
	// the directory's for a problem reading it.
	File string
	// Line is the 1-based line the problem is at; 0 for a problem with
	// the whole file (it cannot be read).
	Line int
	// Err is the cause: it wraps ErrSyntax, ErrInvalid, ErrDuplicate, or
	// an error of the file system.
	Err error
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Options configures a Source. The zero value is ready to use; each field
// documents its default.
type Options struct {
	// Scheme gives the apiVersion and kind of T, which the manifests must
	// have. Default: client-go's kubernetes/scheme.Scheme, which knows
	// every built-in type.
	Scheme *runtime.Scheme
	// GroupVersionKind is the apiVersion and kind of T's manifests, for a
	// type in no scheme (a CRD's Go struct, or Unstructured). Default:
	// looked up in Scheme.
	GroupVersionKind schema.GroupVersionKind
	// Resource is the resource the source tells informers in its Info.
	// Default: guessed from the kind, with its group
	// (Pod: pods, Deployment: deployments.apps).
	Resource schema.GroupResource
	// Scope is the scope the source tells informers. Default:
	// cache.ScopeUnknown (an informer then infers it from the objects).
	Scope cache.Scope
	// DefaultNamespace is given to the objects whose manifest names no
	// namespace, as kubectl apply -n does; leave it empty for a
	// cluster-scoped kind. Default: none, such objects have no namespace.
	DefaultNamespace string
	// RescanInterval is how often the directory is read again while a
	// watch is open, to catch what file notifications miss (network file
	// systems, a watch limit reached). Default (0): 30s; negative: never.
	RescanInterval time.Duration
	// History is how many changes the source remembers, so that a watch
	// can resume from a resourceVersion; a watch from an older one gets
	// 410 Gone and the informer relists. It also bounds how far a watch
	// may fall behind before it is ended the same way. Default (0 or
	// less): 1000.
	History int
	// ErrorHandler receives each problem once, when a scan first finds it:
	// a bad file (an *Error naming the file and line), a duplicate object,
	// a directory that cannot be read, file notifications that cannot be
	// set up. It is called with no lock held, from New, List, Watch,
	// Rescan or the goroutine that follows the directory; it must not stop
	// a watch of this source (Stop waits for that goroutine). Default:
	// logged with klog.
	ErrorHandler func(error)
}

// Defaults of Options.
const (
	defaultRescan  = 30 * time.Second
	defaultHistory = 1000
)

// Source serves the objects of type T found in the manifests of a
// directory as a source.Source. Create it with New. Its methods are safe
// for concurrent use.
type Source[T cache.Object] struct {
	dir      string
	opts     Options
	dec      decoder[T]
	resource source.Resource

	scanMu sync.Mutex                // serialises scans
	files  map[string]*fileRecord[T] // by file name; guarded by scanMu

	mu       sync.Mutex
	rv       int64 // the resourceVersion of the latest change
	floor    int64 // the oldest resourceVersion a watch can resume from
	objects  map[cache.Key]*stored[T]
	history  []change[T] // the changes after floor, oldest first
	watchers map[*watcher[T]]struct{}
	problems []error // of the last scan

	nmu   sync.Mutex
	refs  int       // open watches
	notes *notifier // follows the directory while refs > 0
}

var _ source.Source[*metav1.PartialObjectMetadata] = (*Source[*metav1.PartialObjectMetadata])(nil)

// New returns a source of the objects of type T in the *.yaml, *.yml and
// *.json files of dir, read once now (problems go to Options.ErrorHandler).
// It fails for a dir that does not exist or is not a directory, and for a T
// whose kind it cannot tell (see Options.GroupVersionKind).
func New[T cache.Object](dir string, opts Options) (*Source[T], error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("file: New: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s", ErrNotDirectory, dir)
	}
	newT, err := constructor[T]()
	if err != nil {
		return nil, err
	}
	gvk, err := kindOf(newT(), opts)
	if err != nil {
		return nil, err
	}
	if opts.RescanInterval == 0 {
		opts.RescanInterval = defaultRescan
	}
	if opts.History <= 0 {
		opts.History = defaultHistory
	}
	if opts.ErrorHandler == nil {
		logger := klog.Background().WithValues("dir", dir)
		opts.ErrorHandler = func(err error) { logger.Error(err, "manifest source") }
	}
	res := opts.Resource
	if res.Resource == "" {
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		res = plural.GroupResource()
	}
	// Versions start at the time in microseconds, so that a version from an
	// earlier run of the program is older than all of this one's (410 Gone)
	// rather than taken for one of them.
	base := time.Now().UnixMicro()
	s := &Source[T]{
		dir:      filepath.Clean(dir),
		opts:     opts,
		dec:      decoder[T]{gvk: gvk, namespace: opts.DefaultNamespace, newT: newT},
		resource: source.Resource{GroupResource: res, Scope: opts.Scope},
		files:    map[string]*fileRecord[T]{},
		rv:       base,
		floor:    base,
		objects:  map[cache.Key]*stored[T]{},
		watchers: map[*watcher[T]]struct{}{},
	}
	_ = s.Rescan(context.Background()) // problems were reported
	return s, nil
}

// constructor returns a function that makes a new, empty T, or an error if
// T is not a pointer to a struct.
func constructor[T cache.Object]() (func() T, error) {
	rt := reflect.TypeFor[T]()
	if rt.Kind() != reflect.Pointer || rt.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: %v is not a pointer to a struct", ErrUnknownKind, rt)
	}
	if _, ok := reflect.New(rt.Elem()).Interface().(T); !ok {
		return nil, fmt.Errorf("%w: cannot make a %v", ErrUnknownKind, rt)
	}
	return func() T {
		t, _ := reflect.New(rt.Elem()).Interface().(T) // checked above
		return t
	}, nil
}

// kindOf returns the apiVersion and kind of T's manifests.
func kindOf[T cache.Object](obj T, opts Options) (schema.GroupVersionKind, error) {
	if !opts.GroupVersionKind.Empty() {
		if opts.GroupVersionKind.Kind == "" || opts.GroupVersionKind.Version == "" {
			return schema.GroupVersionKind{}, fmt.Errorf("%w: Options.GroupVersionKind %v needs a version and a kind", ErrUnknownKind, opts.GroupVersionKind)
		}
		return opts.GroupVersionKind, nil
	}
	sch := opts.Scheme
	if sch == nil {
		sch = scheme.Scheme
	}
	gvks, _, err := sch.ObjectKinds(obj)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("%w: %T: %w (set Options.GroupVersionKind)", ErrUnknownKind, obj, err)
	}
	gvks = slices.DeleteFunc(gvks, func(g schema.GroupVersionKind) bool {
		return g.Version == "" || g.Version == runtime.APIVersionInternal
	})
	if len(gvks) != 1 {
		return schema.GroupVersionKind{}, fmt.Errorf("%w: %T is registered as %v (set Options.GroupVersionKind)", ErrUnknownKind, obj, gvks)
	}
	return gvks[0], nil
}

// Info tells what the source lists, and that it serves streaming lists.
// Its objects are copies made for each caller, but it does not say so:
// only the REST source's objects are shared out by an informer.
func (s *Source[T]) Info() source.Info { return source.Info{Resource: s.resource, WatchList: true} }

// Errors returns the problems the last scan found, by file and line: bad
// files, duplicate objects, a directory that cannot be read. It is empty
// once every file reads well.
func (s *Source[T]) Errors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.problems)
}

// Rescan reads the directory now and applies what changed, so that the
// next List sees it and open watches get its events before Rescan returns.
// List and Watch rescan by themselves, and open watches follow the
// directory; Rescan is for a caller that just wrote files and must not
// wait for the notification (a test, a reload command). It returns the
// error reading the directory, if any; problems with files go to
// Options.ErrorHandler and Errors.
func (s *Source[T]) Rescan(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.scanMu.Lock()
	fresh, dirErr := s.scanLocked()
	s.scanMu.Unlock()
	for _, err := range fresh {
		s.report(err)
	}
	return dirErr
}

// String names the source in logs: its kind and directory.
func (s *Source[T]) String() string {
	return fmt.Sprintf("%s manifests in %s", strings.ToLower(s.dec.gvk.Kind), s.dir)
}

// report hands err to Options.ErrorHandler. A panic in it is recovered and
// logged: it never ends the goroutine that follows the directory, nor a
// List or Watch.
func (s *Source[T]) report(err error) {
	defer func() {
		if r := recover(); r != nil {
			klog.Background().Error(fmt.Errorf("%v", r), "manifest source: ErrorHandler panicked", "dir", s.dir, "reporting", err.Error())
		}
	}()
	s.opts.ErrorHandler(err)
}
