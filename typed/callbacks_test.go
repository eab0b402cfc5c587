package typed_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// everything calls every method of the informer a callback may call.
func everything(inf *typed.Informer[*corev1.Pod], n *atomic.Int64) {
	n.Add(1)
	_ = inf.HasSynced()
	_ = inf.Status()
	_ = inf.LastSyncResourceVersion()
	_ = inf.Name()
	_ = inf.Store().Len()
	_, _ = inf.Store().ByIndex(cache.NamespaceIndex, "ns-0")
	_, _ = inf.Lister().List(labels.Everything())
	_, _ = inf.Lister().Namespace("ns-0").Get("p-0")
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	_ = inf.WaitForSync(ctx)
	if reg, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{}); err == nil {
		_ = inf.RemoveHandler(reg)
	}
}

// Every piece of user code the informer calls (handlers, Transform, index
// functions, ErrorHandler, a custom selector's Matches) may call back into
// the informer: no lock is held while user code runs, so nothing deadlocks,
// and everything still converges. Run with -race.
func TestCallbacksMayCallTheInformer(t *testing.T) {
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(50)...)
	var inf *typed.Informer[*corev1.Pod]
	var ready atomic.Bool
	var calls [5]atomic.Int64
	call := func(i int) {
		if ready.Load() {
			everything(inf, &calls[i])
		}
	}
	var err error
	inf, err = typed.NewInformer(fake, typed.Options[*corev1.Pod]{
		Transform: func(p *corev1.Pod) (*corev1.Pod, error) { call(0); return p, nil },
		Indexers: cache.Indexers[*corev1.Pod]{"cb": func(p *corev1.Pod) ([]string, error) {
			call(1)
			if p.Name == "refused" {
				return nil, errors.New("refused by the index")
			}
			return nil, nil
		}},
		ErrorHandler: func(error) { call(2) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ready.Store(true)
	rec := it.NewRecorder()
	rh := rec
	if _, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{
		AddFunc:    func(p *corev1.Pod, initial bool) { call(3); rh.OnAdd(p, initial) },
		UpdateFunc: func(old, cur *corev1.Pod) { call(3); rh.OnUpdate(old, cur) },
		DeleteFunc: func(d handler.Deleted[*corev1.Pod]) { call(3); rh.OnDelete(d) },
	}); err != nil {
		t.Fatal(err)
	}
	it.Run(t, inf)
	if err := inf.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}
	sel := callbackSelector{f: func() { call(4) }}
	if _, err := inf.Lister().List(sel); err != nil {
		t.Fatal(err)
	}
	churnFake(t, fake, "1")
	if _, err := fake.Create(it.Pod("ns-0", "refused", nil)); err != nil {
		t.Fatal(err)
	}
	it.Eventually(t, "refusal reported", func() bool { return calls[2].Load() > 0 })
	if _, err := fake.Delete(cache.Key{Namespace: "ns-0", Name: "refused"}); err != nil {
		t.Fatal(err)
	}
	it.Converge(t, fake, inf.Store(), rec)
	for i, name := range []string{"Transform", "index function", "ErrorHandler", "handler", "selector"} {
		if calls[i].Load() == 0 {
			t.Errorf("%s never called back: the test tests nothing for it", name)
		}
	}
}

// callbackSelector matches everything and calls f from Matches.
type callbackSelector struct {
	labels.Selector
	f func()
}

func (s callbackSelector) Matches(labels.Labels) bool { s.f(); return true }
func (s callbackSelector) Empty() bool                { return false }
func (s callbackSelector) Requirements() (labels.Requirements, bool) {
	return nil, false
}

// Regression: a panicking ErrorHandler used to kill the process (every
// other user callback was recovered). Now the panic is recovered and
// logged once, with the error it was handling, and the informer goes on.
func TestErrorHandlerPanicIsRecovered(t *testing.T) {
	var buf syncBuffer
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(&buf)
	defer func() {
		_ = fs.Set("logtostderr", "true")
		klog.SetOutput(nil)
	}()
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pod("ns", "a", nil))
		fake.FailLists(2, apierrors.NewInternalError(errors.New("down for a moment")))
		fake.FailWatches(2, apierrors.NewInternalError(errors.New("down for a moment")))
		var panics atomic.Int64
		inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{
			ErrorHandler: func(error) { panics.Add(1); panic("error handler boom") },
		})
		it.Run(t, inf)
		if err := inf.WaitForSync(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if panics.Load() == 0 {
			t.Fatal("the ErrorHandler was never called: the test tests nothing")
		}
		churnFake(t, fake, "after")
		it.Converge(t, fake, inf.Store())
	})
	klog.Flush()
	out := buf.String()
	if n := strings.Count(out, "Options.ErrorHandler panicked"); n == 0 || !strings.Contains(out, "error handler boom") || !strings.Contains(out, "down for a moment") {
		t.Errorf("log (%d panic reports) lacks the panic or the error being handled:\n%s", n, out)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
