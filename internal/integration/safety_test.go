//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/informertest"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// TestQuarantineRealServer: one pod among 1,000 that an index function
// refuses. The informer syncs the other 999 from kube-apiserver (streaming
// list and LIST), lists the bad one in Status().Quarantined and reports it
// once; a refused update of a cached pod leaves the cached version, marked
// stale; fixing each (an update the index takes) brings the first in as an
// Add and the second as an Update, with no relist.
func TestQuarantineRealServer(t *testing.T) {
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	admin := protobufClientset(t, c.AdminConfig())
	const n = 1000
	for _, noWatchList := range []bool{false, true} {
		t.Run(fmt.Sprintf("noWatchList=%v", noWatchList), func(t *testing.T) {
			ns := uniqueName("poison")
			createNamespaces(ctx, t, admin, ns)
			pods := seedPods([]string{ns}, n)
			pods[n/2].Labels["poison"] = "true"
			bad := cache.KeyOf(pods[n/2])
			took := seed(ctx, t, admin, pods, 20)
			var errs it.ErrSink
			inf := newInformer(t, podSource(t, clientset(t, c.AdminConfig()), ns), typed.Options[*corev1.Pod]{
				ErrorHandler: errs.Handle, NoWatchList: noWatchList,
				Indexers: cache.Indexers[*corev1.Pod]{"app": func(p *corev1.Pod) ([]string, error) {
					if p.Labels["poison"] == "true" {
						return nil, errors.New("no app for a poison pod")
					}
					return []string{p.Labels["seed"]}, nil
				}},
			})
			rec := it.NewRecorder()
			if _, err := inf.AddHandler(rec); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			it.Run(t, inf)
			waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if err := inf.WaitForSync(waitCtx); err != nil {
				t.Fatalf("WaitForSync with one poison pod: %v", err)
			}
			synced := time.Since(start)
			want := serverState(ctx, t, admin, ns)
			badRV := want[bad]
			delete(want, bad)
			it.ConvergeTo(t, want, inf.Store(), rec)
			if q := inf.Status().Quarantined; len(q) != 1 || q[0].Key != bad || q[0].Stale {
				t.Fatalf("Quarantined = %+v, want %v alone, not stale", q, bad)
			}

			// A cached pod turns bad: its cached version stays, stale.
			good := cache.KeyOf(pods[0])
			setLabel(ctx, t, admin, good, "poison", "true")
			it.Eventually(t, "the refused update quarantined", func() bool { return len(inf.Status().Quarantined) == 2 })
			var got []string
			for _, q := range inf.Status().Quarantined {
				got = append(got, fmt.Sprintf("%v stale=%v", q.Key, q.Stale))
			}
			if diff := cmp.Diff([]string{fmt.Sprintf("%v stale=true", good), fmt.Sprintf("%v stale=false", bad)}, sortedStrings(got)); diff != "" {
				t.Errorf("Quarantined (-want +got):\n%s", diff)
			}

			// Both fixed.
			setLabel(ctx, t, admin, bad, "poison", "fixed")
			setLabel(ctx, t, admin, good, "poison", "fixed")
			it.ConvergeTo(t, serverState(ctx, t, admin, ns), inf.Store(), rec)
			it.Eventually(t, "quarantine empty", func() bool { return inf.Status().Quarantined == nil })
			if diff := cmp.Diff([]string{"add"}, kinds(rec.Events(bad))); diff != "" {
				t.Errorf("handler calls for the fixed new pod (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"add", "update"}, kinds(rec.Events(good))); diff != "" {
				t.Errorf("handler calls for the fixed cached pod (-want +got):\n%s", diff)
			}
			st := inf.Status()
			if st.Stats.Relists != 0 || st.Checks.Refused != 2 || st.LastError != nil {
				t.Errorf("Status %s, Refused %d, LastError %v: want no relist, 2 refusals, no error", statsString(st.Stats), st.Checks.Refused, st.LastError)
			}
			t.Logf("figures: quarantine (noWatchList=%v): seeded %d pods in %v; synced %d of them in %v with %s quarantined at RV %s; %s",
				noWatchList, n, took.Round(time.Millisecond), len(want), synced.Round(time.Millisecond), bad, badRV, errSummary(&errs))
		})
	}
}

// setLabel sets a label of the pod under k on the server.
func setLabel(ctx context.Context, t *testing.T, cs kubernetes.Interface, k cache.Key, label, value string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := cs.CoreV1().Pods(k.Namespace).Get(ctx, k.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[label] = value
		_, err = cs.CoreV1().Pods(k.Namespace).Update(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("label %v: %v", k, err)
	}
}

func kinds(evs []informertest.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

func sortedStrings(s []string) []string { return slices.Sorted(slices.Values(s)) }

// dropOnce wraps a source so that its watches drop one MODIFIED event of
// one key, as a buggy watch path (or a lost event) would: the cache then
// diverges from the server until something relists.
type dropOnce[T cache.Object] struct {
	source.Source[T]
	key cache.Key

	mu      sync.Mutex
	armed   bool
	dropped string // resourceVersion of the dropped event
}

func (d *dropOnce[T]) arm() {
	d.mu.Lock()
	d.armed = true
	d.mu.Unlock()
}

func (d *dropOnce[T]) Watch(ctx context.Context, opts metav1.ListOptions) (source.Watcher[T], error) {
	w, err := d.Source.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &dropWatcher[T]{Watcher: w, d: d}, nil
}

type dropWatcher[T cache.Object] struct {
	source.Watcher[T]
	d *dropOnce[T]
}

func (w *dropWatcher[T]) Next(ctx context.Context) (source.Event[T], error) {
	for {
		ev, err := w.Watcher.Next(ctx)
		if err != nil || ev.Type != watch.Modified || cache.KeyOf(ev.Object) != w.d.key {
			return ev, err
		}
		w.d.mu.Lock()
		drop := w.d.armed
		if drop {
			w.d.armed, w.d.dropped = false, ev.Object.GetResourceVersion()
		}
		w.d.mu.Unlock()
		if !drop {
			return ev, nil
		}
	}
}

// TestConsistencyCheckRealServer runs Options.ConsistencyCheck against
// kube-apiserver while pods change: with nothing wrong, the checks find no
// divergence (no false alarm under churn). Then the informer's watch drops
// one update of one pod (a source wrapper), so the cache holds an older
// version than the server: the first check at a resourceVersion past the
// lost update reports that key as stale, and the relist it starts repairs
// the cache (I1).
func TestConsistencyCheckRealServer(t *testing.T) {
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	admin := protobufClientset(t, c.AdminConfig())
	ns := uniqueName("consistency")
	createNamespaces(ctx, t, admin, ns)
	seed(ctx, t, admin, seedPods([]string{ns}, 300), 20)
	victim := cache.Key{Namespace: ns, Name: "seed-0007"}
	src := &dropOnce[*corev1.Pod]{Source: podSource(t, clientset(t, c.AdminConfig()), ns), key: victim}
	var errs it.ErrSink
	const period = 2 * time.Second
	inf := newInformer(t, source.Source[*corev1.Pod](src), typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle, ConsistencyCheck: period, PageSize: 50})
	it.Run(t, inf)
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}

	// Churn for a few checks: no divergence.
	for i := range 40 {
		setLabel(ctx, t, admin, cache.Key{Namespace: ns, Name: fmt.Sprintf("seed-%04d", 100+i%50)}, "n", fmt.Sprint(i))
		time.Sleep(100 * time.Millisecond)
	}
	it.Eventually(t, "three checks", func() bool { return inf.Status().Checks.ConsistencyChecks >= 3 })
	clean := inf.Status().Checks
	if clean.Divergences != 0 {
		t.Fatalf("false alarm: %d divergences under churn: %v", clean.Divergences, clean.LastDivergence)
	}

	// One update lost.
	src.arm()
	setLabel(ctx, t, admin, victim, "lost", "yes")
	// The check compares at the cache's resourceVersion: a later event
	// (or the next bookmark, within a minute) takes it past the lost one.
	setLabel(ctx, t, admin, cache.Key{Namespace: ns, Name: "seed-0200"}, "after", "yes")
	it.Eventually(t, "a divergence found", func() bool { return inf.Status().Checks.Divergences > 0 })
	div := inf.Status().Checks.LastDivergence
	if diff := cmp.Diff([]cache.Key{victim}, div.Stale); diff != "" || len(div.Missing)+len(div.Extra) != 0 {
		t.Errorf("divergence %v: stale keys (-want +got):\n%s", div, diff)
	}
	it.ConvergeTo(t, serverState(ctx, t, admin, ns), inf.Store())
	st := inf.Status()
	if st.Stats.Relists < 1 {
		t.Errorf("Relists = %d, want the repair", st.Stats.Relists)
	}
	if n := errs.Count(it.Is(typed.ErrInconsistent)); n < 1 {
		t.Errorf("ErrorHandler got %d divergence reports, want at least 1", n)
	}
	t.Logf("figures: consistency check every %v over 300 pods: %d clean checks under churn; dropped the update of %v at RV %s; found: %v; after repair: checks %d divergences %d, stats %s; %s",
		period, clean.ConsistencyChecks, victim, src.dropped, div, st.Checks.ConsistencyChecks, st.Checks.Divergences, statsString(st.Stats), errSummary(&errs))
}
