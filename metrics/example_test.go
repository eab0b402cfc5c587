package metrics_test

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/metrics"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// lists is a Metrics that keeps, per informer, the state function, and
// counts the lists its informers apply.
type lists struct {
	mu     sync.Mutex
	states map[string]metrics.State
	listed int
}

func (l *lists) Register(id metrics.Informer, state metrics.State) metrics.Recorder {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.states[id.Name] = state
	return &listsRecorder{l: l, name: id.Name}
}

type listsRecorder struct {
	l    *lists
	name string
}

func (r *listsRecorder) ObserveBatch(b metrics.Batch) {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	r.l.listed += b.Listed
}

func (r *listsRecorder) ObserveError(string) {}

func (r *listsRecorder) Unregister() {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	delete(r.l.states, r.name)
}

// A Metrics of one's own: the informer registers when Run starts, pushes
// its batches and errors, and is read through its State at collection.
func Example() {
	m := &lists{states: map[string]metrics.State{}}
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{
		Resource: schema.GroupResource{Resource: "pods"},
		Objects:  []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}}},
	})
	inf, err := typed.NewInformer(fake, typed.Options[*corev1.Pod]{Name: "shop-pods", Metrics: m})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	if err := inf.WaitForSync(ctx); err != nil {
		fmt.Println(err)
	}

	var s metrics.Snapshot
	m.mu.Lock()
	m.states["shop-pods"](&s)
	m.mu.Unlock()
	fmt.Printf("synced=%v watchLists=%d handlers=%d\n", s.Synced, s.Stats.WatchLists, len(s.Handlers))

	cancel()
	if err := <-done; err != nil {
		fmt.Println(err)
	}
	m.mu.Lock()
	fmt.Printf("lists applied=%d, registered after Run=%d\n", m.listed, len(m.states))
	m.mu.Unlock()
	// Output:
	// synced=true watchLists=1 handlers=0
	// lists applied=1, registered after Run=0
}

// Discard reports nothing; an informer with nil Options.Metrics behaves
// the same without calling it.
func ExampleDiscard() {
	rec := metrics.Discard.Register(metrics.Informer{Name: "pods"}, func(*metrics.Snapshot) {})
	rec.ObserveError("Forbidden")
	rec.Unregister()
	fmt.Println("nothing reported")
	// Output:
	// nothing reported
}
