package clientgo_test

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/clientgo"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// TestMain fails the test binary if a test, benchmark or example leaves a
// goroutine running.
func TestMain(m *testing.M) { leakcheck.Main(m) }

var podsResource = schema.GroupResource{Resource: "pods"}

// fakeOf returns a fake pod source holding objs.
func fakeOf(opts sourcetest.FakeOptions[*corev1.Pod], objs ...*corev1.Pod) *sourcetest.Fake[*corev1.Pod] {
	opts.Objects = append(opts.Objects, objs...)
	if opts.Resource.Empty() {
		opts.Resource = podsResource
	}
	return sourcetest.NewFake(opts)
}

// newView returns an informer over src and its client-go view.
func newView(t testing.TB, src *sourcetest.Fake[*corev1.Pod], opts typed.Options[*corev1.Pod], vopts clientgo.Options[*corev1.Pod]) (*typed.Informer[*corev1.Pod], clientcache.SharedIndexInformer) {
	t.Helper()
	if opts.ErrorHandler == nil {
		opts.ErrorHandler = func(error) {}
	}
	inf, err := typed.NewInformer(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	v, err := clientgo.SharedIndexInformer(inf, vopts)
	if err != nil {
		t.Fatal(err)
	}
	return inf, v
}

// runner is a client-go informer or a view.
type runner interface{ RunWithContext(ctx context.Context) }

// runUntilCleanup runs r until the returned stop is called or the test
// ends; stop waits for RunWithContext to return.
func runUntilCleanup(t testing.TB, r runner) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.RunWithContext(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(2 * time.Minute): // a hang guard, virtual in a bubble
				t.Errorf("RunWithContext did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

var seedFlag = flag.Uint64("clientgo.seed", 0, "seed of the randomized tests; 0 picks one")

// seeded returns a random source whose seed is printed if the test fails;
// -clientgo.seed replays one.
func seeded(t *testing.T, stream uint64) *rand.Rand {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d (rerun with -args -clientgo.seed=%d)", seed, seed)
		}
	})
	return rand.New(rand.NewPCG(seed, stream))
}

// call is one client-go handler call, as a recorder notes it.
type call struct {
	Kind    string // add, update, delete
	RV      string
	UID     string
	OldRV   string // update: the old object's
	OldUID  string
	Tomb    bool   // delete: a DeletedFinalStateUnknown
	TombKey string // its Key
	Initial bool
}

// recorder is a client-go ResourceEventHandler that records every call per
// key, the same way for client-go's informer and for the view. Objects of
// the wrong type are noted as violations, never asserted blindly.
type recorder struct {
	mu    sync.Mutex
	have  map[string]string // key -> "rv/uid": the handler's view
	log   map[string][]call
	calls int
	bad   []string
}

func newRecorder() *recorder {
	return &recorder{have: map[string]string{}, log: map[string][]call{}}
}

func (r *recorder) note(key string, c call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	switch c.Kind {
	case "delete":
		delete(r.have, key)
	default:
		r.have[key] = c.RV + "/" + c.UID
	}
	r.log[key] = append(r.log[key], c)
}

func (r *recorder) violate(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bad = append(r.bad, fmt.Sprintf(format, args...))
}

func (r *recorder) handler() clientcache.ResourceEventHandler {
	return clientcache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			p, ok := obj.(*corev1.Pod)
			if !ok || p == nil {
				r.violate("OnAdd(%T)", obj)
				return
			}
			r.note(cache.KeyOf(p).String(), call{Kind: "add", RV: p.ResourceVersion, UID: string(p.UID), Initial: initial})
		},
		UpdateFunc: func(oldObj, obj any) {
			p, ok := obj.(*corev1.Pod)
			old, okOld := oldObj.(*corev1.Pod)
			if !ok || !okOld || p == nil || old == nil {
				r.violate("OnUpdate(%T, %T)", oldObj, obj)
				return
			}
			r.note(cache.KeyOf(p).String(), call{Kind: "update", RV: p.ResourceVersion, UID: string(p.UID),
				OldRV: old.ResourceVersion, OldUID: string(old.UID)})
		},
		DeleteFunc: func(obj any) {
			c := call{Kind: "delete"}
			var key string
			switch o := obj.(type) {
			case *corev1.Pod:
				if o == nil {
					r.violate("OnDelete(nil *Pod)")
					return
				}
				key, c.RV, c.UID = cache.KeyOf(o).String(), o.ResourceVersion, string(o.UID)
			case clientcache.DeletedFinalStateUnknown:
				c.Tomb, c.TombKey, key = true, o.Key, o.Key
				if p, ok := o.Obj.(*corev1.Pod); ok && p != nil {
					c.RV, c.UID = p.ResourceVersion, string(p.UID)
					if k := cache.KeyOf(p).String(); k != o.Key {
						r.violate("tombstone key %q for object %q", o.Key, k)
					}
				}
			default:
				r.violate("OnDelete(%T)", obj)
				return
			}
			r.note(key, c)
		},
	}
}

// take returns and clears the calls so far.
func (r *recorder) take() map[string][]call {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.log
	r.log = map[string][]call{}
	return out
}

func (r *recorder) state() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.have)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

func (r *recorder) violations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bad)
}

// stateOf is key -> "rv/uid" of client-go's untyped objects; an object
// that is not a pod is keyed by its type, so a comparison fails.
func stateOf(objs []any) map[string]string {
	s := make(map[string]string, len(objs))
	for _, o := range objs {
		p, ok := o.(*corev1.Pod)
		if !ok || p == nil {
			s[fmt.Sprintf("not a pod: %T", o)] = ""
			continue
		}
		s[cache.KeyOf(p).String()] = p.ResourceVersion + "/" + string(p.UID)
	}
	return s
}

// podState is stateOf for typed pods.
func podState(pods []*corev1.Pod) map[string]string {
	s := make(map[string]string, len(pods))
	for _, p := range pods {
		s[cache.KeyOf(p).String()] = p.ResourceVersion + "/" + string(p.UID)
	}
	return s
}

// keysOf returns the sorted keys of client-go objects.
func keysOf(objs []any) []string {
	out := []string{}
	for k := range stateOf(objs) {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
