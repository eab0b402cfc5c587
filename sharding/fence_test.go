package sharding_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/internal/shardtest"
	"github.com/typedinformer/informer/sharding"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// frozenLeases holds every write of a replica's own Lease until thaw: the
// replica's membership is stuck in a renewal, as a paused process's is
// (it renews nothing and notices nothing), while the rest of it runs.
type frozenLeases struct {
	coordclient.LeasesGetter
	mu     sync.Mutex
	frozen chan struct{} // nil: not frozen
}

func (f *frozenLeases) Leases(ns string) coordclient.LeaseInterface {
	return frozenLease{LeaseInterface: f.LeasesGetter.Leases(ns), f: f}
}

func (f *frozenLeases) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen = make(chan struct{})
}

func (f *frozenLeases) thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.frozen != nil {
		close(f.frozen)
		f.frozen = nil
	}
}

func (f *frozenLeases) wait(ctx context.Context) error {
	f.mu.Lock()
	ch := f.frozen
	f.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type frozenLease struct {
	coordclient.LeaseInterface
	f *frozenLeases
}

// IsWatchListSemanticsUnSupported forwards the fake's: it cannot stream a
// list.
func (l frozenLease) IsWatchListSemanticsUnSupported() bool { return true }

func (l frozenLease) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	if err := l.f.wait(ctx); err != nil {
		return nil, err
	}
	return l.LeaseInterface.Get(ctx, name, opts)
}

func (l frozenLease) Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if err := l.f.wait(ctx); err != nil {
		return nil, err
	}
	return l.LeaseInterface.Create(ctx, lease, opts)
}

func (l frozenLease) Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if err := l.f.wait(ctx); err != nil {
		return nil, err
	}
	return l.LeaseInterface.Update(ctx, lease, opts)
}

// callRecorder records a replica's handler calls in calls, at the start of
// each; gate is where a paused handler waits.
func callRecorder(calls *shardtest.Calls, replica string, gate func()) handler.Handler[*corev1.Pod] {
	note := func(p *corev1.Pod, moved bool) {
		calls.Add(replica, cache.KeyOf(p), p.ResourceVersion, moved)
		gate()
	}
	return handler.Funcs[*corev1.Pod]{
		AddFunc:    func(p *corev1.Pod, _ bool) { note(p, false) },
		UpdateFunc: func(_, p *corev1.Pod) { note(p, false) },
		DeleteFunc: func(d handler.Deleted[*corev1.Pod]) {
			if d.Object != nil {
				note(d.Object, d.MovedOut)
			}
		},
	}
}

// fakePods creates n pods with random UIDs in src.
func fakePods(t *testing.T, src *sourcetest.Fake[*corev1.Pod], rng *rand.Rand, n int) []*corev1.Pod {
	t.Helper()
	var pods []*corev1.Pod
	for i := range n {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("pod-%d", i),
			UID: types.UID(fmt.Sprintf("%016x-%016x", rng.Uint64(), rng.Uint64()))}}
		if _, err := src.Create(p); err != nil {
			t.Fatal(err)
		}
		pods = append(pods, p)
	}
	return pods
}

