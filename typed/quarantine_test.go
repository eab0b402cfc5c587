package typed_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/informertest"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/metrics"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

var errPoison = errors.New("poison pod")

// poisonWays are the ways an object can be refused, each failing for pods
// labelled poison=true while bad is set.
func poisonWays(bad *atomic.Bool) map[string]func(*typed.Options[*corev1.Pod]) {
	poisoned := func(p *corev1.Pod) bool { return bad.Load() && p.Labels["poison"] == "true" }
	return map[string]func(*typed.Options[*corev1.Pod]){
		"transform error": func(o *typed.Options[*corev1.Pod]) {
			o.Transform = func(p *corev1.Pod) (*corev1.Pod, error) {
				if poisoned(p) {
					return nil, errPoison
				}
				return p, nil
			}
		},
		"transform panic": func(o *typed.Options[*corev1.Pod]) {
			o.Transform = func(p *corev1.Pod) (*corev1.Pod, error) {
				if poisoned(p) {
					panic(errPoison)
				}
				return p, nil
			}
		},
		"index error": func(o *typed.Options[*corev1.Pod]) {
			o.Indexers = cache.Indexers[*corev1.Pod]{"app": func(p *corev1.Pod) ([]string, error) {
				if poisoned(p) {
					return nil, errPoison
				}
				return []string{p.Labels["app"]}, nil
			}}
		},
	}
}

// quarantined is what the tests compare of Status().Quarantined.
type quarantined struct {
	Key   cache.Key
	RV    string
	Stale bool
}

func quarantineOf(inf *typed.Informer[*corev1.Pod]) []quarantined {
	var out []quarantined
	for _, q := range inf.Status().Quarantined {
		out = append(out, quarantined{Key: q.Key, RV: q.ResourceVersion, Stale: q.Stale})
	}
	return out
}

// withoutKey is want without k.
func withoutKey(want informertest.State, k cache.Key) informertest.State {
	out := informertest.State{}
	for key, v := range want {
		if key != k {
			out[key] = v
		}
	}
	return out
}

// TestQuarantine: one object the cache cannot take among 10,000, in the
// initial list (LIST and streaming list), refused by a transform error, a
// transform panic or an index function error. The other 9,999 sync and
// WaitForSync returns; the bad one is reported once with its key, counted
// and listed in Status().Quarantined; a relist keeps it there without a
// second report; an update that passes brings it in as an Add (I2, I4 for
// the handler all along).
func TestQuarantine(t *testing.T) {
	const n = 10000
	var bad atomic.Bool
	for way, set := range poisonWays(&bad) {
		for _, watchList := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/watchList=%v", way, watchList), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					bad.Store(true)
					pods := it.Pods(n)
					pods[n/2].Labels = map[string]string{"poison": "true"}
					badKey := cache.KeyOf(pods[n/2])
					fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: !watchList}, pods...)
					var errs it.ErrSink
					opts := typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle, NoWatchList: !watchList}
					set(&opts)
					inf := mustInformer(t, fake, opts)
					rec := it.NewRecorder()
					startSynced(t, inf, rec)
					synctest.Wait()

					want := withoutKey(informertest.StateOf(fake.Items()), badKey)
					it.ConvergeTo(t, want, inf.Store(), rec)
					badPod, err := fake.Get(badKey)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff([]quarantined{{Key: badKey, RV: badPod.ResourceVersion}}, quarantineOf(inf)); diff != "" {
						t.Errorf("Status().Quarantined (-want +got):\n%s", diff)
					}
					checkReported(t, &errs, badKey, 1)
					if st := inf.Status(); st.LastError != nil || st.Checks.Refused != 1 {
						t.Errorf("Status: LastError %v, Checks.Refused %d; want nil, 1", st.LastError, st.Checks.Refused)
					}

					// A relist brings it again: still quarantined, not reported again.
					fake.DropEvents(1)
					if _, err := fake.Create(it.Pod("ns-0", "unseen", nil)); err != nil {
						t.Fatal(err)
					}
					fake.Compact()
					fake.CutWatches()
					it.Eventually(t, "relist", func() bool { return inf.Status().Stats.Relists > 0 })
					synctest.Wait()
					if got := quarantineOf(inf); len(got) != 1 || got[0].Key != badKey {
						t.Errorf("after a relist, Quarantined = %v, want %v alone", got, badKey)
					}
					checkReported(t, &errs, badKey, 1)

					// Fixed: the next version passes and arrives as an Add.
					bad.Store(false)
					if _, err := fake.Update(it.Pod(badKey.Namespace, badKey.Name, map[string]string{"poison": "true", "v": "2"})); err != nil {
						t.Fatal(err)
					}
					it.Converge(t, fake, inf.Store(), rec)
					synctest.Wait()
					if got := quarantineOf(inf); got != nil {
						t.Errorf("after the fix, Quarantined = %v, want none", got)
					}
					if diff := cmp.Diff([]string{"add"}, eventKinds(rec, badKey)); diff != "" {
						t.Errorf("handler calls for the fixed object (-want +got):\n%s", diff)
					}
				})
			})
		}
	}
}

