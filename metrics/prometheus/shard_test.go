package prometheus_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/typedinformer/informer/metrics"
	promadapter "github.com/typedinformer/informer/metrics/prometheus"
)

// staticShard reports a fixed state.
type staticShard struct{ st metrics.Replica }

func (s staticShard) Replica() metrics.Replica { return s.st }

func TestRegisterShard(t *testing.T) {
	at := time.Unix(1700000000, 0)
	tests := []struct {
		name string
		st   metrics.Replica
		want map[string]float64
	}{
		{"active after a handoff", metrics.Replica{Identity: "r-1", RangeStart: 1 << 62, RangeEnd: 1 << 63, Active: true,
			Objects: 7, Events: 12, Reshards: 2, LastReshard: at, HandoffGap: 40 * time.Millisecond, HandoffGapKnown: true},
			map[string]float64{
				"informer_shard_active": 1, "informer_shard_range_start_fraction": 0.25, "informer_shard_range_fraction": 0.25,
				"informer_shard_objects": 7, "informer_shard_events_total": 12, "informer_shard_reshards_total": 2,
				"informer_shard_last_reshard_timestamp_seconds": 1700000000, "informer_shard_handoff_gap_seconds": 0.04,
			}},
		{"the last half, active", metrics.Replica{Identity: "r-2", RangeStart: 1 << 63, Active: true},
			map[string]float64{
				"informer_shard_active": 1, "informer_shard_range_start_fraction": 0.5, "informer_shard_range_fraction": 0.5,
				"informer_shard_objects": 0, "informer_shard_events_total": 0, "informer_shard_reshards_total": 0,
			}},
		{"no range yet", metrics.Replica{Identity: "r-3"},
			map[string]float64{
				"informer_shard_active": 0, "informer_shard_range_start_fraction": 0, "informer_shard_range_fraction": 0,
				"informer_shard_objects": 0, "informer_shard_events_total": 0, "informer_shard_reshards_total": 0,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			if err := promadapter.RegisterShard(reg, "pods", staticShard{tt.st}); err != nil {
				t.Fatal(err)
			}
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for _, mf := range mfs {
				for _, m := range mf.GetMetric() {
					labels := map[string]string{}
					for _, l := range m.GetLabel() {
						labels[l.GetName()] = l.GetValue()
					}
					if diff := cmp.Diff(map[string]string{"name": "pods", "identity": tt.st.Identity}, labels); diff != "" {
						t.Errorf("%s labels (-want +got):\n%s", mf.GetName(), diff)
					}
					got[mf.GetName()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("metrics (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRegisterShardErrors(t *testing.T) {
	reg := prometheus.NewRegistry()
	tests := []struct {
		name string
		reg  prometheus.Registerer
		inf  promadapter.ShardStatuser
		want error
	}{
		{"nil registerer", nil, staticShard{}, promadapter.ErrNilRegisterer},
		{"nil informer", reg, nil, promadapter.ErrNilShard},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := promadapter.RegisterShard(tt.reg, "pods", tt.inf); !errors.Is(err, tt.want) {
				t.Errorf("RegisterShard: %v, want %v", err, tt.want)
			}
		})
	}
	if err := promadapter.RegisterShard(reg, "pods", staticShard{}); err != nil {
		t.Fatal(err)
	}
	if err := promadapter.RegisterShard(reg, "pods", staticShard{}); err == nil {
		t.Error("the same shard collector registered twice")
	}
}

func ExampleRegisterShard() {
	reg := prometheus.NewRegistry()
	// A *sharding.Informer in a real program; here a fixed status.
	inf := staticShard{metrics.Replica{Identity: "replica-0", RangeEnd: 1 << 63, Active: true, Objects: 1500}}
	if err := promadapter.RegisterShard(reg, "pods", inf); err != nil {
		panic(err)
	}
	printMetrics(reg, "informer_shard_active", "informer_shard_range_fraction", "informer_shard_objects")
	// Output:
	// informer_shard_active{identity="replica-0",name="pods"} 1
	// informer_shard_objects{identity="replica-0",name="pods"} 1500
	// informer_shard_range_fraction{identity="replica-0",name="pods"} 0.5
}
