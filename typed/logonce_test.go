package typed_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// TestDefaultLoggingLogsEachErrorOnce: without an ErrorHandler, a
// Forbidden list the informer retries with backoff is logged once, naming
// the informer once, not at every retry.
func TestDefaultLoggingLogsEachErrorOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var lines []string
		logger := funcr.New(func(prefix, args string) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, args)
		}, funcr.Options{})
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: true}, it.Pod("ns", "a", nil))
		fake.FailLists(4, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil))
		inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{})
		ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
		done := make(chan error, 1)
		go func() { done <- inf.Run(ctx) }()
		it.Eventually(t, "the list after four refusals", inf.HasSynced)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		var errs []string
		for _, l := range lines {
			if strings.Contains(l, "forbidden") {
				errs = append(errs, l)
			}
		}
		if len(errs) != 1 {
			t.Fatalf("the Forbidden error logged %d times, want once: %q", len(errs), lines)
		}
		if strings.Count(errs[0], "pods") != 2 || strings.Contains(errs[0], "informer pods") {
			t.Errorf("log line %q: want the informer named once, beside the error", errs[0])
		}
	})
}
