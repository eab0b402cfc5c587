package httpinfo_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/httpinfo"
	"github.com/typedinformer/informer/typed"
)

// countingHandler is a Handler with fixed counts; withMerged adds the
// optional Merged method.
type countingHandler struct {
	synced          bool
	pending, panics int64
}

func (h countingHandler) HasSynced() bool { return h.synced }
func (h countingHandler) Pending() int64  { return h.pending }
func (h countingHandler) Panics() int64   { return h.panics }

type withMerged struct {
	countingHandler
	merged int64
}

func (h withMerged) Merged() int64 { return h.merged }

func TestRegistryErrors(t *testing.T) {
	reg := newRegistry(t)
	inf := newInformer(t, secretFake(1), typed.Options[*corev1.Secret]{})
	e := add(t, reg, inf)
	other := add(t, newRegistry(t), inf)
	var nilReg *typed.Registration
	cases := []struct {
		name string
		do   func() error
		want error
	}{
		{"NewRegistry negative MaxErrorBytes", func() error {
			_, err := httpinfo.NewRegistry(httpinfo.Options{MaxErrorBytes: -1})
			return err
		}, httpinfo.ErrInvalidOptions},
		{"Add to nil registry", func() error { _, err := httpinfo.Add(nil, inf); return err }, httpinfo.ErrNilRegistry},
		{"Add nil informer", func() error { _, err := httpinfo.Add[*corev1.Secret](reg, nil); return err }, httpinfo.ErrNilInformer},
		{"Add twice", func() error { _, err := httpinfo.Add(reg, inf); return err }, httpinfo.ErrDuplicate},
		{"AddHandler nil", func() error { return e.AddHandler("h", nil) }, httpinfo.ErrNilHandler},
		{"AddHandler nil registration", func() error { return e.AddHandler("h", nilReg) }, httpinfo.ErrNilHandler},
		{"AddHandler no name", func() error { return e.AddHandler("", countingHandler{}) }, httpinfo.ErrNoName},
		{"AddHandler", func() error { return e.AddHandler("h", countingHandler{}) }, nil},
		{"AddHandler twice", func() error { return e.AddHandler("h", countingHandler{}) }, httpinfo.ErrDuplicate},
		{"Remove another registry's entry", func() error { return reg.Remove(other) }, httpinfo.ErrUnknown},
		{"Remove", func() error { return reg.Remove(e) }, nil},
		{"Remove again", func() error { return reg.Remove(e) }, httpinfo.ErrUnknown},
	}
	for _, tc := range cases { // in order: later cases build on earlier ones
		if err := tc.do(); !errors.Is(err, tc.want) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestSnapshot: what the snapshot says of a synced informer, its handlers
// (merged only for one that has the method) and its last event.
func TestSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := secretFake(5)
		inf := newInformer(t, fake, typed.Options[*corev1.Secret]{Name: "shop-secrets"})
		reg := newRegistry(t)
		e := add(t, reg, inf)
		for _, h := range []struct {
			name string
			h    httpinfo.Handler
		}{
			{"plain", countingHandler{synced: true, pending: 3, panics: 1}},
			{"coalescing", withMerged{countingHandler{pending: 2}, 7}},
		} {
			if err := e.AddHandler(h.name, h.h); err != nil {
				t.Fatal(err)
			}
		}
		registered := time.Now()
		run(t, inf)
		synctest.Wait()

		first := reg.Snapshot()
		status := inf.Status()
		st := status.Stats
		seven := int64(7)
		want := httpinfo.InformerStatus{
			Name: "shop-secrets", Synced: true, ResourceVersion: fake.ResourceVersion(), Objects: 5,
			Registered: registered,
			Counts:     st,
			// The informer's own estimate, which TestSizeEstimate checks.
			EstimatedBytes: status.Size.EstimatedBytes, BytesPerObject: status.Size.BytesPerObject,
			Handlers: []httpinfo.HandlerStatus{
				{Name: "plain", Synced: true, Pending: 3, Panics: 1},
				{Name: "coalescing", Pending: 2, Merged: &seven},
			},
		}
		listAge := first.Time.Sub(status.LastEventTime).Seconds()
		want.LastEvent, want.LastEventAgeSeconds = status.LastEventTime, &listAge
		if status.LastEventTime.IsZero() {
			t.Fatal("Status().LastEventTime is zero after the initial list")
		}
		if diff := cmp.Diff([]httpinfo.InformerStatus{want}, first.Informers); diff != "" {
			t.Errorf("snapshot (-want +got):\n%s", diff)
		}

		// A watch event later moves LastEvent to the time it was applied.
		time.Sleep(time.Minute)
		if _, err := fake.Create(secret("shop", "new")); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		after := reg.Snapshot()
		is := after.Informers[0]
		applied := inf.Status().LastEventTime
		if !applied.After(status.LastEventTime) || is.Counts.Events != st.Events+1 {
			t.Fatalf("the Create was not applied as an event: LastEventTime %v (was %v), events %d (were %d)",
				applied, status.LastEventTime, is.Counts.Events, st.Events)
		}
		if !is.LastEvent.Equal(applied) || is.LastEventAgeSeconds == nil || *is.LastEventAgeSeconds != after.Time.Sub(applied).Seconds() {
			t.Errorf("after an event: LastEvent %v age %v, want %v and %v", is.LastEvent, is.LastEventAgeSeconds, applied, after.Time.Sub(applied).Seconds())
		}
	})
}
