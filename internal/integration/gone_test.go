//go:build integration

package integration

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/informertest"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/internal/testcluster"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// pausable wraps a Source so a test can hold the informer's watch back:
// while paused, Watch blocks until resumed (or its context ends), and Cut
// stops the watches that are open.
type pausable[T cache.Object] struct {
	source.Source[T]

	mu      sync.Mutex
	resume  chan struct{} // nil when not paused; closed on Resume
	open    []source.Watcher[T]
	blocked []metav1.ListOptions // options of the Watch calls waiting now
	changed chan struct{}        // closed and replaced when blocked changes
}

func newPausable[T cache.Object](src source.Source[T]) *pausable[T] {
	return &pausable[T]{Source: src, changed: make(chan struct{})}
}

func (p *pausable[T]) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *pausable[T]) Watch(ctx context.Context, opts metav1.ListOptions) (source.Watcher[T], error) {
	p.mu.Lock()
	if resume := p.resume; resume != nil {
		p.blocked = append(p.blocked, opts)
		p.notifyLocked()
		p.mu.Unlock()
		select {
		case <-resume:
		case <-ctx.Done():
		}
		p.mu.Lock()
		p.blocked = p.blocked[1:]
		p.notifyLocked()
		if err := ctx.Err(); err != nil {
			p.mu.Unlock()
			return nil, err
		}
	}
	p.mu.Unlock()
	w, err := p.Source.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.open = append(p.open, w)
	p.mu.Unlock()
	return w, nil
}

// PauseAndCut makes new watches block and stops the open ones.
func (p *pausable[T]) PauseAndCut() {
	p.mu.Lock()
	p.resume = make(chan struct{})
	open := p.open
	p.open = nil
	p.mu.Unlock()
	for _, w := range open {
		w.Stop()
	}
}

// Resume lets the blocked and later watches through.
func (p *pausable[T]) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume != nil {
		close(p.resume)
		p.resume = nil
	}
}

// waitBlocked waits until a Watch call is blocked and returns its options.
func (p *pausable[T]) waitBlocked(t *testing.T, bound time.Duration) metav1.ListOptions {
	t.Helper()
	timeout := time.After(bound)
	for {
		p.mu.Lock()
		blocked, changed := p.blocked, p.changed
		var opts metav1.ListOptions
		if len(blocked) > 0 {
			opts = blocked[0]
		}
		p.mu.Unlock()
		if len(blocked) > 0 {
			return opts
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("no Watch call blocked within %v", bound)
		}
	}
}

// TestGoneAfterCompaction: the informer's watch is cut and held back while
// pods are deleted, updated and created, and etcd is compacted (the API
// server runs without watch cache, so watches are served from etcd). The
// re-watch from the old resourceVersion gets 410 Gone; the informer relists
// exactly once; every pod deleted in the gap gives each handler exactly one
// Delete marked final-state-unknown carrying its last known state; a pod
// re-created under the same name (new UID) gives that Delete and an Add
// (docs/reliability.md fault 14); pods created and deleted in the gap are never
// seen; I1 and I2 hold. Both with the streaming initial list and with
// LIST (Options.NoWatchList), on one cluster.
func TestGoneAfterCompaction(t *testing.T) {
	leakcheck.Check(t)
	c := testcluster.Start(t, testcluster.Options{APIServerFlags: []string{"--watch-cache=false"}})
	t.Run("streaming list", func(t *testing.T) { goneAfterCompaction(t, c, "gone-s", false, 0) })
	t.Run("LIST", func(t *testing.T) { goneAfterCompaction(t, c, "gone-l", true, 0) })
	// Pages of 50: etcd pages the first list (at "0"), so the relist at
	// the known version pages too. With a limit that version is an exact
	// read, compacted away: 410, then a quorum list, in pages.
	t.Run("LIST in pages", func(t *testing.T) { goneAfterCompaction(t, c, "gone-p", true, 50) })
}

