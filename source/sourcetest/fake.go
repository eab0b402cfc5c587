package sourcetest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// FakeOptions configures a [Fake]. The zero value is ready to use; each
// field documents its default.
type FakeOptions[T cache.Object] struct {
	// Resource names the resource in the API errors the fake returns
	// (NotFound, AlreadyExists, Conflict) and in its source.Info.
	// Default: guessed from T's Go type name as source.ResourceOf does
	// (pods for *corev1.Pod), else {Resource: "objects"}.
	Resource schema.GroupResource
	// Scope is the scope the fake tells informers. Default:
	// cache.ScopeUnknown.
	Scope cache.Scope
	// Window is how many change events the history retains. Watches,
	// Exact lists and continue tokens can start at any resourceVersion
	// whose later changes are all retained; older ones get 410 Gone.
	// Default (0 or less): 1000.
	Window int
	// StartResourceVersion is the resourceVersion before the first change;
	// the first change gets StartResourceVersion+1. Default (0 or less): 100.
	StartResourceVersion int64
	// NoWatchList makes the fake behave like a server without the WatchList
	// feature: a watch with SendInitialEvents set fails at start with an
	// Invalid error. Default: false (streaming lists are supported).
	NoWatchList bool
	// Objects are created in order when the fake is made, each getting its
	// own resourceVersion as if by Create. A nil or nameless object is skipped;
	// a later object with the key of an earlier one replaces it, as Update.
	// Default: none.
	Objects []T
}

// Fake is an in-memory Source that behaves like a kube-apiserver where
// list+watch clients can tell: a global resourceVersion counter, a bounded
// history of changes to replay watches from, 410 Gone for versions that
// were compacted away, consistent paginated lists, streaming lists
// (SendInitialEvents) with the initial-events-end bookmark, and the
// server's error statuses. It implements source.Source. Fault knobs
// (CutWatches, DropEvents, FailLists, FailWatches, InjectWatchError,
// InjectEvent) simulate what goes wrong in production on the server's
// side: every client of the fake sees them, client-go's ListerWatcher
// over it included, so a differential test faults both sides alike. To
// fault one client's view alone, wrap the source in a Faulty. All methods
// are safe for concurrent use.
//
// The fake never aliases objects: it stores deep copies of what it is given
// and hands out deep copies, a fresh one to every watcher for every event.
//
// Differences from a real server, on purpose: every Update gets a new
// resourceVersion and an event even if nothing changed; Update keeps the
// stored UID; only metadata.name and metadata.namespace field selectors
// are supported; reads at resourceVersion "0" are never stale and honour
// Limit; a watch at a resourceVersion the fake has not reached fails at
// once instead of after the server's few seconds of waiting; there is no
// admission, defaulting, generation or graceful deletion.
type Fake[T cache.Object] struct {
	info        source.Info          // Resource as given, or guessed from T
	resource    schema.GroupResource // in errors: info's, else "objects"
	window      int
	noWatchList bool

	mu        sync.Mutex
	rv        int64 // current resourceVersion
	compacted int64 // oldest resourceVersion whose state can be rebuilt
	objects   map[cache.Key]T
	history   []change[T] // ascending rv, at most window long
	watchers  map[uint64]*fakeWatcher[T]
	nextID    uint64

	dropEvents   int
	failLists    int
	failListErr  error
	failWatches  int
	failWatchErr error
	listCalls    int
	watchCalls   int

	// The keys of the state at sortedRV in list order, kept for the next
	// page of a paged list: every page of one list reads the same state.
	sortedRV   int64
	sortedKeys []cache.Key
	sortedStrs []string // the keys' string forms
}

// change is one entry of the history: the stored object after the change
// (for a delete, the deleted object with the deletion's resourceVersion)
// and the one before it (the zero T for an add).
type change[T cache.Object] struct {
	rv   int64
	typ  watch.EventType
	key  cache.Key
	obj  T
	prev T
}

// Defaults of [FakeOptions].
const (
	defaultFakeWindow  = 1000
	defaultFakeStartRV = 100
)

