package typed

import (
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/fifo"
	"github.com/typedinformer/informer/metrics"
)

// informerMetrics is what an informer keeps for Options.Metrics: its
// identity, the recorder of the current run (nil when Options.Metrics is
// nil or the informer does not run), and the time of the last batch from
// the source, which Status reports too.
type informerMetrics struct {
	id        metrics.Informer
	rec       metrics.Recorder // set by Run before the writer starts, read by it
	lastEvent atomic.Int64     // unix nanoseconds; 0 before the first
}

// metricsID is the identity of an informer named name over gvr.
func metricsID(name string, gvr schema.GroupVersionResource) metrics.Informer {
	return metrics.Informer{Name: name, Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource}
}

// startMetrics registers the informer with Options.Metrics, if set, and
// returns the function that unregisters it.
func (inf *Informer[T]) startMetrics() func() {
	if inf.opts.Metrics == nil {
		return func() {}
	}
	rec := inf.opts.Metrics.Register(inf.metrics.id, inf.metricsState)
	if rec == nil {
		return func() {}
	}
	inf.metrics.rec = rec
	return rec.Unregister
}

// metricsState fills s at collection time from what the informer keeps.
func (inf *Informer[T]) metricsState(s *metrics.Snapshot) {
	st := inf.Status()
	*s = metrics.Snapshot{
		Synced: inf.HasSynced(), Stats: st.Stats, Shard: st.Shard,
		LastError: st.LastError, LastEventTime: st.LastEventTime,
		ResourceVersion: inf.LastSyncResourceVersion(),
		QueuedItems:     inf.queue.Len(),
		Handlers:        s.Handlers[:0],

		Quarantined: len(st.Quarantined), Refused: st.Checks.Refused,
		ConsistencyChecks: st.Checks.ConsistencyChecks, Divergences: st.Checks.Divergences, Mutations: st.Checks.Mutations,

		Objects: st.Size.Objects, EstimatedBytes: st.Size.EstimatedBytes, BudgetBytes: st.Size.Budget, OverBudget: st.Size.OverBudget,
	}
	inf.mu.Lock()
	defer inf.mu.Unlock()
	for reg, l := range inf.regs {
		s.Handlers = append(s.Handlers, metrics.Handler{Name: l.name, Pending: reg.Pending(), Panics: reg.Panics(), Merged: reg.Merged()})
	}
}

// lastEventTime is when the writer last applied a batch from the source.
func (inf *Informer[T]) lastEventTime() time.Time {
	if ns := inf.metrics.lastEvent.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// observeError pushes the reason of an error the informer recovered from.
func (inf *Informer[T]) observeError(err error) {
	if rec := inf.metrics.rec; rec != nil {
		rec.ObserveError(string(apierrors.ReasonForError(err)))
	}
}

// batchDone records a batch the writer applied, taken from the queue at
// start: the time of the last event, and, with Options.Metrics, the batch.
// It reads the clock once per batch, never per event, and allocates
// nothing.
func (inf *Informer[T]) batchDone(start time.Time, ds []fifo.Delta[T]) {
	var b metrics.Batch
	for i := range ds {
		switch ds[i].Type {
		case fifo.Added:
			b.Added++
		case fifo.Updated:
			b.Modified++
		case fifo.Deleted:
			b.Deleted++
		case fifo.Bookmark:
			b.Bookmarks++
		case fifo.Refused:
			b.Refused++
		case fifo.ReplaceEnd:
			b.Listed++
		}
	}
	if b == (metrics.Batch{}) {
		return // a resync, or a list still arriving page by page
	}
	now := time.Now()
	inf.metrics.lastEvent.Store(now.UnixNano())
	if rec := inf.metrics.rec; rec != nil {
		b.Latency = now.Sub(start)
		rec.ObserveBatch(b)
	}
}

// batchStart is when the writer took a batch, as batchDone needs it: the
// clock is read only when a recorder measures latency.
func (inf *Informer[T]) batchStart() time.Time {
	if inf.metrics.rec == nil {
		return time.Time{}
	}
	return time.Now()
}
