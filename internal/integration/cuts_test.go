//go:build integration

package integration

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/typed"
)

// TestFault01RandomWatchCutsRealServer is fault 1 against kube-apiserver:
// while 2,000 creates, updates and deletes run over 1,000 seeded pods, a
// TCP proxy in front of the server cuts every connection of the informer
// 100 times, at seeded random moments 1 to 1.5 s apart (a watch that
// lasts a second is not a short one, so no cut is backed off). Afterwards
// the cache equals the server (I1), the handler's replayed events equal it
// (I2), with no time travel (I3) and no phantom or duplicate Add (I4), and
// no cut made the informer list again (I8): each re-watch resumed from the
// last resourceVersion. Goroutines are checked (I5).
func TestFault01RandomWatchCutsRealServer(t *testing.T) {
	const (
		seeded = 1000
		ops    = 2000
		cuts   = 100
	)
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	admin := protobufClientset(t, c.AdminConfig())
	nss := []string{uniqueName("cuts-a"), uniqueName("cuts-b")}
	createNamespaces(ctx, t, admin, nss...)
	pods := seedPods(nss, seeded)
	seed(ctx, t, admin, pods, 16)

	proxy := newTCPProxy(t, strings.TrimPrefix(c.Host(), "https://"))
	counter := newCounter(podsCollection)
	cs := clientset(t, counter.wrap(proxy.config(t, c.AdminConfig(), true)))
	var errs it.ErrSink
	inf := newInformer(t, podSource(t, cs, metav1.NamespaceAll), typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle})
	rec := it.NewRecorder()
	if _, err := inf.AddHandler(rec); err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := inf.WaitForSync(waitCtx); err != nil {
		t.Fatalf("WaitForSync: %v", err)
	}
	atSync := counter.snapshot()

	// The churn goes straight to the server, at a pace that lasts about
	// as long as the cuts.
	churn := startChurn(t, admin, "", nss, pods, 2, ops, false)
	rng := rand.New(rand.NewPCG(testSeed(t), 1))
	done, conns := 0, 0
	for done < cuts {
		select {
		case <-waitCtx.Done():
			t.Fatalf("only %d of %d cuts before the deadline", done, cuts)
		case <-time.After(time.Second + time.Duration(rng.IntN(500))*time.Millisecond):
		}
		if n := proxy.cut(); n > 0 {
			done++
			conns += n
		}
	}
	churn.wait()
	if t.Failed() {
		t.FailNow()
	}
	want := serverState(ctx, t, admin, metav1.NamespaceAll)
	it.ConvergeTo(t, want, inf.Store(), rec)

	st := inf.Status().Stats
	reqs := counter.snapshot().sub(atSync)
	t.Logf("figures: %d cuts (%d connections); churn %s; after sync: stats %s, pods %s; %s",
		done, conns, churn, statsString(st), reqs, errSummary(&errs))
	if st.Relists != 0 || reqs.Lists+reqs.WatchLists != 0 {
		t.Errorf("I8: %s, %s after sync: want no relist after %d cuts", statsString(st), reqs, done)
	}
	if reqs.Watches < cuts {
		t.Errorf("%d watches after sync, want at least one per cut (%d)", reqs.Watches, cuts)
	}
}
