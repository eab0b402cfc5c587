package prometheus

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The metrics read from each informer when the registry is gathered.
var (
	queuedItemsDesc = prometheus.NewDesc("informer_queued_items",
		"Number of changes queued for the informer's writer.", informerLabels, nil)
	storeRVDesc = prometheus.NewDesc("informer_store_resource_version",
		"The 15 least significant digits of the last resourceVersion the informer took from its source.", informerLabels, nil)
	syncedDesc = prometheus.NewDesc("informer_synced",
		"1 once the informer's initial list is in its cache, else 0.", informerLabels, nil)
	listsDesc = prometheus.NewDesc("informer_lists_total",
		"LIST requests of the informer (the pages of one list count once).", informerLabels, nil)
	watchListsDesc = prometheus.NewDesc("informer_watch_lists_total",
		"Streaming lists (watches with sendInitialEvents) of the informer.", informerLabels, nil)
	relistsDesc = prometheus.NewDesc("informer_relists_total",
		"Lists and streaming lists after the informer's first successful one.", informerLabels, nil)
	watchesDesc = prometheus.NewDesc("informer_watches_total",
		"Watch requests of the informer, besides streaming lists.", informerLabels, nil)
	restartsDesc = prometheus.NewDesc("informer_watch_restarts_total",
		"Watch requests that resumed from the informer's last resourceVersion rather than following a list.", informerLabels, nil)
	lastErrorDesc = prometheus.NewDesc("informer_last_sync_error",
		"1 while the informer's last list or watch error persists (the cache may be stale), else 0.", informerLabels, nil)
	sinceEventDesc = prometheus.NewDesc("informer_seconds_since_last_event",
		"Seconds since the informer last applied a watch event, bookmark or list (since it started, before the first).", informerLabels, nil)
	handlerLabels = append(informerLabels[:4:4], "handler")
	pendingDesc   = prometheus.NewDesc("informer_handler_pending",
		"Notifications waiting for the handler.", handlerLabels, nil)
	panicsDesc = prometheus.NewDesc("informer_handler_panics_total",
		"Calls of the handler that panicked.", handlerLabels, nil)
	mergedDesc = prometheus.NewDesc("informer_handler_merged_total",
		"Notifications the handler's coalescing buffer merged into another or cancelled out.", handlerLabels, nil)
	shardClientDesc = prometheus.NewDesc("informer_shard_client_filtering",
		"For a sharded informer: 1 while the server ignores its shard selector and it filters on the client, else 0.", informerLabels, nil)
	shardFilteredDesc = prometheus.NewDesc("informer_shard_filtered_total",
		"For a sharded informer: listed objects and watch events dropped on the client as outside its shard.", informerLabels, nil)
	quarantinedDesc = prometheus.NewDesc("informer_quarantined_objects",
		"Objects the informer's cache could not take (a transform or index error) and left out.", informerLabels, nil)
	refusedDesc = prometheus.NewDesc("informer_refused_objects_total",
		"Object versions the informer quarantined.", informerLabels, nil)
	idleWatchesDesc = prometheus.NewDesc("informer_idle_watches_total",
		"Watches the informer stopped because they delivered nothing for its watch idle timeout.", informerLabels, nil)
	consistencyChecksDesc = prometheus.NewDesc("informer_consistency_checks_total",
		"Comparisons of the informer's cache with the server.", informerLabels, nil)
	divergencesDesc = prometheus.NewDesc("informer_consistency_divergences_total",
		"Consistency checks that found the informer's cache diverged from the server (each repaired by a relist).", informerLabels, nil)
	mutationsDesc = prometheus.NewDesc("informer_cache_mutations_total",
		"Cached objects the informer's mutation detector found changed.", informerLabels, nil)
	objectsDesc = prometheus.NewDesc("informer_objects",
		"Objects in the informer's cache.", informerLabels, nil)
	estimatedBytesDesc = prometheus.NewDesc("informer_estimated_bytes",
		"Bytes the objects of the informer's cache hold, estimated from a sample of them (shared strings counted in each object: an upper bound).", informerLabels, nil)
	budgetDesc = prometheus.NewDesc("informer_memory_budget_bytes",
		"The informer's memory budget (typed.Options.MemoryBudget); absent without one.", informerLabels, nil)
	overBudgetDesc = prometheus.NewDesc("informer_over_memory_budget",
		"1 while the informer's estimated bytes are past its memory budget, else 0; absent without a budget.", informerLabels, nil)
)

