package typed_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// panicky panics in its first List and its first Watch, as client-go's
// fake dynamic client does for a resource it was not given.
type panicky struct {
	*sourcetest.Fake[*corev1.Pod]
	lists, watches atomic.Int32
}

func (p *panicky) List(ctx context.Context, opts metav1.ListOptions) (source.List[*corev1.Pod], error) {
	if p.lists.Add(1) == 1 {
		panic("list: no such resource")
	}
	return p.Fake.List(ctx, opts)
}

func (p *panicky) Watch(ctx context.Context, opts metav1.ListOptions) (source.Watcher[*corev1.Pod], error) {
	if p.watches.Add(1) == 1 {
		panic("watch: no such resource")
	}
	return p.Fake.Watch(ctx, opts)
}

// TestSourcePanicIsRecovered: a source that panics does not kill the
// process: each panic is reported with its stack as an error wrapping
// source.ErrPanic, the informer backs off and retries, and it syncs and
// watches once the source answers.
func TestSourcePanicIsRecovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &panicky{Fake: fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: true}, it.Pod("ns", "a", nil))}
		var errs it.ErrSink
		inf := mustInformer(t, src, typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle})
		it.Run(t, inf)
		if err := inf.WaitForSync(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, err := src.Create(it.Pod("ns", "b", nil)); err != nil {
			t.Fatal(err)
		}
		it.Eventually(t, "the watched pod", func() bool { return inf.Store().Len() == 2 })
		synctest.Wait()
		got := errs.All()
		if len(got) != 2 {
			t.Fatalf("errors reported %v, want the two panics", got)
		}
		for i, what := range []string{"list: no such resource", "watch: no such resource"} {
			if !errors.Is(got[i], source.ErrPanic) || !strings.Contains(got[i].Error(), what) || !strings.Contains(got[i].Error(), "goroutine ") {
				t.Errorf("error %d = %v, want one wrapping source.ErrPanic with %q and the stack", i, got[i], what)
			}
		}
	})
}
