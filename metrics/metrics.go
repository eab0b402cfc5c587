// Package metrics is the interface through which an informer reports its
// metrics, with no dependency on a metrics library. Set
// typed.Options.Metrics to an implementation, such as the Prometheus
// adapter in metrics/prometheus; the default, nil, reports nothing and
// costs nothing.
//
// # Pull first
//
// Most of what an informer can report is already kept by the informer:
// counters of lists, relists, watches and events, the last error, the queue
// length, the resourceVersion, each handler's pending, merged and panicked
// notifications. An implementation reads those when it is collected, through the
// [State] function it gets in [Metrics.Register], so the informer does no
// work for them between collections. The informer pushes only what it
// keeps nowhere: how long each batch took to apply, the watch events of
// each type, and the reason of each error ([Recorder]).
//
// # Lifetime
//
// An informer registers when its Run starts and calls [Recorder.Unregister]
// when Run returns, so an implementation holds no informer that has stopped.
package metrics

import (
	"time"
)

// Informer identifies an informer: its name and, when known, the group,
// version and resource of its objects. Kubernetes components label their
// informer metrics with these four.
type Informer struct {
	// Name is the informer's name (typed.Options.Name, or its resource).
	Name string
	// Group, Version and Resource are the informer's resource, each empty
	// when unknown.
	Group, Version, Resource string
}

// Metrics receives the metrics of informers. Implementations must be safe
// for concurrent use by many informers.
type Metrics interface {
	// Register is called when an informer's Run starts. state reads the
	// informer at collection time; it is safe to call from any goroutine
	// until Unregister, and must not be called after. The Recorder returned
	// takes what the informer pushes until Run returns.
	Register(id Informer, state State) Recorder
}

// State fills s with the informer's current state. It reuses
// s.Handlers' storage.
type State func(s *Snapshot)

// Recorder takes the values an informer pushes. Its methods are called
// from the informer's goroutines and must not block.
type Recorder interface {
	// ObserveBatch is called by the informer's writer after it applied one
	// batch of changes taken from its queue, if the batch carried a watch
	// event, a bookmark or the end of a list (not for a resync, nor for a
	// batch of list pages only).
	ObserveBatch(b Batch)
	// ObserveError is called once for every list, watch or write error
	// the informer recovers from, with the error's API reason
	// (apierrors.ReasonForError: "Forbidden", "Expired"...; empty for an
	// error that is not an API status, such as a broken connection).
	ObserveError(reason string)
	// Unregister is called when the informer's Run returns: the state
	// function may no longer be called.
	Unregister()
}

// Batch is one batch the writer applied.
type Batch struct {
	// Latency is how long the writer took to apply the batch and hand its
	// notifications to the handlers' buffers, from the moment it was
	// taken from the queue.
	Latency time.Duration
	// Added, Modified, Deleted and Bookmarks count the watch events of the
	// batch by type (the objects of a list are not events).
	Added, Modified, Deleted, Bookmarks int
	// Refused counts the objects of the batch the informer could not take
	// (quarantined), in watch events and lists alike.
	Refused int
	// Listed counts the full lists (initial or relists) the batch
	// completed.
	Listed int
}

// Stats counts what an informer did with its source. It is defined once,
// here, where every layer can read it: an informer's reflector fills it,
// typed.Status carries it, a Snapshot carries it to a metrics library, and
// the debug page of package httpinfo serves it.
type Stats struct {
	// Lists counts LIST requests (pages of one list count once);
	// WatchLists counts streaming lists; Relists counts the lists and
	// streaming lists after the first one that succeeded.
	Lists      int `json:"lists"`
	WatchLists int `json:"watchLists"`
	Relists    int `json:"relists"`
	// Watches counts watch requests besides streaming lists;
	// WatchRestarts counts those that resumed a watch from its last
	// resourceVersion, rather than following a list.
	Watches       int `json:"watches"`
	WatchRestarts int `json:"watchRestarts"`
	// Events and Bookmarks count watch events taken.
	Events    int `json:"events"`
	Bookmarks int `json:"bookmarks"`
	// Errors counts list and watch errors recovered from.
	Errors int `json:"errors"`
	// IdleWatches counts watches stopped by the watch idle timeout
	// (typed.Options.WatchIdleTimeout).
	IdleWatches int `json:"idleWatches"`
	// WarmStarts counts starts from a saved cache the server accepted
	// (typed.Options.WarmStart): 1 after a warm start, 0 after a list.
	WarmStarts int `json:"warmStarts,omitempty"`
}