// stateCollector reads every registered informer's state at collection.
type stateCollector struct{ m *Metrics }

// Describe implements prometheus.Collector.
func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{queuedItemsDesc, storeRVDesc, syncedDesc, listsDesc, watchListsDesc,
		relistsDesc, watchesDesc, restartsDesc, lastErrorDesc, sinceEventDesc, pendingDesc, panicsDesc, mergedDesc,
		shardClientDesc, shardFilteredDesc,
		quarantinedDesc, refusedDesc, idleWatchesDesc, consistencyChecksDesc, divergencesDesc, mutationsDesc,
		objectsDesc, estimatedBytesDesc, budgetDesc, overBudgetDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. It holds the Metrics' lock
// while it reads the informers, so that none unregisters meanwhile (an
// informer's state function must not be called after).
func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	for _, rs := range m.informers {
		r := rs[0]
		r.state(&r.snap)
		s, lv := &r.snap, r.labels
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
		}
		counter := func(d *prometheus.Desc, v int) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), lv...)
		}
		gauge(queuedItemsDesc, float64(s.QueuedItems))
		if rv, ok := storeResourceVersion(s.ResourceVersion); ok {
			gauge(storeRVDesc, rv)
		}
		gauge(syncedDesc, bit(s.Synced))
		counter(listsDesc, s.Stats.Lists)
		counter(watchListsDesc, s.Stats.WatchLists)
		counter(relistsDesc, s.Stats.Relists)
		counter(watchesDesc, s.Stats.Watches)
		counter(restartsDesc, s.Stats.WatchRestarts)
		gauge(lastErrorDesc, bit(s.LastError != nil))
		last := s.LastEventTime
		if last.IsZero() {
			last = r.since
		}
		gauge(sinceEventDesc, max(now.Sub(last), 0).Seconds())
		gauge(quarantinedDesc, float64(s.Quarantined))
		counter(refusedDesc, s.Refused)
		counter(idleWatchesDesc, s.Stats.IdleWatches)
		counter(consistencyChecksDesc, s.ConsistencyChecks)
		counter(divergencesDesc, s.Divergences)
		counter(mutationsDesc, s.Mutations)
		gauge(objectsDesc, float64(s.Objects))
		gauge(estimatedBytesDesc, float64(s.EstimatedBytes))
		if s.BudgetBytes > 0 {
			gauge(budgetDesc, float64(s.BudgetBytes))
			gauge(overBudgetDesc, bit(s.OverBudget))
		}
		if s.Shard.Selector != "" {
			gauge(shardClientDesc, bit(s.Shard.ClientFiltering))
			counter(shardFilteredDesc, s.Shard.Filtered)
		}
		for _, h := range s.Handlers {
			hl := append(lv[:4:4], h.Name)
			ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(h.Pending), hl...)
			ch <- prometheus.MustNewConstMetric(panicsDesc, prometheus.CounterValue, float64(h.Panics), hl...)
			ch <- prometheus.MustNewConstMetric(mergedDesc, prometheus.CounterValue, float64(h.Merged), hl...)
		}
	}
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// storeResourceVersion is rv as informer_store_resource_version has it:
// its last 15 digits as a number (exact in a float64), as client-go does;
// false for a resourceVersion that is not a number.
func storeResourceVersion(rv string) (float64, bool) {
	if rv == "" {
		return 0, true
	}
	if len(rv) > 15 {
		rv = rv[len(rv)-15:]
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return 0, false
	}
	return float64(n), true
}
