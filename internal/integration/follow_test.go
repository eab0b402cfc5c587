//go:build integration

package integration

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/factory"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/testcluster"
)

// TestFollowDiscoveryCRD: a factory informer that follows discovery, made
// before its CRD exists, while the CRD is installed and deleted 20 times
// on kube-apiserver. Each time the CRD is back it serves again: it is
// synced over the new CRD (its resourceVersion is the new list's; the time
// from Established to that is printed, the target is 2 s), and a widget
// created then reaches its cache (the time from the create's answer to
// that is printed, beside the create's own time: kube-apiserver answers
// the first create of a CRD made again about 2 s after Established). Each
// time the CRD goes, the informer parks: at most 2 reports per transition,
// and no request for widgets while parked, only discovery lookups of the
// group version.
func TestFollowDiscoveryCRD(t *testing.T) {
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	group := uniqueName("follow") + ".example.test"
	gv := schema.GroupVersion{Group: group, Version: "v1"}
	gvr := gv.WithResource("widgets")
	ns := uniqueName("follow")
	createNamespaces(ctx, t, protobufClientset(t, c.AdminConfig()), ns)
	dyn := dynamicClient(t, c.AdminConfig())
	crdJSON, err := widgetCRD(group).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(crdResource).Delete(context.Background(), "widgets."+group, metav1.DeleteOptions{})
	})

	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(gv.WithKind("Widget"), &fWidget{})
	counter := newCounter(regexp.MustCompile(`^/apis/` + regexp.QuoteMeta(group) + `/v1/(namespaces/[^/]+/)?widgets$`))
	var mu sync.Mutex
	var reports []error
	f := newTestFactory(t, counter.wrap(c.AdminConfig()), factory.Options{
		Scheme: scheme, FollowDiscovery: true,
		ErrorHandler: func(err error) {
			mu.Lock()
			reports = append(reports, err)
			mu.Unlock()
		},
	})
	inf, _, err := factory.InformerFor[*fWidget](f, factory.Scope{})
	if err != nil {
		t.Fatalf("InformerFor before the CRD exists: %v", err)
	}
	startFactory(t, f)
	nReports := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(reports)
	}

	const cycles = 20
	var resume, lag, creates []time.Duration
	var parkedFor time.Duration
	parkedRequests, parkedLookups := 0, 0
	for i := range cycles {
		if err := testcluster.InstallCRDs(ctx, c.AdminConfig(), crdJSON); err != nil {
			t.Fatal(err)
		}
		established, atInstall := time.Now(), counter.snapshot()
		// Synced over the new CRD: the resourceVersion of the parked
		// informer is its last list's until the resumed list is in.
		parkedRV := inf.LastSyncResourceVersion()
		resumed := make(chan time.Duration, 1)
		go func() {
			for inf.LastSyncResourceVersion() == parkedRV && ctx.Err() == nil {
				time.Sleep(2 * time.Millisecond)
			}
			resumed <- time.Since(established)
		}()
		name := uniqueName("w")
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, widget(gv, ns, name, int64(i), nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("cycle %d: create widget: %v", i, err)
		}
		created := time.Now()
		it.Eventually(t, "the widget in the cache", func() bool {
			_, err := inf.Lister().Namespace(ns).Get(name)
			return err == nil
		})
		lag = append(lag, time.Since(created))
		creates = append(creates, created.Sub(established))
		select {
		case d := <-resumed:
			resume = append(resume, d)
		case <-time.After(time.Minute):
			t.Fatalf("cycle %d: the widget is cached but the resourceVersion is still the parked %q", i, parkedRV)
		}
		if d := counter.snapshot().sub(atInstall); d.ByCode[404] > 0 {
			t.Logf("cycle %d: synced again after %v: %v", i, resume[i], d)
		}
		if n := inf.Store().Len(); n != 1 {
			t.Fatalf("cycle %d: %d widgets cached, want 1 (the CRD's deletion deleted the others)", i, n)
		}

		before := nReports()
		if err := dyn.Resource(crdResource).Delete(ctx, "widgets."+group, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("cycle %d: delete CRD: %v", i, err)
		}
		it.Eventually(t, "the CRD gone", func() bool {
			_, err := dyn.Resource(crdResource).Get(ctx, "widgets."+group, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		it.Eventually(t, "the informer parked", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(reports) > before && errors.Is(reports[len(reports)-1], factory.ErrNotServed)
		})
		it.Eventually(t, "the cache emptied", func() bool { return inf.Store().Len() == 0 })
		// Parked: a quiet window of two discovery intervals.
		time.Sleep(100 * time.Millisecond) // requests the park itself sent are done
		from, start := counter.snapshot(), time.Now()
		time.Sleep(2 * factory.DefaultDiscoveryInterval)
		parkedFor += time.Since(start)
		d := counter.snapshot().sub(from) // All counts every request, discovery lookups too
		parkedRequests += d.Lists + d.Watches + d.WatchLists
		parkedLookups += d.All - d.Lists - d.Watches - d.WatchLists
		if d.Lists+d.Watches+d.WatchLists > 0 {
			t.Logf("cycle %d: widgets requests while parked: %v", i, d)
		}
		if n := nReports() - before; n > 2 {
			mu.Lock()
			t.Fatalf("cycle %d: %d reports for one removal, want at most 2: %v", i, n, reports[before:])
			mu.Unlock()
		}
	}
	mu.Lock()
	total := len(reports)
	if total > 0 {
		t.Logf("first report: %v", reports[0])
	}
	mu.Unlock()
	med := func(d []time.Duration) (time.Duration, time.Duration) {
		slices.Sort(d)
		return d[len(d)/2].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond)
	}
	rMed, rMax := med(resume)
	slices.Sort(lag)
	lMed, lMax := lag[len(lag)/2].Round(100*time.Microsecond), lag[len(lag)-1].Round(100*time.Microsecond)
	cMed, cMax := med(creates)
	t.Logf("%d removals and returns of the CRD: %d reports (%.2f a transition, target <= 2); widgets requests while parked: %d in %v (%.2f/s, target 0), beside %d discovery lookups (%.2f/s); synced again after Established: median %v, max %v (target 2s); a widget in the cache after its create's answer: median %v, max %v (the create itself answered after median %v, max %v from Established)",
		cycles, total, float64(total)/float64(2*cycles), parkedRequests, parkedFor.Round(time.Millisecond),
		float64(parkedRequests)/parkedFor.Seconds(), parkedLookups, float64(parkedLookups)/parkedFor.Seconds(), rMed, rMax, lMed, lMax, cMed, cMax)
	if parkedRequests != 0 {
		t.Errorf("%d widgets requests while parked, want 0", parkedRequests)
	}
	if total > 2*2*cycles {
		t.Errorf("%d reports for %d transitions, want at most 2 each", total, 2*cycles)
	}
}
