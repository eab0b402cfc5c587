package source_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/cache"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// wireModes are the ways FromConfig reads a server: JSON on the reading
// goroutine, JSON decoded by workers, protobuf; each with a LIST or a
// streaming list first.
var wireModes = func() []wireMode {
	var out []wireMode
	for _, o := range []struct {
		name string
		opts source.RESTOptions
	}{
		{"json", source.RESTOptions{}},
		{"json/workers=2", source.RESTOptions{DecodeWorkers: 2}},
		{"protobuf", source.RESTOptions{Protobuf: true}},
	} {
		for _, stream := range []bool{false, true} {
			out = append(out, wireMode{name: fmt.Sprintf("%s/streamingList=%v", o.name, stream), opts: o.opts, stream: stream})
		}
		// A server that answers a LIST whole, as a watch cache does.
		out = append(out, wireMode{name: o.name + "/wholeList", opts: o.opts, whole: true})
	}
	return out
}()

type wireMode struct {
	name   string
	opts   source.RESTOptions
	stream bool
	whole  bool // the server answers every LIST whole (podserver.Server.Whole)
}

// badSet is the names of the pods a podserver sends undecodable.
type badSet struct {
	mu    sync.Mutex
	names map[string]bool
}

func (b *badSet) set(name string, bad bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.names == nil {
		b.names = map[string]bool{}
	}
	b.names[name] = bad
}

func (b *badSet) has(p *corev1.Pod) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.names[p.Name]
}

// undecodableInformer runs an informer over FromConfig over a podserver of
// fake that sends the pods in bad undecodable, and waits for its sync.
func undecodableInformer(t *testing.T, m wireMode, fake *sourcetest.Fake[*corev1.Pod], bad *badSet) (*podserver.Server, *typed.Informer[*corev1.Pod], *it.ErrSink) {
	t.Helper()
	srv := podserver.New(t, fake)
	srv.Undecodable = bad.has
	srv.Whole = m.whole
	opts := m.opts
	opts.Mapper = podserver.Mapper()
	src, err := source.FromConfig[*corev1.Pod](srv.Config(), opts)
	if err != nil {
		t.Fatal(err)
	}
	errs := &it.ErrSink{}
	inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle, NoWatchList: !m.stream})
	if err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)
	// A hang guard, not a performance assertion: a list that never syncs
	// fails here with the informer's last error.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatalf("WaitForSync: %v; status error %v; errors %v", err, inf.Status().LastError, truncated(errs.All()))
	}
	// After a LIST, the watch that follows it.
	it.Eventually(t, "the watch after the list", func() bool { return srv.Watches.Load() > 0 })
	return srv, inf, errs
}

func truncated(errs []error) []error {
	if len(errs) > 3 {
		return errs[:3]
	}
	return errs
}

// requests is what a podserver served of pods: LIST requests (one per
// page) and WATCH requests (streaming lists included).
type requests struct{ Lists, Watches int64 }

func requestsOf(s *podserver.Server) requests {
	return requests{Lists: s.Lists.Load(), Watches: s.Watches.Load()}
}

func quarantinedOf(inf *typed.Informer[*corev1.Pod]) map[cache.Key]string {
	out := map[cache.Key]string{}
	for _, q := range inf.Status().Quarantined {
		out[q.Key] = q.ResourceVersion
	}
	return out
}

// refusedReports returns the quarantine reports of k.
func refusedReports(errs *it.ErrSink, k cache.Key) []*typed.RefusedError {
	var out []*typed.RefusedError
	for _, err := range errs.All() {
		var re *typed.RefusedError
		if errors.As(err, &re) && re.Key == k && re.Quarantined {
			out = append(out, re)
		}
	}
	return out
}