// checkReported checks that errs holds n quarantine errors, for k.
func checkReported(t *testing.T, errs *it.ErrSink, k cache.Key, n int) {
	t.Helper()
	var got []cache.Key
	for _, err := range errs.All() {
		var qe *typed.RefusedError
		if errors.As(err, &qe) {
			got = append(got, qe.Key)
			if !qe.Quarantined || !errors.Is(err, typed.ErrQuarantined) || !errors.Is(err, typed.ErrRefused) || !strings.Contains(err.Error(), k.String()) {
				t.Errorf("quarantine error %q: want a quarantined *RefusedError, ErrQuarantined and the key", err)
			}
		}
	}
	want := make([]cache.Key, n)
	for i := range want {
		want[i] = k
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("quarantine reports (-want +got):\n%s", diff)
	}
}

func eventKinds(rec *informertest.Recorder[*corev1.Pod], k cache.Key) []string {
	var out []string
	for _, e := range rec.Events(k) {
		out = append(out, e.Kind)
	}
	return out
}

// TestQuarantineLive: refusals of live events. A refused update of a
// cached object leaves the cached version in place, marked Stale (the
// handler hears nothing); a refused new object is not cached; later
// changes of other objects go on (no relist); a deletion of a quarantined
// object takes it out of quarantine and, if it was cached, is delivered;
// a fix of a stale one is an Update from the cached version.
// TestQuarantineVisibleAtSync: once WaitForSync returns, Status() lists
// what the initial list refused; readers never see the list's objects
// without its quarantine. The window it guards is short, so the test runs
// many informers at once, each checking straight after its sync.
func TestQuarantineVisibleAtSync(t *testing.T) {
	const informers = 50
	var wg sync.WaitGroup
	for i := range informers {
		wg.Go(func() {
			var bad atomic.Bool
			bad.Store(true)
			pods := it.Pods(8)
			pods[3].Labels = map[string]string{"poison": "true"}
			opts := typed.Options[*corev1.Pod]{ErrorHandler: func(error) {}, NoWatchList: i%2 == 0}
			poisonWays(&bad)["transform error"](&opts)
			inf := mustInformer(t, fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: i%2 == 0}, pods...), opts)
			stop := it.Run(t, inf)
			defer stop()
			if err := inf.WaitForSync(t.Context()); err != nil {
				t.Error(err)
				return
			}
			st := inf.Status()
			if got := len(st.Quarantined); got != 1 || inf.Store().Len() != 7 {
				t.Errorf("informer %d, right after WaitForSync: %d objects, %d quarantined; want 7 and 1", i, inf.Store().Len(), got)
			}
		})
	}
	wg.Wait()
}

