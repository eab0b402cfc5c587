package typed

import (
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/metrics"
)

// Options configures [NewInformer]. The zero value is ready to use.
type Options[T cache.Object] struct {
	// Name identifies the informer in logs and errors. Default: the
	// resource name.
	Name string
	// Resource names the objects in the lister's NotFound errors. Default:
	// what the source says (source.ResourceOf), else guessed from T's Go
	// type name (pods for *corev1.Pod), else "objects".
	Resource schema.GroupResource
	// Scope says whether the objects are namespaced, so the lister can
	// refuse a lookup in the wrong scope. Default: what the source says,
	// else inferred from the cached objects.
	Scope cache.Scope
	// ResyncPeriod, if positive, makes every handler get OnUpdate(obj, obj)
	// for every cached object at that period (never a LIST). Default: 0, no
	// resync.
	ResyncPeriod time.Duration
	// Transform runs once on every object from the source before it enters
	// the cache, for example to drop fields the controller does not need.
	// It may modify and return its argument if the source hands out
	// objects it does not share (every source of this module does). An
	// error or a panic refuses the object: see OnRefused.
	Transform func(T) (T, error)
	// OnRefused says what happens to an object the cache cannot take (a
	// Transform error or panic, an index function's error). Default:
	// Quarantine, it is left out, reported and listed in
	// Status().Quarantined while the rest of the cache syncs;
	// StopAndRelist makes the informer relist until it is fixed.
	OnRefused RefusePolicy
	// KeepManagedFields keeps metadata.managedFields. Default: false, they
	// are dropped before Transform runs (about a fifth of a typical server
	// object), on a copy: the source's object is never modified. A source
	// whose Info says NoManagedFields (FromConfig's, by default) has
	// dropped them already: NewInformer fails with KeepManagedFields over
	// it.
	KeepManagedFields bool
	// NoIntern turns off shared strings and maps. Default: false: when
	// the source's Info says its objects are decoded for the informer
	// alone (Exclusive, as the REST source of source.FromConfig says),
	// the informer's writer shares equal strings between the objects it
	// caches: namespace, labels, annotations, owners, images, container
	// and volume names, node, condition types and statuses are held once
	// for all objects, not once per object; and equal maps too: the
	// labels, annotations and container resources of the pods of one
	// ReplicaSet are one map for all of them. It costs a few microseconds
	// of the writer's time per object, beside the decoding of the next
	// one (docs/performance.md has the figures). Cached objects are
	// read-only, as in client-go: with shared maps, a handler that
	// modifies an object's labels in place changes them for every object
	// holding the same map (Options.DetectMutations finds such a
	// handler); deep-copy before modifying. The objects of other sources
	// (fakes, lister-watchers) are left as they come.
	NoIntern bool
	// Indexers are custom indexes of the cache besides the namespace index,
	// queried with Store().ByIndex.
	Indexers cache.Indexers[T]
	// LabelIndexes are label keys the cache indexes: the lister answers
	// equality and set selectors on them from the index.
	LabelIndexes []string
	// ErrorHandler receives every error the informer recovers from: list and
	// watch failures, refused objects, handler panics, what the safety
	// nets find. It is called by the informer one error at a time (never
	// two calls at once, each after the one before returned; from a
	// goroutine that runs only while there are errors to deliver), with
	// no lock held, so it may call the informer; it
	// should not block for long (a handler that panicked waits for it). A panic in it is recovered
	// and logged. Default: errors are logged (klog, from Run's context),
	// each once: one that repeats unchanged (a Forbidden list retried with
	// backoff) is logged again every 5 minutes at most, with how often it
	// came meanwhile.
	ErrorHandler func(error)
	// LabelSelector and FieldSelector restrict the informer to the objects
	// they select, on every list and watch (as a label or field selector in
	// kubectl). An invalid one fails NewInformer. Default: everything.
	LabelSelector, FieldSelector string
	// TweakListOptions, if set, changes the options of every list and
	// watch request after the selectors are set, for what the other
	// options do not cover. It must change them the same way every time.
	TweakListOptions func(*metav1.ListOptions)
	// NoWatchList turns off the streaming initial list (sendInitialEvents).
	// Default: false, it is tried when the source's Info says it can
	// stream (client-go's fake clientsets cannot), and LIST is the
	// fallback.
	NoWatchList bool
	// PageSize is the page size of LIST requests. Default: 500.
	PageSize int64
	// MinWatchTimeout is the lower bound of the randomised watch timeout.
	// Default: 5 minutes.
	MinWatchTimeout time.Duration
	// WatchIdleTimeout stops a watch that delivered neither an event nor
	// a bookmark for that long and watches again from the last
	// resourceVersion, without a relist: a stalled (half-open) connection
	// is given up. It is armed once the source has sent a periodic
	// bookmark, so a source that sends none (an API server with
	// --watch-cache=false) is never timed out. A stall is found between
	// the timeout and 1.25 times it after the last event. Default (0):
	// DefaultWatchIdleTimeout; negative: off.
	WatchIdleTimeout time.Duration
	// ConsistencyCheck, if positive, compares the cache with the server at
	// that period (keys and resourceVersions, from a paged list at the
	// cache's resourceVersion), reports any divergence with the keys
	// involved and repairs it with a relist. See ConsistencyError. Each
	// wait is stretched by up to a quarter at random, so that informers
	// started together do not list in step. Default: 0, off.
	ConsistencyCheck time.Duration
	// StopTimeout bounds how long Run, once ctx has ended, waits for the
	// handler calls in progress to return. A handler still in a call then
	// is reported to ErrorHandler by name (an error wrapping
	// ErrHandlerStuck) and left to return on its own goroutine, which
	// delivers nothing more. It bounds, as well, the wait for ErrorHandler
	// to take the last errors: one that blocks gets them when it returns,
	// after Run did. Default (0): DefaultStopTimeout; negative: wait for
	// every call, without bound.
	StopTimeout time.Duration
	// DetectMutations makes the informer keep a deep copy of every object
	// it caches and compare them every MutationCheckPeriod and when Run
	// returns: an object changed in the cache (by a handler or a reader
	// that did not copy it first) is reported to ErrorHandler as a
	// *MutationError naming the object and the changed fields. It costs a
	// copy of every object: for tests. Default: false, unless the
	// environment variable TYPEDINFORMER_DETECT_MUTATIONS is "true".
	DetectMutations bool
	// Metrics receives the informer's metrics while it runs (see package
	// metrics; metrics/prometheus exports them). Default: nil, none are
	// reported and the informer does no work for them.
	Metrics metrics.Metrics
	// MemoryBudget, if set, is what the informer's cache may hold by its
	// size estimate (Status().Size): crossing it is reported (an
	// *OverBudgetError to the ErrorHandler, the metrics, the debug page)
	// and, with Refuse, the cache takes no new objects past it. Default:
	// nil, no budget; the size is estimated all the same.
	MemoryBudget *MemoryBudget
	// Shard, if set, restricts the informer to one shard of the resource
	// (see Shard; package sharding makes them). Default: nil, every
	// object.
	Shard Shard
	// WarmStart, if set, saves the cache to a file and starts from it on
	// the next run instead of listing (see WarmStart). Default: nil, every
	// start lists.
	WarmStart *WarmStart
}

// DefaultWatchIdleTimeout is the default of Options.WatchIdleTimeout. An API
// server's watch cache sends every watch a bookmark about every minute
// (and 2s before the watch's own timeout), so a watch that delivered
// nothing for two and a half minutes has missed two heartbeats: its
// connection is stalled. One late or lost bookmark (the server skips a
// bookmark for a watcher whose buffer is full, and then events flow) does
// not trip it.
const DefaultWatchIdleTimeout = 150 * time.Second

// DefaultStopTimeout is the default of Options.StopTimeout: well inside a
// pod's default termination grace period of 30 seconds.
const DefaultStopTimeout = 10 * time.Second

// ErrWatchIdle is wrapped by the error reported when a watch delivered
// nothing for Options.WatchIdleTimeout and was stopped; the informer
// watches again from its last resourceVersion.
var ErrWatchIdle = errors.New("typed: watch idle")

// stopTimeout is Run's bound for Options.StopTimeout; 0: none.
func stopTimeout(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultStopTimeout
	case d < 0:
		return 0
	}
	return d
}

// idleTimeout is the reflector's idle timeout for Options.WatchIdleTimeout.
func idleTimeout(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultWatchIdleTimeout
	case d < 0:
		return 0
	}
	return d
}