// TestUndecodableListItemQuarantined: one pod of 1,000 in the initial list
// does not decode into a corev1.Pod (a string where the spec has an array),
// over JSON, JSON with decode workers and protobuf, in a LIST and in a
// streaming list. The informer syncs with the 999 others, quarantines the
// bad one under its key and reports it once; it does not list again (the
// server counts the requests while a later change arrives by the watch);
// a later version that decodes leaves quarantine and enters the cache.
func TestUndecodableListItemQuarantined(t *testing.T) {
	const n = 1000
	for _, m := range wireModes {
		t.Run(m.name, func(t *testing.T) {
			pods := it.Pods(n)
			badPod := pods[n/2]
			badKey := cache.KeyOf(badPod)
			fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: pods})
			bad := &badSet{}
			bad.set(badPod.Name, true)
			srv, inf, errs := undecodableInformer(t, m, fake, bad)

			if got := inf.Store().Len(); got != n-1 {
				t.Errorf("%d pods cached, want %d", got, n-1)
			}
			if _, ok := inf.Store().GetByKey(badKey); ok {
				t.Errorf("the undecodable pod %v is cached", badKey)
			}
			listed, err := fake.Get(badKey)
			if err != nil {
				t.Fatal(err)
			}
			// The writer publishes its quarantine at the end of the batch
			// that synced the cache, which may be just after WaitForSync.
			it.Eventually(t, "the quarantine listed", func() bool { return len(inf.Status().Quarantined) > 0 })
			if diff := cmp.Diff(map[cache.Key]string{badKey: listed.ResourceVersion}, quarantinedOf(inf)); diff != "" {
				t.Errorf("Status().Quarantined (-want +got):\n%s", diff)
			}
			it.Eventually(t, "the quarantine reported", func() bool { return len(refusedReports(errs, badKey)) > 0 })
			what := "list item" // a LIST page's item; in a streaming list, an event
			if m.stream {
				what = "ADDED watch event"
			}
			checkUndecodableReport(t, refusedReports(errs, badKey), badKey, listed.ResourceVersion, what)
			if st := inf.Status(); st.LastError != nil {
				t.Errorf("Status().LastError = %v, want nil", st.LastError)
			}

			// A change after the sync arrives by the watch: no relist.
			before := requestsOf(srv)
			late, err := fake.Create(it.Pod("ns-0", "late", nil))
			if err != nil {
				t.Fatal(err)
			}
			it.Eventually(t, "the late pod cached", func() bool {
				p, ok := inf.Store().GetByKey(cache.KeyOf(late))
				return ok && p.ResourceVersion == late.ResourceVersion
			})
			if got := requestsOf(srv); got != before {
				t.Errorf("requests %+v after the sync, %+v before the late pod: want no list and no new watch", got, before)
			}

			// Fixed: the next version decodes and leaves quarantine.
			bad.set(badPod.Name, false)
			fixed := listed.DeepCopy()
			fixed.Labels = map[string]string{"fixed": "true"}
			if fixed, err = fake.Update(fixed); err != nil {
				t.Fatal(err)
			}
			it.Eventually(t, "the fixed pod cached", func() bool {
				p, ok := inf.Store().GetByKey(badKey)
				return ok && p.ResourceVersion == fixed.ResourceVersion
			})
			if q := quarantinedOf(inf); len(q) != 0 {
				t.Errorf("Status().Quarantined = %v after the fix, want none", q)
			}
			if got := requestsOf(srv); got != before {
				t.Errorf("requests %+v after the fix, %+v before: want no list and no new watch", got, before)
			}
			if r := refusedReports(errs, badKey); len(r) != 1 {
				t.Errorf("%d quarantine reports of %v, want 1: %v", len(r), badKey, r)
			}
		})
	}
}