// runFenced runs replica id of a sharded informer of src, over client's
// Leases with a 3s lease duration, in the test's synctest bubble; its
// handler calls go to rec (gate is where a paused handler waits), the
// membership's and the informers' errors to onErr. It returns the
// informer and what stops it, once, saying how long the stop took.
func runFenced(t *testing.T, src *sourcetest.Fake[*corev1.Pod], client coordclient.LeasesGetter, rec *shardtest.Calls, id string, gate func(), onErr func(error)) (*sharding.Informer[*corev1.Pod], func() time.Duration) {
	t.Helper()
	m, err := sharding.NewMembership(client, sharding.Options{Namespace: "shards", Group: "pods", Identity: id,
		LeaseDuration: 3 * time.Second, ErrorHandler: onErr})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := sharding.NewInformer(src, m, sharding.InformerOptions[*corev1.Pod]{
		Informer: typed.Options[*corev1.Pod]{ErrorHandler: onErr}, ErrorHandler: onErr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddHandler(callRecorder(rec, id, gate)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	var once sync.Once
	var took time.Duration
	stop := func() time.Duration {
		once.Do(func() {
			begin := time.Now()
			cancel()
			if err := <-done; err != nil {
				t.Errorf("replica %s: Run = %v", id, err)
			}
			took = time.Since(begin)
		})
		return took
	}
	t.Cleanup(func() { stop() })
	return inf, stop
}

// waitFake waits in fake time until cond holds, failing the test after a
// minute with what describe says.
func waitFake(t *testing.T, what string, cond func() bool, describe func() string) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i == 600 {
			t.Fatalf("%s: not after a minute (fake time): %s", what, describe())
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
	}
}

// errorsOf collects the errors handed to its func.
type errorsOf struct {
	mu   sync.Mutex
	errs []error
}

func (e *errorsOf) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errs = append(e.errs, err)
}

// any reports whether one of the errors satisfies f.
func (e *errorsOf) any(f func(error) bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.ContainsFunc(e.errs, f)
}

func (e *errorsOf) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return fmt.Sprint(e.errs)
}

