package prometheus

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/typedinformer/informer/metrics"
)

// ErrNilShard is returned by RegisterShard for a nil informer.
var ErrNilShard = errors.New("prometheus: nil sharded informer")

// ShardStatuser reports a sharded replica's state: a *sharding.Informer
// of any type has it.
type ShardStatuser interface {
	Replica() metrics.Replica
}

var (
	shardLabels     = []string{"name", "identity"}
	shardActiveDesc = prometheus.NewDesc("informer_shard_active",
		"1 while the replica's informer runs on its range, else 0 (between two ranges, or without a Lease).", shardLabels, nil)
	shardStartDesc = prometheus.NewDesc("informer_shard_range_start_fraction",
		"Start of the replica's range as a fraction of the hash space.", shardLabels, nil)
	shardSizeDesc = prometheus.NewDesc("informer_shard_range_fraction",
		"Share of the hash space the replica's range covers.", shardLabels, nil)
	shardObjectsDesc = prometheus.NewDesc("informer_shard_objects",
		"Objects the replica's handlers hold.", shardLabels, nil)
	shardEventsDesc = prometheus.NewDesc("informer_shard_events_total",
		"Changes delivered to the replica's handlers besides initial lists.", shardLabels, nil)
	shardReshardsDesc = prometheus.NewDesc("informer_shard_reshards_total",
		"Ranges the replica started after its first.", shardLabels, nil)
	shardLastReshardDesc = prometheus.NewDesc("informer_shard_last_reshard_timestamp_seconds",
		"When the replica's current range started, in Unix seconds.", shardLabels, nil)
	shardGapDesc = prometheus.NewDesc("informer_shard_handoff_gap_seconds",
		"How long after another replica gave up (part of) the range the replica's last range started.", shardLabels, nil)
)

// shardCollector reads a sharded informer's status at collection.
type shardCollector struct {
	name string
	inf  ShardStatuser
}

// RegisterShard exports the status of a sharded informer under name (a
// label, with the replica's identity): whether it is active, its range,
// objects, events, reshards, the last reshard's time and the last handoff
// gap (only once one is known), read when reg is gathered. Its range
// informer's own metrics come from typed.Options.Metrics as for any
// informer. It fails for a nil registerer or informer and when reg
// refuses the collector (the same name registered twice).
func RegisterShard(reg prometheus.Registerer, name string, inf ShardStatuser) error {
	if reg == nil {
		return ErrNilRegisterer
	}
	if inf == nil {
		return ErrNilShard
	}
	if err := reg.Register(shardCollector{name: name, inf: inf}); err != nil {
		return fmt.Errorf("prometheus: register shard %s: %w", name, err)
	}
	return nil
}

// Describe implements prometheus.Collector.
func (c shardCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{shardActiveDesc, shardStartDesc, shardSizeDesc, shardObjectsDesc,
		shardEventsDesc, shardReshardsDesc, shardLastReshardDesc, shardGapDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c shardCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.inf.Replica()
	lv := []string{c.name, st.Identity}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, lv...)
	}
	gauge(shardActiveDesc, bit(st.Active))
	gauge(shardStartDesc, float64(st.RangeStart)/(1<<64))
	gauge(shardSizeDesc, fraction(st.RangeStart, st.RangeEnd, st.Active))
	gauge(shardObjectsDesc, float64(st.Objects))
	counter(shardEventsDesc, float64(st.Events))
	counter(shardReshardsDesc, float64(st.Reshards))
	if !st.LastReshard.IsZero() {
		gauge(shardLastReshardDesc, float64(st.LastReshard.UnixNano())/1e9)
	}
	if st.HandoffGapKnown {
		gauge(shardGapDesc, st.HandoffGap.Seconds())
	}
}

// fraction is the share of the hash space [start, end) covers, with end 0
// for 2^64; 0 for a replica without a range.
func fraction(start, end uint64, active bool) float64 {
	if !active {
		return 0
	}
	if start == 0 && end == 0 {
		return 1
	}
	return float64(end-start) / (1 << 64) // end 0: wraps to the right size
}