func goneAfterCompaction(t *testing.T, c *testcluster.Cluster, prefix string, noWatchList bool, pageSize int64) {
	const (
		seeded         = 200
		deleted        = 40 // seeded pods deleted in the gap
		updatedDeleted = 10 // of those, updated first
		updated        = 20 // seeded pods updated in the gap and kept
		created        = 20 // new pods created in the gap
		createdDeleted = 8  // of those, deleted again in the gap
		recreated      = 5  // seeded pods deleted and created again (new UID) in the gap
	)
	ctx := t.Context()
	admin := protobufClientset(t, c.AdminConfig())
	nss := []string{prefix + "-a", prefix + "-b"}
	createNamespaces(ctx, t, admin, nss...)
	pods := seedPods(nss, seeded)
	seed(ctx, t, admin, pods, 16)

	counter := newCounter(podsCollection)
	cs := clientset(t, counter.wrap(c.AdminConfig()))
	src := newPausable(podSource(t, cs, metav1.NamespaceAll))
	var errs it.ErrSink
	inf := newInformer[*corev1.Pod](t, src, typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle, NoWatchList: noWatchList, PageSize: pageSize})
	a, b := it.NewRecorder(), it.NewRecorder()
	if _, err := inf.AddHandler(a); err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)
	monitorRV(t, inf)
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := inf.WaitForSync(waitCtx); err != nil {
		t.Fatalf("WaitForSync: %v", err)
	}
	if _, err := inf.AddHandler(b); err != nil {
		t.Fatal(err)
	}
	want0 := serverState(ctx, t, admin, metav1.NamespaceAll)
	it.ConvergeTo(t, want0, inf.Store(), a, b)
	statsBefore := inf.Status().Stats
	reqsBefore := counter.snapshot()
	listsBefore := len(counter.listRequests())

	// (a) Cut the watch and hold the re-watch back.
	src.PauseAndCut()
	blocked := src.waitBlocked(t, time.Minute)
	lastKnown := informertest.StateOf(inf.Store().List())
	if diff := cmp.Diff(want0, lastKnown); diff != "" {
		t.Fatalf("cache changed before the gap (-server +cache):\n%s", diff)
	}
	t.Logf("watch held back; it will resume from resourceVersion %s", blocked.ResourceVersion)

	// (b) Churn in the gap, through the admin client.
	var goneKeys, updatedKeys []cache.Key
	for i := range deleted {
		p := pods[i]
		if i < updatedDeleted {
			if _, err := admin.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType,
				[]byte(`{"metadata":{"labels":{"gap":"updated"}}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := admin.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		goneKeys = append(goneKeys, cache.KeyOf(p))
	}
	for i := deleted; i < deleted+updated; i++ {
		p := pods[i]
		if _, err := admin.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"gap":"updated"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		updatedKeys = append(updatedKeys, cache.KeyOf(p))
	}
	// Deleted and re-created under the same name: a new UID. The relist
	// shows an object with a different UID under a known key, which the
	// handlers must get as a Delete (final state unknown) and an Add.
	var recreatedKeys []cache.Key
	for i := deleted + updated; i < deleted+updated+recreated; i++ {
		p := pods[i]
		if err := admin.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CoreV1().Pods(p.Namespace).Create(ctx, newPod(p.Namespace, p.Name, map[string]string{"gap": "recreated"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		recreatedKeys = append(recreatedKeys, cache.KeyOf(p))
	}
	var ephemeral []cache.Key
	for i := range created {
		p := newPod(nss[i%2], fmt.Sprintf("gap-%02d", i), nil)
		if _, err := admin.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if i < createdDeleted {
			if err := admin.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			ephemeral = append(ephemeral, cache.KeyOf(p))
		}
	}

	// (c) Compact etcd past every resourceVersion handed out so far.
	rev := c.CompactEtcd(t)
	t.Logf("compacted etcd at revision %d", rev)
	// A watch cut on purpose is no error (source.Watcher: Next returns
	// ErrWatchClosed after Stop).
	if len(errs.All()) > 0 {
		t.Errorf("errors reported for a cut watch: %s", errSummary(&errs))
	}

	// (d) Resume: the re-watch from the old resourceVersion gets 410.
	resumed := time.Now()
	src.Resume()
	want := serverState(ctx, t, admin, metav1.NamespaceAll)
	it.ConvergeTo(t, want, inf.Store(), a, b)
	convergeTook := time.Since(resumed)

	for name, r := range map[string]*informertest.Recorder[*corev1.Pod]{"a": a, "b": b} {
		for _, k := range goneKeys {
			var deletes []informertest.Event
			for _, e := range r.Events(k) {
				if e.Kind == "delete" {
					deletes = append(deletes, e)
				}
			}
			wantLast := lastKnown[k]
			if len(deletes) != 1 || !deletes[0].FSU || deletes[0].RV+"/"+string(deletes[0].UID) != wantLast {
				t.Errorf("handler %s, %v deleted in the gap: deletes %+v, want exactly one, final-state-unknown, with the last known state %s",
					name, k, deletes, wantLast)
			}
		}
		for _, k := range updatedKeys {
			evs := r.Events(k)
			if last := evs[len(evs)-1]; last.Kind != "update" || last.RV+"/"+string(last.UID) != want[k] {
				t.Errorf("handler %s, %v updated in the gap: last event %+v, want an update to %s", name, k, last, want[k])
			}
		}
		for _, k := range recreatedKeys {
			evs := r.Events(k)
			n := len(evs)
			var deletes int
			for _, e := range evs {
				if e.Kind == "delete" {
					deletes++
				}
			}
			if n < 2 || deletes != 1 ||
				evs[n-2].Kind != "delete" || !evs[n-2].FSU || evs[n-2].RV+"/"+string(evs[n-2].UID) != lastKnown[k] ||
				evs[n-1].Kind != "add" || evs[n-1].RV+"/"+string(evs[n-1].UID) != want[k] {
				t.Errorf("handler %s, %v re-created with a new UID in the gap: events %+v; want it to end with one Delete "+
					"(final state unknown, %s) and an Add (%s)", name, k, evs, lastKnown[k], want[k])
			}
		}
		for _, k := range ephemeral {
			if evs := r.Events(k); len(evs) != 0 {
				t.Errorf("handler %s, %v created and deleted in the gap: events %+v, want none", name, k, evs)
			}
		}
	}

	st := inf.Status().Stats
	reqs := counter.snapshot().sub(reqsBefore)
	relists := st.Relists - statsBefore.Relists
	watchRVs := counter.plainWatchRVs()
	t.Logf("figures: 410 Gone: %d deleted, %d updated, %d re-created, %d created (%d of them deleted) in the gap; cache and handlers converged %v after resuming; "+
		"stats before the gap %s, after %s (relists: %d); pods requests after the gap: %s; plain watches from RVs %v; "+
		"handler a %v, b %v; %s",
		len(goneKeys), len(updatedKeys), len(recreatedKeys), created, len(ephemeral), convergeTook.Round(time.Millisecond),
		statsString(statsBefore), statsString(st), relists, reqs, watchRVs, it.Kinds(a), it.Kinds(b), errSummary(&errs))
	if pageSize == 0 {
		// Exactly one relist: one LIST or one streaming list.
		if relists != 1 || reqs.Lists+reqs.WatchLists != 1 {
			t.Errorf("I8: %d relists (stats), %d LIST + %d streaming-list requests after the 410; want exactly one",
				relists, reqs.Lists, reqs.WatchLists)
		}
	} else {
		// One relist, in pages: the exact read at the known version
		// (410), then a quorum list followed page by page.
		after := counter.listRequests()[listsBefore:]
		limit := strconv.FormatInt(pageSize, 10)
		pages := (len(want) + int(pageSize) - 1) / int(pageSize)
		ok := relists == 1 && reqs.WatchLists == 0 && len(after) == 1+pages &&
			after[0].RV == blocked.ResourceVersion && after[0].Limit == limit && after[0].Code == http.StatusGone &&
			after[1].RV == "" && !after[1].Continue
		for _, l := range after[min(1, len(after)):] {
			ok = ok && l.Limit == limit && l.Code == http.StatusOK
		}
		t.Logf("LIST requests after the gap: %v", after)
		if !ok {
			t.Errorf("I8: %d relists (stats), LIST requests after the 410 %v; want one relist: a LIST at %s with limit %s that gets 410, "+
				"then a quorum list in %d pages of %s", relists, after, blocked.ResourceVersion, limit, pages, limit)
		}
	}
	if !slices.Contains(watchRVs, blocked.ResourceVersion) {
		t.Errorf("no watch request from the held-back resourceVersion %s: watches from %v", blocked.ResourceVersion, watchRVs)
	}
}