// NewFake returns a Fake holding opts.Objects.
func NewFake[T cache.Object](opts FakeOptions[T]) *Fake[T] {
	f := &Fake[T]{
		resource:    opts.Resource,
		window:      opts.Window,
		noWatchList: opts.NoWatchList,
		rv:          opts.StartResourceVersion,
		objects:     make(map[cache.Key]T),
		watchers:    make(map[uint64]*fakeWatcher[T]),
	}
	f.info = source.Info{Resource: source.Resource{GroupResource: opts.Resource, Scope: opts.Scope}, WatchList: !opts.NoWatchList}
	f.info.Resource = source.ResourceOf[T](f)
	f.resource = f.info.Resource.GroupResource
	if f.resource.Empty() {
		f.resource = schema.GroupResource{Resource: "objects"}
	}
	if f.window <= 0 {
		f.window = defaultFakeWindow
	}
	if f.rv <= 0 {
		f.rv = defaultFakeStartRV
	}
	f.compacted = f.rv
	for _, obj := range opts.Objects {
		key, err := keyOf(obj)
		if err != nil {
			continue
		}
		stored, err := copyOf(obj)
		if err != nil {
			continue
		}
		if _, ok := f.objects[key]; ok {
			stored.SetResourceVersion("")
			_, _ = f.updateLocked(key, stored)
			continue
		}
		_, _ = f.addLocked(key, stored)
	}
	return f
}

// Create creates obj, like a POST: it assigns the next resourceVersion,
// sets the UID to "uid-<resourceVersion>" if it is empty, stores a copy and
// returns another. An object with an existing key gets an AlreadyExists
// error; obj itself is never modified.
func (f *Fake[T]) Create(obj T) (T, error) {
	var zero T
	key, stored, err := keyAndCopy(obj)
	if err != nil {
		return zero, fmt.Errorf("sourcetest: create: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.objects[key]; ok {
		return zero, apierrors.NewAlreadyExists(f.resource, key.Name)
	}
	return f.addLocked(key, stored)
}

// Update replaces the object with obj's key, like a PUT: it assigns the
// next resourceVersion, keeps the stored UID, stores a copy and returns
// another. A missing key gets a NotFound error; an obj whose
// resourceVersion is set but is not the stored one gets a Conflict error,
// as optimistic concurrency does. obj itself is never modified.
func (f *Fake[T]) Update(obj T) (T, error) {
	var zero T
	key, stored, err := keyAndCopy(obj)
	if err != nil {
		return zero, fmt.Errorf("sourcetest: update: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.updateLocked(key, stored)
}

// Delete removes the object under key and returns it with the deletion's
// resourceVersion, as the apiserver does. A missing key gets a NotFound
// error.
func (f *Fake[T]) Delete(key cache.Key) (T, error) {
	var zero T
	f.mu.Lock()
	defer f.mu.Unlock()
	old, ok := f.objects[key]
	if !ok {
		return zero, apierrors.NewNotFound(f.resource, key.Name)
	}
	deleted, err := copyOf(old)
	if err != nil {
		return zero, fmt.Errorf("sourcetest: delete: %w", err)
	}
	f.rv++
	deleted.SetResourceVersion(formatRV(f.rv))
	delete(f.objects, key)
	f.recordLocked(change[T]{rv: f.rv, typ: watch.Deleted, key: key, obj: deleted, prev: old})
	return copyOf(deleted)
}

// Get returns a copy of the object under key, or a NotFound error.
func (f *Fake[T]) Get(key cache.Key) (T, error) {
	f.mu.Lock()
	obj, ok := f.objects[key]
	f.mu.Unlock()
	if !ok {
		var zero T
		return zero, apierrors.NewNotFound(f.resource, key.Name)
	}
	return copyOf(obj)
}

// Len returns the number of stored objects.
func (f *Fake[T]) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.objects)
}

// Items returns copies of the stored objects, sorted by key.
func (f *Fake[T]) Items() []T {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]T, 0, len(f.objects))
	for _, obj := range sortedByKey(f.objects) {
		if c, err := copyOf(obj); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// ResourceVersion returns the current resourceVersion: the one of the
// latest change, or the start version if nothing changed yet.
func (f *Fake[T]) ResourceVersion() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return formatRV(f.rv)
}

// Compact forgets the whole retained history, as etcd compaction does:
// afterwards a watch, an Exact list or a continue token at any
// resourceVersion older than the current one gets 410 Gone.
func (f *Fake[T]) Compact() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.history)
	f.history = f.history[:0]
	f.compacted = f.rv
}

func (f *Fake[T]) addLocked(key cache.Key, stored T) (T, error) {
	f.rv++
	stored.SetResourceVersion(formatRV(f.rv))
	if stored.GetUID() == "" {
		stored.SetUID(types.UID("uid-" + formatRV(f.rv)))
	}
	f.objects[key] = stored
	f.recordLocked(change[T]{rv: f.rv, typ: watch.Added, key: key, obj: stored})
	return copyOf(stored)
}

