package typed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/typedinformer/informer/cache"
)

// MutationDetectorEnv is the environment variable that turns
// Options.DetectMutations on for every informer made while it is "true",
// for a test suite (client-go's KUBE_CACHE_MUTATION_DETECTOR does the same
// for client-go's informers).
const MutationDetectorEnv = "TYPEDINFORMER_DETECT_MUTATIONS"

// MutationCheckPeriod is how often an informer with Options.DetectMutations
// compares its cached objects with their copies; it compares them once
// more when Run returns.
const MutationCheckPeriod = time.Second

// maxMutations bounds the mutations Status keeps.
const maxMutations = 100

// ErrMutated is wrapped by every *MutationError.
var ErrMutated = errors.New("typed: cached object mutated")

// MutationError reports a cached object that changed after it entered the
// cache: someone (usually a handler) modified an object shared with the
// cache and every other reader instead of a deep copy. Each change is
// reported once.
type MutationError struct {
	// Key is the object's key.
	Key cache.Key
	// ResourceVersion is the object's resourceVersion when it was cached.
	ResourceVersion string
	// Fields are the paths of the changed fields, such as
	// `ObjectMeta.Labels["team"]`.
	Fields []string
	// Diff is the change as go-cmp prints it (-cached +now).
	Diff string
}

func (e *MutationError) Error() string {
	return fmt.Sprintf("%v: %v (resourceVersion %s) fields %s (-cached +now):\n%s",
		ErrMutated, e.Key, e.ResourceVersion, strings.Join(e.Fields, ", "), e.Diff)
}

// Unwrap returns ErrMutated.
func (e *MutationError) Unwrap() error { return ErrMutated }

// detectMutations reports whether opts, or the environment, ask for the
// mutation detector.
func detectMutations[T cache.Object](opts Options[T]) bool {
	return opts.DetectMutations || os.Getenv(MutationDetectorEnv) == "true"
}

// kept is a cached object and the copy taken when it was cached.
type kept[T cache.Object] struct {
	obj, copy T
}

// mutationDetector keeps a deep copy of every cached object. The writer
// records and forgets objects as it applies changes; a check compares
// every object with its copy.
type mutationDetector[T cache.Object] struct {
	mu    sync.Mutex
	kept  map[cache.Key]kept[T]
	found []*MutationError
	count int
}

func newMutationDetector[T cache.Object]() *mutationDetector[T] {
	return &mutationDetector[T]{kept: map[cache.Key]kept[T]{}}
}

// record notes the changes the writer just applied.
func (m *mutationDetector[T]) record(changes []cache.Change[T]) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var zero T
	for i := range changes {
		c := &changes[i]
		switch {
		case c.Delete:
			delete(m.kept, c.Key)
		case c.Object != zero && m.kept[c.Key].obj != c.Object:
			if cp, ok := c.Object.DeepCopyObject().(T); ok {
				m.kept[c.Key] = kept[T]{obj: c.Object, copy: cp}
			}
		}
	}
}

// check compares every object with its copy and returns the mutations it
// finds, each once: the copy is taken again after a report.
func (m *mutationDetector[T]) check() []*MutationError {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*MutationError
	for k, e := range m.kept {
		if equality.Semantic.DeepEqual(e.copy, e.obj) {
			continue
		}
		me := &MutationError{Key: k, ResourceVersion: e.copy.GetResourceVersion()}
		me.Fields, me.Diff = describeMutation(e.copy, e.obj)
		out = append(out, me)
		m.count++
		if len(m.found) < maxMutations {
			m.found = append(m.found, me)
		}
		if cp, ok := e.obj.DeepCopyObject().(T); ok {
			m.kept[k] = kept[T]{obj: e.obj, copy: cp}
		}
	}
	return out
}

// mutations returns the mutations found so far (at most maxMutations) and
// how many there were.
func (m *mutationDetector[T]) mutations() ([]*MutationError, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*MutationError(nil), m.found...), m.count
}

// mutationOptions compare API objects as the API machinery does: a
// quantity by value (its cached string form is no change), unexported
// fields included.
var mutationOptions = []cmp.Option{
	cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
	cmp.Exporter(func(reflect.Type) bool { return true }),
}

// describeMutation returns the paths of the fields that differ between
// was and now, and their diff. A value go-cmp cannot handle yields a
// message instead of a panic.
func describeMutation[T cache.Object](was, now T) (fields []string, diff string) {
	defer func() {
		if r := recover(); r != nil {
			diff = fmt.Sprintf("(no diff: %v)", r)
		}
	}()
	var paths pathReporter
	cmp.Equal(was, now, append(mutationOptions, cmp.Reporter(&paths))...)
	return paths.paths, cmp.Diff(was, now, mutationOptions...)
}

// pathReporter collects the paths of the differing leaves.
type pathReporter struct {
	path  cmp.Path
	paths []string
}

func (r *pathReporter) PushStep(ps cmp.PathStep) { r.path = append(r.path, ps) }
func (r *pathReporter) PopStep()                 { r.path = r.path[:len(r.path)-1] }
func (r *pathReporter) Report(rs cmp.Result) {
	if rs.Equal() {
		return
	}
	var b strings.Builder
	for _, ps := range r.path {
		switch s := ps.(type) {
		case cmp.StructField:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.Name())
		case cmp.SliceIndex:
			if k := s.Key(); k >= 0 {
				fmt.Fprintf(&b, "[%d]", k)
			} else {
				b.WriteString("[?]") // an element only one side has
			}
		case cmp.MapIndex:
			fmt.Fprintf(&b, "[%#v]", s.Key())
		}
	}
	r.paths = append(r.paths, b.String())
}

// mutationLoop checks for mutations every MutationCheckPeriod until ctx
// ends.
func (inf *Informer[T]) mutationLoop(ctx context.Context) {
	t := time.NewTicker(MutationCheckPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			inf.checkMutations(inf.reportAsync)
		}
	}
}

// checkMutations runs a check and reports each mutation. It first takes
// every listener's lock, which a listener takes after each batch of
// handler calls: a mutation made in a call that has returned is then
// ordered before the check, and only one made while the check runs is a
// data race (and a bug the detector is there to find).
func (inf *Informer[T]) checkMutations(report func(error)) {
	for _, l := range *inf.handlers.Load() {
		l.mu.Lock()
		//lint:ignore SA2001 an empty critical section: it orders the check after the listener's last batch
		l.mu.Unlock()
	}
	for _, me := range inf.mutations.check() {
		report(me)
	}
}
