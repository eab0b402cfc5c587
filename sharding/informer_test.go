package sharding_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/sharding"
	"github.com/typedinformer/informer/source/sourcetest"
)

// recorder is a handler that keeps what it was told.
type recorder struct {
	mu       sync.Mutex
	objs     map[cache.Key]bool
	movedOut int
	deleted  int
	adds     int
}

func newRecorder() *recorder { return &recorder{objs: map[cache.Key]bool{}} }

func (r *recorder) OnAdd(p *corev1.Pod, _ bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.objs[cache.KeyOf(p)] = true
	r.adds++
}

func (r *recorder) OnUpdate(_, p *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.objs[cache.KeyOf(p)] = true
}

func (r *recorder) OnDelete(d handler.Deleted[*corev1.Pod]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.objs, d.Key)
	if d.MovedOut {
		r.movedOut++
	} else {
		r.deleted++
	}
}

func (r *recorder) keys() map[cache.Key]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[cache.Key]bool, len(r.objs))
	for k := range r.objs {
		out[k] = true
	}
	return out
}

// eventually waits until cond holds, failing the test after a minute.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// replica is one sharded informer and what its handler was told.
type replica struct {
	inf    *sharding.Informer[*corev1.Pod]
	rec    *recorder
	cancel context.CancelFunc
	done   chan error
}

func startReplica(t *testing.T, cs *fake.Clientset, src *sourcetest.Fake[*corev1.Pod], id string) *replica {
	t.Helper()
	m, err := sharding.NewMembership(cs.CoordinationV1(), sharding.Options{Namespace: "shards", Group: "pods", Identity: id, LeaseDuration: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := sharding.NewInformer(src, m, sharding.InformerOptions[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{inf: inf, rec: newRecorder(), done: make(chan error, 1)}
	if _, err := inf.AddHandler(r.rec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- inf.Run(ctx) }()
	t.Cleanup(r.stop)
	return r
}

func (r *replica) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
	r.cancel = nil
}

// TestReshard runs two replicas over a fake that ignores shard selectors
// (so the client filters): they split the pods, and when one leaves the
// other takes its pods back as adds, after the first told its own moved
// out.
func TestReshard(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 7))
	defer func() {
		if t.Failed() {
			t.Logf("seed %d", seed)
		}
	}()
	src := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
	all := map[cache.Key]bool{}
	for i := range 200 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("pod-%d", i),
			UID: types.UID(fmt.Sprintf("%016x-%016x", rng.Uint64(), rng.Uint64()))}}
		if _, err := src.Create(p); err != nil {
			t.Fatal(err)
		}
		all[cache.KeyOf(p)] = true
	}
	cs := fake.NewClientset()

	a := startReplica(t, cs, src, "a")
	eventually(t, "replica a to hold every pod", func() bool { return len(a.rec.keys()) == len(all) })

	b := startReplica(t, cs, src, "b")
	eventually(t, "a and b to split the pods", func() bool {
		ka, kb := a.rec.keys(), b.rec.keys()
		if len(ka)+len(kb) != len(all) || len(kb) == 0 {
			return false
		}
		for k := range kb {
			if ka[k] {
				return false
			}
		}
		sa, sb := a.inf.Status(), b.inf.Status()
		return sa.Active && sa.Synced && sb.Active && sb.Synced
	})
	sa, sb := a.inf.Status(), b.inf.Status()
	wantRanges, _ := sharding.Split(1, 1)
	if diff := cmp.Diff(wantRanges, []sharding.Range{sa.Range(), sb.Range()}); diff != "" {
		t.Errorf("ranges (-want +got):\n%s", diff)
	}
	if !sb.Informer.Shard.ClientFiltering {
		t.Errorf("b's status says the server filtered; the fake does not")
	}
	a.rec.mu.Lock()
	movedOut, deleted := a.rec.movedOut, a.rec.deleted
	a.rec.mu.Unlock()
	if want := len(b.rec.keys()); movedOut != want || deleted != 0 {
		t.Errorf("a was told of %d moved out and %d deleted, want %d and 0", movedOut, deleted, want)
	}
	if sa.Reshards != 1 {
		t.Errorf("a resharded %d times, want 1", sa.Reshards)
	}

	b.stop()
	eventually(t, "a to hold every pod again", func() bool { return len(a.rec.keys()) == len(all) })
	if diff := cmp.Diff(all, a.rec.keys()); diff != "" {
		t.Errorf("a's pods (-want +got):\n%s", diff)
	}
	if got := a.inf.Status().Range(); got != sharding.Full {
		t.Errorf("a's range is %v, want the whole space", got)
	}
}