func (f *Fake[T]) updateLocked(key cache.Key, stored T) (T, error) {
	var zero T
	old, ok := f.objects[key]
	if !ok {
		return zero, apierrors.NewNotFound(f.resource, key.Name)
	}
	if rv := stored.GetResourceVersion(); rv != "" && rv != old.GetResourceVersion() {
		return zero, apierrors.NewConflict(f.resource, key.Name,
			errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	f.rv++
	stored.SetResourceVersion(formatRV(f.rv))
	stored.SetUID(old.GetUID())
	f.objects[key] = stored
	f.recordLocked(change[T]{rv: f.rv, typ: watch.Modified, key: key, obj: stored, prev: old})
	return copyOf(stored)
}

// recordLocked appends c to the history, trims the history to the window
// and delivers c to the open watches unless it is to be dropped.
func (f *Fake[T]) recordLocked(c change[T]) {
	f.history = append(f.history, c)
	if extra := len(f.history) - f.window; extra > 0 {
		f.compacted = f.history[extra-1].rv
		clear(f.history[:extra])
		f.history = f.history[extra:]
	}
	if f.dropEvents > 0 {
		f.dropEvents--
		return
	}
	for _, w := range f.watchers {
		if fr, ok := w.filter(c); ok {
			w.enqueue(fr)
		}
	}
}

// stateAtLocked returns the objects as they were at resourceVersion rv,
// which must be between f.compacted and f.rv. The result must not be
// modified when rv is the current version.
func (f *Fake[T]) stateAtLocked(rv int64) map[cache.Key]T {
	if rv >= f.rv {
		return f.objects
	}
	state := maps.Clone(f.objects)
	var zero T
	for i := len(f.history) - 1; i >= 0 && f.history[i].rv > rv; i-- {
		c := f.history[i]
		if c.prev == zero {
			delete(state, c.key)
		} else {
			state[c.key] = c.prev
		}
	}
	return state
}

// List returns the objects matching opts, sorted by key in the order of
// the apiserver's storage keys ("namespace/name"). It supports label
// selectors, metadata.name and metadata.namespace field selectors, Limit
// and Continue (every page is a consistent snapshot at the first page's
// resourceVersion), and the resourceVersion semantics of a real server:
// "" and "0" read the current state, a version newer than the current one
// gets the "Too large resource version" timeout error, ResourceVersionMatch
// Exact reads the state at that version (410 Gone once compacted away), as
// does a version with a Limit and no match (the legacy exact read), and
// a continue token older than the retained history gets 410 Gone. The
// list's ResourceVersion is the version of the snapshot: the current one
// unless Exact or Continue asked for an older one. Errors are *Error with
// PhaseList wrapping the API error.
func (f *Fake[T]) List(ctx context.Context, opts metav1.ListOptions) (source.List[T], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listCalls++
	if err := ctx.Err(); err != nil {
		return source.List[T]{}, &source.Error{Phase: source.PhaseList, Err: err}
	}
	if f.failLists > 0 {
		f.failLists--
		return source.List[T]{}, &source.Error{Phase: source.PhaseList, Err: f.failListErr}
	}
	out, err := f.listLocked(opts)
	if err != nil {
		return source.List[T]{}, &source.Error{Phase: source.PhaseList, Err: err}
	}
	return out, nil
}

func (f *Fake[T]) listLocked(opts metav1.ListOptions) (source.List[T], error) {
	if err := validateOptions(opts, false, !f.noWatchList); err != nil {
		return source.List[T]{}, err
	}
	sel, err := parseSelectors(opts)
	if err != nil {
		return source.List[T]{}, err
	}
	var snapRV int64
	var start string
	if opts.Continue != "" {
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return source.List[T]{}, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		if snapRV, start, err = decodeContinue(opts.Continue); err != nil {
			return source.List[T]{}, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", err))
		}
		switch {
		case snapRV > f.rv:
			return source.List[T]{}, tooLargeRV(snapRV, f.rv)
		case snapRV < f.compacted:
			return source.List[T]{}, apierrors.NewResourceExpired(continueExpired)
		}
	} else {
		rv, err := parseRV(opts.ResourceVersion)
		if err != nil {
			return source.List[T]{}, err
		}
		// A limit with a version and no match is the legacy exact read,
		// as the API server serves it.
		exact := opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact ||
			opts.ResourceVersionMatch == "" && opts.Limit > 0 && rv > 0
		switch {
		case rv > f.rv:
			return source.List[T]{}, tooLargeRV(rv, f.rv)
		case exact && rv < f.compacted:
			return source.List[T]{}, apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
		case exact:
			snapRV = rv
		default:
			snapRV = f.rv
		}
	}
	out := source.List[T]{ResourceVersion: formatRV(snapRV), Items: []T{}}
	state := f.stateAtLocked(snapRV)
	keys, strs := f.sortedAtLocked(snapRV, state)
	i := sort.Search(len(keys), func(i int) bool { return strs[i] >= start })
	for ; i < len(keys); i++ {
		obj := state[keys[i]]
		if !sel.matches(obj) {
			continue
		}
		if opts.Limit > 0 && int64(len(out.Items)) == opts.Limit {
			// Resume right after the last key read, as etcd does.
			out.Continue = encodeContinue(snapRV, strs[i-1]+"\x00")
			break
		}
		c, err := copyOf(obj)
		if err != nil {
			return source.List[T]{}, apierrors.NewInternalError(err)
		}
		out.Items = append(out.Items, c)
	}
	return out, nil
}

// Info tells what the fake serves, and that it streams lists unless
// FakeOptions.NoWatchList; its objects are copies made for the caller, but
// a fake is a test double: it does not say so (Exclusive is false), so an
// informer over it works as over client-go's fake clientset.
func (f *Fake[T]) Info() source.Info { return f.info }

// keyOf is the key of an object the fake stores: nil objects and objects
// without a name have none.
func keyOf[T cache.Object](obj T) (cache.Key, error) {
	var zero T
	if obj == zero {
		return cache.Key{}, source.ErrNilObject
	}
	k := cache.KeyOf(obj)
	if k.Name == "" {
		return cache.Key{}, cache.ErrNoName
	}
	return k, nil
}

func formatRV(rv int64) string { return strconv.FormatInt(rv, 10) }

// copyOf deep-copies obj through [As]; the zero T copies to itself.
func copyOf[T cache.Object](obj T) (T, error) {
	var zero T
	if obj == zero {
		return zero, nil
	}
	return source.As[T](obj.DeepCopyObject())
}

func keyAndCopy[T cache.Object](obj T) (cache.Key, T, error) {
	key, err := keyOf(obj)
	if err != nil {
		var zero T
		return cache.Key{}, zero, err
	}
	c, err := copyOf(obj)
	return key, c, err
}

// sortedAtLocked returns the keys of state, the state at rv, in list
// order, with their string forms; it sorts them once per version.
func (f *Fake[T]) sortedAtLocked(rv int64, state map[cache.Key]T) ([]cache.Key, []string) {
	if f.sortedKeys != nil && f.sortedRV == rv && len(f.sortedKeys) == len(state) {
		return f.sortedKeys, f.sortedStrs
	}
	type keyed struct {
		s string
		k cache.Key
	}
	all := make([]keyed, 0, len(state))
	for k := range state {
		all = append(all, keyed{k.String(), k})
	}
	slices.SortFunc(all, func(a, b keyed) int { return strings.Compare(a.s, b.s) })
	f.sortedRV = rv
	f.sortedKeys, f.sortedStrs = make([]cache.Key, len(all)), make([]string, len(all))
	for i, e := range all {
		f.sortedKeys[i], f.sortedStrs[i] = e.k, e.s
	}
	return f.sortedKeys, f.sortedStrs
}

// sortedKeys returns the keys of m in the order of their string form,
// which is the order of the apiserver's storage keys.
func sortedKeys[T cache.Object](m map[cache.Key]T) []cache.Key {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b cache.Key) int { return strings.Compare(a.String(), b.String()) })
	return keys
}