// TestUndecodableWatchEventQuarantined: on a synced informer, a MODIFIED
// event whose object does not decode, then good events. The good ones are
// applied on the same watch (the server counts no new WATCH and no LIST),
// the bad object is quarantined (the cache keeps the version it had, as
// stale) and reported once under its key; a DELETED event whose object does
// not decode still deletes by key; a later version that decodes releases
// the quarantined one.
func TestUndecodableWatchEventQuarantined(t *testing.T) {
	for _, m := range wireModes {
		t.Run(m.name, func(t *testing.T) {
			fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: it.Pods(10)})
			bad := &badSet{}
			srv, inf, errs := undecodableInformer(t, m, fake, bad)
			before := requestsOf(srv)
			get := func(name string) *corev1.Pod {
				t.Helper()
				for _, p := range fake.Items() {
					if p.Name == name {
						return p
					}
				}
				t.Fatalf("no pod %s", name)
				return nil
			}
			update := func(p *corev1.Pod, label string) *corev1.Pod {
				t.Helper()
				p = p.DeepCopy()
				p.Labels = map[string]string{"v": label}
				p, err := fake.Update(p)
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			cached := func(p *corev1.Pod) func() bool {
				return func() bool {
					got, ok := inf.Store().GetByKey(cache.KeyOf(p))
					return ok && got.ResourceVersion == p.ResourceVersion
				}
			}

			p3, p5 := get("p-3"), get("p-5")
			bad.set("p-3", true)
			bad.set("p-5", true)
			badUpdate := update(p3, "bad")
			goodUpdate := update(get("p-4"), "good")
			created, err := fake.Create(it.Pod("ns-0", "new", nil))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fake.Delete(cache.KeyOf(p5)); err != nil {
				t.Fatal(err)
			}
			it.Eventually(t, "the good update cached", cached(goodUpdate))
			it.Eventually(t, "the new pod cached", cached(created))
			it.Eventually(t, "the deletion by key applied", func() bool {
				_, ok := inf.Store().GetByKey(cache.KeyOf(p5))
				return !ok
			})
			if got := requestsOf(srv); got != before {
				t.Errorf("requests %+v after the bad event, %+v before: want the same watch, no list", got, before)
			}
			k3 := cache.KeyOf(p3)
			if diff := cmp.Diff(map[cache.Key]string{k3: badUpdate.ResourceVersion}, quarantinedOf(inf)); diff != "" {
				t.Errorf("Status().Quarantined (-want +got):\n%s", diff)
			}
			if q := inf.Status().Quarantined; len(q) == 1 && !q[0].Stale {
				t.Errorf("quarantined %v is not stale; the cache holds its listed version", q[0].Key)
			}
			if got, ok := inf.Store().GetByKey(k3); !ok || got.ResourceVersion != p3.ResourceVersion {
				t.Errorf("cache holds %v at %v, want the version before the bad one, %s", k3, got, p3.ResourceVersion)
			}
			it.Eventually(t, "the quarantine reported", func() bool { return len(refusedReports(errs, k3)) > 0 })
			checkUndecodableReport(t, refusedReports(errs, k3), k3, badUpdate.ResourceVersion, "MODIFIED watch event")

			bad.set("p-3", false)
			fixed := update(badUpdate, "fixed")
			it.Eventually(t, "the fixed pod cached", cached(fixed))
			if q := quarantinedOf(inf); len(q) != 0 {
				t.Errorf("Status().Quarantined = %v after the fix, want none", q)
			}
			if got := requestsOf(srv); got != before {
				t.Errorf("requests %+v after the fix, %+v before: want the same watch, no list", got, before)
			}
			if st := inf.Status(); st.LastError != nil || st.Stats.WatchRestarts != 0 {
				t.Errorf("status: last error %v, %d watch restarts; want none", st.LastError, st.Stats.WatchRestarts)
			}
		})
	}
}

// checkUndecodableReport checks the one report of an undecodable object:
// a *typed.RefusedError naming k at rv whose cause says what the object
// was (what) and never calls a list a watch event.
func checkUndecodableReport(t *testing.T, reports []*typed.RefusedError, k cache.Key, rv, what string) {
	t.Helper()
	if len(reports) != 1 {
		t.Fatalf("%d quarantine reports of %v, want 1: %v", len(reports), k, reports)
	}
	re := reports[0]
	if re.ResourceVersion != rv {
		t.Errorf("reported at resourceVersion %q, want %q", re.ResourceVersion, rv)
	}
	var u *source.UndecodableError
	if !errors.As(re, &u) || !errors.Is(re, source.ErrUndecodable) {
		t.Fatalf("report %v (%T) does not wrap an *source.UndecodableError", re, re.Err)
	}
	if u.Key() != k || u.ResourceVersion != rv {
		t.Errorf("the cause names %v at %q, want %v at %q", u.Key(), u.ResourceVersion, k, rv)
	}
	msg := re.Error()
	if !strings.Contains(msg, what) || !strings.Contains(msg, k.String()) {
		t.Errorf("report %q does not say %q and %q", msg, what, k)
	}
	if what == "list item" && strings.Contains(msg, "watch event") {
		t.Errorf("report %q calls a list item a watch event", msg)
	}
}
