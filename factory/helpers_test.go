package factory_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/factory"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// fakes serves one sourcetest.Fake of pods per namespace ("" for every
// namespace), made on first use, as the registered source of a factory.
type fakes struct {
	opts sourcetest.FakeOptions[*corev1.Pod]
	wrap func(source.Source[*corev1.Pod]) source.Source[*corev1.Pod]

	mu    sync.Mutex
	byNS  map[string]*sourcetest.Fake[*corev1.Pod]
	calls int // source function calls: informers made
}

func newFakes(opts sourcetest.FakeOptions[*corev1.Pod]) *fakes {
	if opts.Resource.Empty() {
		opts.Resource = schema.GroupResource{Resource: "pods"}
	}
	opts.Scope = cache.ScopeNamespaced
	return &fakes{opts: opts, byNS: map[string]*sourcetest.Fake[*corev1.Pod]{}}
}

// of returns the fake of namespace ns.
func (fs *fakes) of(ns string) *sourcetest.Fake[*corev1.Pod] {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f, ok := fs.byNS[ns]
	if !ok {
		f = sourcetest.NewFake(fs.opts)
		fs.byNS[ns] = f
	}
	return f
}

func (fs *fakes) newSource(s factory.Scope) (source.Source[*corev1.Pod], error) {
	fs.mu.Lock()
	fs.calls++
	fs.mu.Unlock()
	var src source.Source[*corev1.Pod] = fs.of(s.Namespace)
	if fs.wrap != nil {
		src = fs.wrap(src)
	}
	return src, nil
}

func (fs *fakes) sourceCalls() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.calls
}

// newFactory returns a factory without a config whose pods come from fs.
func newFactory(t testing.TB, fs *fakes, opts factory.Options) *factory.Factory {
	t.Helper()
	f, err := factory.New(nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := factory.Register(f, fs.newSource); err != nil {
		t.Fatal(err)
	}
	return f
}

// starter runs a factory as informertest.Run runs an informer.
type starter struct{ f *factory.Factory }

func (s starter) Run(ctx context.Context) error { return s.f.Start(ctx) }

// start runs f.Start until the returned stop is called or the test ends;
// stop cancels it, waits and checks that it returned nil.
func start(t testing.TB, f *factory.Factory) (stop func()) {
	t.Helper()
	return it.Run(t, starter{f})
}

// informerFor is factory.InformerFor, failing the test on error; the
// informer is released when the test ends.
func informerFor[T cache.Object](t testing.TB, f *factory.Factory, s factory.Scope) (*typed.Informer[T], func()) {
	t.Helper()
	inf, release, err := factory.InformerFor[T](f, s)
	if err != nil {
		t.Fatalf("InformerFor(%+v): %v", s, err)
	}
	t.Cleanup(release)
	return inf, release
}

// waitSynced is f.WaitForSync with a deadlock guard.
func waitSynced(t testing.TB, f *factory.Factory) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
}