// ShardStatus is what an informer restricted to a shard knows about it
// (typed.Options.Shard); the zero value for one that is not.
type ShardStatus struct {
	// Selector is the shard selector sent; empty without a shard.
	Selector string `json:"selector,omitempty"`
	// ClientFiltering is true when the last list did not echo the
	// selector: the server ignored it and the informer filters on the
	// client.
	ClientFiltering bool `json:"clientFiltering,omitempty"`
	// Filtered counts the listed objects and watch events dropped on the
	// client as outside the shard.
	Filtered int `json:"filtered,omitempty"`
	// Synced is true while the cache holds a list of the current shard:
	// false until the first list, and from a move to another shard
	// (typed.Informer.Move) until that shard's list is in the cache.
	Synced bool `json:"synced,omitempty"`
}

// Snapshot is an informer's state at one moment.
type Snapshot struct {
	// Synced is true once the initial list is in the cache.
	Synced bool
	// Stats are the informer's counters.
	Stats Stats
	// Shard is the state of the informer's shard; zero without one.
	Shard ShardStatus
	// LastError is the informer's last error since its source was last
	// healthy; nil when healthy.
	LastError error
	// LastEventTime is when the informer last applied something from its
	// source (a watch event, a bookmark, a list); zero before the first.
	LastEventTime time.Time
	// ResourceVersion is the last resourceVersion the informer took from
	// its source.
	ResourceVersion string
	// QueuedItems is the number of changes waiting in the informer's
	// queue for its writer.
	QueuedItems int
	// Handlers holds one entry per handler, in no particular order.
	Handlers []Handler
	// Quarantined is the number of objects left out of the cache
	// (typed.Quarantine); Refused counts the object versions quarantined.
	Quarantined, Refused int
	// ConsistencyChecks counts comparisons of the cache with the server
	// (typed.Options.ConsistencyCheck); Divergences those that found the
	// cache diverged. Mutations counts cached objects found mutated
	// (typed.Options.DetectMutations).
	ConsistencyChecks, Divergences, Mutations int
	// Objects is the number of objects in the cache; EstimatedBytes what
	// they hold by the informer's estimate (typed.Size); BudgetBytes the
	// informer's memory budget, 0 without one, and OverBudget whether
	// the estimate is past it.
	Objects                     int
	EstimatedBytes, BudgetBytes int64
	OverBudget                  bool
}

// Replica is one replica's state in a group that shards a resource (a
// sharding.Informer's status), what a metrics library exports of it.
type Replica struct {
	// Identity is the replica's identity in its group.
	Identity string
	// Active is true while the replica's informer handles a range.
	Active bool
	// RangeStart and RangeEnd bound the hashes of the replica's range,
	// [RangeStart, RangeEnd), with RangeEnd 0 for 2^64; zero while not
	// Active.
	RangeStart, RangeEnd uint64
	// Objects is the number of objects the replica's informer holds.
	Objects int
	// Events counts the watch events of the replica's shards it took.
	Events int64
	// Reshards counts the ranges started after the first; LastReshard is
	// when the last one started.
	Reshards    int
	LastReshard time.Time
	// HandoffGap is how long the last range started after another replica
	// gave up (part of) it (its release, or its Lease's expiry);
	// HandoffGapKnown is false when no such release was seen.
	HandoffGap      time.Duration
	HandoffGapKnown bool
}

// Handler is the state of one of an informer's handlers.
type Handler struct {
	// Name is the handler's name, unique within its informer.
	Name string
	// Pending is the number of notifications waiting for the handler.
	Pending int64
	// Panics counts the handler's calls that panicked.
	Panics int64
	// Merged counts the notifications a coalescing buffer merged into
	// another or cancelled out (typed.CoalesceByKey).
	Merged int64
}

// Discard is a Metrics that reports nothing. An informer with nil
// typed.Options.Metrics behaves as if it had Discard, without calling it.
var Discard Metrics = discard{}

type discard struct{}

func (discard) Register(Informer, State) Recorder { return discard{} }
func (discard) ObserveBatch(Batch)                {}
func (discard) ObserveError(string)               {}
func (discard) Unregister()                       {}