// TestPausedReplicaIsFenced: replica a is paused (its membership stuck in
// a renewal, its handler in a call, with updates queued behind it) longer
// than its Lease; b takes the whole range over and handles the updates.
// When a's handler resumes, before its membership has noticed anything, a
// delivers none of what was queued: it checks, before every delivery, that
// its Lease is unexpired by its own clock. Then it gives its range up,
// renews and rejoins, and the two split the pods again, with no update
// handled by a replica that no longer owned the object.
func TestPausedReplicaIsFenced(t *testing.T) {
	seed := rand.Uint64()
	defer func() {
		if t.Failed() {
			t.Logf("seed %d", seed)
		}
	}()
	synctest.Test(t, func(t *testing.T) {
		var pausedMu sync.Mutex
		var paused chan struct{} // a's handler waits on it while set
		t.Cleanup(func() {
			pausedMu.Lock()
			defer pausedMu.Unlock()
			if paused != nil {
				close(paused)
				paused = nil
			}
		})
		rng := rand.New(rand.NewPCG(seed, 9))
		src := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
		pods := fakePods(t, src, rng, 100)
		cs := fake.NewClientset()
		leases := &frozenLeases{LeasesGetter: cs.CoordinationV1()}
		var rec shardtest.Calls
		gateA := func() {
			pausedMu.Lock()
			ch := paused
			pausedMu.Unlock()
			if ch != nil {
				<-ch
			}
		}
		var errsA errorsOf
		var a, b *sharding.Informer[*corev1.Pod]
		split := func() bool {
			sa, sb := a.Status(), b.Status()
			return sa.Active && sa.Synced && sb.Active && sb.Synced && sa.Objects+sb.Objects == len(pods) && sa.Objects > 0 && sb.Objects > 0
		}
		describe := func() string {
			if b == nil {
				return fmt.Sprintf("a %+v %+v", a.Status().Replica, a.Membership().Assignment())
			}
			return fmt.Sprintf("a %+v %+v, b %+v %+v", a.Status().Replica, a.Membership().Assignment(), b.Status().Replica, b.Membership().Assignment())
		}
		// One after the other: the fake clientset's watch misses what
		// happened before it started.
		a, stopA := runFenced(t, src, leases, &rec, "a", gateA, errsA.add)
		t.Cleanup(leases.thaw) // before a stops
		waitFake(t, "a to hold every pod", func() bool { s := a.Status(); return s.Active && s.Synced && s.Objects == len(pods) }, describe)
		b, stopB := runFenced(t, src, cs.CoordinationV1(), &rec, "b", func() {}, func(err error) { t.Log("b:", err) })
		waitFake(t, "a and b to split the pods", split, describe)

		// Pause a: its membership stalls in its next renewal, its handler
		// in its next call; then every pod changes.
		leases.freeze()
		pausedMu.Lock()
		paused = make(chan struct{})
		pausedMu.Unlock()
		for _, p := range pods {
			q := p.DeepCopy()
			q.Labels = map[string]string{"v": "1"}
			if _, err := src.Update(q); err != nil {
				t.Fatal(err)
			}
		}
		waitFake(t, "b to hold every pod", func() bool { s := b.Status(); return s.Active && s.Synced && s.Objects == len(pods) }, describe)

		// a resumes its handler first: its membership is still stuck.
		pausedMu.Lock()
		close(paused)
		paused = nil
		pausedMu.Unlock()
		synctest.Wait()
		if st := rec.Stale(); len(st) != 0 {
			t.Errorf("%d updates handled by a replica that no longer owned the object, first %+v", len(st), st[0])
		}
		// Then its membership: it gives its range up, rejoins, and the two
		// split the pods again.
		leases.thaw()
		waitFake(t, "a to rejoin and the two to split the pods again", split, describe)
		if st := rec.Stale(); len(st) != 0 {
			t.Errorf("after the rejoin, %d updates handled by a replica that no longer owned the object, first %+v", len(st), st[0])
		}
		if !errsA.any(func(err error) bool {
			return !errors.Is(err, context.Canceled) && containsAll(err.Error(), "lapsed", "giving range")
		}) {
			t.Errorf("a's errors %v: none says its Lease lapsed", &errsA)
		}
		leases.thaw()
		stopA()
		stopB()
	})
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestStuckHandlerDoesNotStallTheGroup: replica a's handler never returns
// from a call. When b joins, a hands half its range over within
// HandoffTimeout although its handler is stuck in a call on an object it
// keeps, and b handles every change of its pods; stopped, a returns within
// the informer's StopTimeout, naming the stuck handler, its Lease is
// gone, and b takes everything over.
func TestStuckHandlerDoesNotStallTheGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := make(chan struct{})
		var stuckOnce sync.Once
		var stuckOn atomic.Bool
		t.Cleanup(func() { stuckOnce.Do(func() { close(stuck) }) })
		src := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
		pods := fakePods(t, src, rand.New(rand.NewPCG(1, 2)), 100)
		cs := fake.NewClientset()
		var rec shardtest.Calls
		var errsA errorsOf
		nothing := func() string { return "" }
		a, stopA := runFenced(t, src, cs.CoordinationV1(), &rec, "a", func() {
			if stuckOn.Load() {
				<-stuck
			}
		}, errsA.add)
		waitFake(t, "a to hold every pod", func() bool { s := a.Status(); return s.Active && s.Synced && s.Objects == len(pods) }, nothing)

		// a's handler sticks in its next call; then b joins.
		stuckOn.Store(true)
		if _, err := src.Update(pods[0]); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		b, stopB := runFenced(t, src, cs.CoordinationV1(), &rec, "b", func() {}, func(error) {})
		joined := time.Now()
		waitFake(t, "b to handle its range", func() bool { s := b.Status(); return s.Active && s.Synced && s.Objects > 0 }, nothing)
		if took := time.Since(joined); took > 2*3*time.Second {
			t.Errorf("b got its range %v after it joined, want within a lease duration of the handoff timeout (3s)", took)
		}
		// Every pod changes: b handles each of its own.
		before := rec.Len()
		for _, p := range pods {
			q := p.DeepCopy()
			q.Labels = map[string]string{"v": "2"}
			if _, err := src.Update(q); err != nil {
				t.Fatal(err)
			}
		}
		mine := b.Status().Objects
		waitFake(t, "b to handle the changes of its pods", func() bool { return rec.Len()-before >= mine }, nothing)

		// a stops within its informer's StopTimeout; b takes everything.
		if took := stopA(); took > typed.DefaultStopTimeout+3*time.Second {
			t.Errorf("a stopped %v after cancel, want within StopTimeout (%v) and a Lease write", took, typed.DefaultStopTimeout)
		}
		waitFake(t, "b to hold every pod", func() bool { s := b.Status(); return s.Active && s.Synced && s.Objects == len(pods) }, nothing)
		if !errsA.any(func(err error) bool { return errors.Is(err, typed.ErrHandlerStuck) }) {
			t.Errorf("a's errors %v: none names the stuck handler", &errsA)
		}
		stuckOnce.Do(func() { close(stuck) })
		stopB()
	})
}