func TestQuarantineLive(t *testing.T) {
	cases := []struct {
		name       string
		cached     bool // the object is in the cache before it turns bad
		then       string
		wantStale  bool
		wantEvents []string // the handler's calls for the object, in order
	}{
		{name: "update of a cached object, then fixed", cached: true, then: "fix", wantStale: true, wantEvents: []string{"add", "update"}},
		{name: "update of a cached object, then deleted", cached: true, then: "delete", wantStale: true, wantEvents: []string{"add", "delete"}},
		{name: "new object, then fixed", then: "fix", wantEvents: []string{"add"}},
		{name: "new object, then deleted", then: "delete"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var bad atomic.Bool
				bad.Store(true)
				fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(20)...)
				k := cache.Key{Namespace: "ns-0", Name: "target"}
				if tc.cached {
					if _, err := fake.Create(it.Pod(k.Namespace, k.Name, nil)); err != nil {
						t.Fatal(err)
					}
				}
				var errs it.ErrSink
				var m recMetrics
				opts := typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle, Metrics: &m}
				poisonWays(&bad)["transform error"](&opts)
				inf := mustInformer(t, fake, opts)
				rec := it.NewRecorder()
				startSynced(t, inf, rec)
				poisoned := it.Pod(k.Namespace, k.Name, map[string]string{"poison": "true"})
				var err error
				if tc.cached {
					poisoned, err = fake.Update(poisoned)
				} else {
					poisoned, err = fake.Create(poisoned)
				}
				if err != nil {
					t.Fatal(err)
				}
				churnFake(t, fake, "after")
				want := withoutKey(informertest.StateOf(fake.Items()), k)
				if tc.cached {
					want[k] = informertest.StateOf(inf.Store().List())[k]
				}
				it.ConvergeTo(t, want, inf.Store(), rec)
				synctest.Wait()
				if diff := cmp.Diff([]quarantined{{Key: k, RV: poisoned.ResourceVersion, Stale: tc.wantStale}}, quarantineOf(inf)); diff != "" {
					t.Errorf("Quarantined (-want +got):\n%s", diff)
				}
				if st := inf.Status().Stats; st.Relists != 0 {
					t.Errorf("a refused event caused %d relists, want 0", st.Relists)
				}
				var snap metrics.Snapshot
				m.mu.Lock()
				m.state(&snap)
				m.mu.Unlock()
				if snap.Quarantined != 1 || snap.Refused != 1 {
					t.Errorf("metrics: Quarantined %d, Refused %d; want 1, 1", snap.Quarantined, snap.Refused)
				}
				switch tc.then {
				case "fix":
					bad.Store(false)
					_, err = fake.Update(it.Pod(k.Namespace, k.Name, map[string]string{"v": "fixed"}))
				case "delete":
					_, err = fake.Delete(k)
				}
				if err != nil {
					t.Fatal(err)
				}
				it.Converge(t, fake, inf.Store(), rec)
				synctest.Wait()
				if got := quarantineOf(inf); got != nil {
					t.Errorf("Quarantined = %v after %s, want none", got, tc.then)
				}
				if diff := cmp.Diff(tc.wantEvents, eventKinds(rec, k)); diff != "" {
					t.Errorf("handler calls for %v (-want +got):\n%s", k, diff)
				}
				checkReported(t, &errs, k, 1)
			})
		})
	}
}

// A deletion whose transform fails is still a deletion: by key, with the
// cached object as its final state (FinalStateUnknown).
func TestQuarantineDeleteTransformFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var bad atomic.Bool
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(5)...)
		k := cache.Key{Namespace: "ns-0", Name: "target"}
		if _, err := fake.Create(it.Pod(k.Namespace, k.Name, map[string]string{"poison": "true"})); err != nil {
			t.Fatal(err)
		}
		opts := typed.Options[*corev1.Pod]{ErrorHandler: func(error) {}}
		poisonWays(&bad)["transform error"](&opts)
		inf := mustInformer(t, fake, opts)
		var deleted atomic.Pointer[corev1.Pod]
		rec := it.NewRecorder()
		h := handler.Funcs[*corev1.Pod]{AddFunc: rec.OnAdd, UpdateFunc: rec.OnUpdate, DeleteFunc: func(d handler.Deleted[*corev1.Pod]) {
			if d.FinalStateUnknown {
				deleted.Store(d.Object)
			}
			rec.OnDelete(d)
		}}
		if _, err := inf.AddHandler(h); err != nil {
			t.Fatal(err)
		}
		startSynced(t, inf)
		cachedPod, _ := inf.Store().GetByKey(k)
		bad.Store(true)
		if _, err := fake.Delete(k); err != nil {
			t.Fatal(err)
		}
		it.Converge(t, fake, inf.Store(), rec)
		synctest.Wait()
		if got := deleted.Load(); got != cachedPod {
			t.Errorf("Delete's object = %v, want the cached one", got)
		}
		if got := quarantineOf(inf); got != nil {
			t.Errorf("Quarantined = %v, want none", got)
		}
	})
}
