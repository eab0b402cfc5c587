package reconcile_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/reconcile"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

var podsResource = schema.GroupResource{Resource: "pods"}

// env is an informer over a fake and a controller over the informer.
type env struct {
	fake *sourcetest.Fake[*corev1.Pod]
	inf  *typed.Informer[*corev1.Pod]
	ctrl *reconcile.Controller[*corev1.Pod]
	errs *it.ErrSink

	cancel  context.CancelFunc
	runErr  chan error
	infStop func()
}

// newEnv makes the fake with pods, the informer and the controller; an
// unset ErrorHandler records errors in env.errs.
func newEnv(t *testing.T, pods []*corev1.Pod, iopts typed.Options[*corev1.Pod], r reconcile.Reconciler, opts reconcile.Options[*corev1.Pod]) *env {
	t.Helper()
	e := &env{
		fake: sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Resource: podsResource, Objects: pods}),
		errs: &it.ErrSink{},
	}
	var err error
	if e.inf, err = typed.NewInformer(e.fake, iopts); err != nil {
		t.Fatal(err)
	}
	if opts.ErrorHandler == nil {
		opts.ErrorHandler = e.errs.Handle
	}
	if e.ctrl, err = reconcile.New(e.inf, r, opts); err != nil {
		t.Fatal(err)
	}
	return e
}

// start runs the informer and the controller, each on its own context,
// and waits for the informer to sync.
func (e *env) start(t *testing.T) {
	t.Helper()
	e.infStop = it.Run(t, e.inf)
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.runErr = make(chan error, 1)
	go func() { e.runErr <- e.ctrl.Run(ctx) }()
	t.Cleanup(func() { e.stop(t) })
	if err := e.inf.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// stop cancels the controller, checks that Run returned nil, then stops
// the informer. It may be called more than once.
func (e *env) stop(t *testing.T) {
	t.Helper()
	if e.cancel == nil {
		return
	}
	e.cancel()
	e.cancel = nil
	select {
	case err := <-e.runErr:
		if err != nil {
			t.Errorf("Controller.Run = %v, want nil", err)
		}
	case <-time.After(10 * time.Minute): // deadlock guard, virtual in a bubble
		t.Error("Controller.Run did not return after cancel")
	}
	e.infStop()
}

// recorder is a Reconciler that records calls, in order, and can fail or
// block them.
type recorder struct {
	mu     sync.Mutex
	calls  []cache.Key
	active map[cache.Key]int
	now    int // reconciles in progress
	peak   int // most in progress at once
	twice  []cache.Key
	// fn, if set, decides the result of each call.
	fn func(ctx context.Context, key cache.Key, attempt int) error
}

func newRecorder(fn func(ctx context.Context, key cache.Key, attempt int) error) *recorder {
	return &recorder{active: map[cache.Key]int{}, fn: fn}
}

func (r *recorder) Reconcile(ctx context.Context, key cache.Key) error {
	r.mu.Lock()
	r.calls = append(r.calls, key)
	attempt := 0
	for _, k := range r.calls {
		if k == key {
			attempt++
		}
	}
	r.active[key]++
	if r.active[key] > 1 {
		r.twice = append(r.twice, key)
	}
	r.now++
	r.peak = max(r.peak, r.now)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.active[key]--
		r.now--
		r.mu.Unlock()
	}()
	if r.fn != nil {
		return r.fn(ctx, key, attempt)
	}
	return nil
}

// snapshot returns the calls so far.
func (r *recorder) snapshot() []cache.Key {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]cache.Key(nil), r.calls...)
}

// count returns how many times key was reconciled.
func (r *recorder) count(key cache.Key) int {
	n := 0
	for _, k := range r.snapshot() {
		if k == key {
			n++
		}
	}
	return n
}

// pods returns n pods in namespace ns, p-00000...
func pods(n int) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range n {
		out[i] = it.Pod("ns", fmt.Sprintf("p-%05d", i), nil)
	}
	return out
}

func key(name string) cache.Key { return cache.Key{Namespace: "ns", Name: name} }

// touch updates the pod called name in the fake with a new label value.
func touch(t *testing.T, f *sourcetest.Fake[*corev1.Pod], name, label string) {
	t.Helper()
	p, err := f.Get(key(name))
	if err != nil {
		t.Fatal(err)
	}
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels["touched"] = label
	if _, err := f.Update(p); err != nil {
		t.Fatal(err)
	}
}

// runInformer runs only the informer, until the returned stop.
func (e *env) runInformer(t *testing.T) (stop func()) {
	t.Helper()
	return it.Run(t, e.inf)
}