func sortedByKey[T cache.Object](m map[cache.Key]T) []T {
	out := make([]T, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}

// continueExpired is the apiserver's message for a continue token whose
// snapshot was compacted away.
const continueExpired = "The provided continue parameter is too old to display a consistent list result. " +
	"You can start a new list without the continue parameter."

// continueToken is the apiserver's continue token (k8s.io/apiserver
// storage.continueToken): the snapshot's resourceVersion and the key to
// resume at.
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

const continueAPIVersion = "meta.k8s.io/v1"

func encodeContinue(rv int64, start string) string {
	data, _ := json.Marshal(continueToken{APIVersion: continueAPIVersion, ResourceVersion: rv, StartKey: start})
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeContinue(s string) (rv int64, start string, err error) {
	data, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, "", fmt.Errorf("decode: %w", err)
	}
	var t continueToken
	if err := json.Unmarshal(data, &t); err != nil {
		return 0, "", fmt.Errorf("decode: %w", err)
	}
	switch {
	case t.APIVersion != continueAPIVersion:
		return 0, "", fmt.Errorf("unrecognized encoded version %q", t.APIVersion)
	case t.ResourceVersion <= 0:
		return 0, "", errors.New("incorrect encoded start resourceVersion")
	case t.StartKey == "":
		return 0, "", errors.New("encoded start key empty")
	}
	return t.ResourceVersion, t.StartKey, nil
}
