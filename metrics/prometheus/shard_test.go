package prometheus_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	promadapter "github.com/typedinformer/informer/metrics/prometheus"
	"github.com/typedinformer/informer/sharding"
)

// staticShard reports a fixed status.
type staticShard struct{ st sharding.Status }

func (s staticShard) Status() sharding.Status { return s.st }

func TestRegisterShard(t *testing.T) {
	at := time.Unix(1700000000, 0)
	thirds, err := sharding.Split(1, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		st   sharding.Status
		want map[string]float64
	}{
		{"active after a handoff", sharding.Status{Identity: "r-1", Range: sharding.Range{Start: 1 << 62, End: 1 << 63}, Active: true,
			Objects: 7, Events: 12, Reshards: 2, LastReshard: at, HandoffGap: 40 * time.Millisecond, HandoffGapKnown: true},
			map[string]float64{
				"informer_shard_active": 1, "informer_shard_range_start_fraction": 0.25, "informer_shard_range_fraction": 0.25,
				"informer_shard_objects": 7, "informer_shard_events_total": 12, "informer_shard_reshards_total": 2,
				"informer_shard_last_reshard_timestamp_seconds": 1700000000, "informer_shard_handoff_gap_seconds": 0.04,
			}},
		{"last third, before any handoff", sharding.Status{Identity: "r-2", Range: thirds[2]},
			map[string]float64{
				"informer_shard_active": 0, "informer_shard_range_start_fraction": float64(thirds[2].Start) / (1 << 64),
				"informer_shard_range_fraction": thirds[2].Fraction(),
				"informer_shard_objects":        0, "informer_shard_events_total": 0, "informer_shard_reshards_total": 0,
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
	inf := staticShard{sharding.Status{Identity: "replica-0", Range: sharding.Range{End: 1 << 63}, Active: true, Objects: 1500}}
	if err := promadapter.RegisterShard(reg, "pods", inf); err != nil {
		panic(err)
	}
	printMetrics(reg, "informer_shard_active", "informer_shard_range_fraction", "informer_shard_objects")
	// Output:
	// informer_shard_active{identity="replica-0",name="pods"} 1
	// informer_shard_objects{identity="replica-0",name="pods"} 1500
	// informer_shard_range_fraction{identity="replica-0",name="pods"} 0.5
}
