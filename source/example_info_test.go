package source_test

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

// countingSource counts the lists of the source it wraps. A wrapper
// forwards the wrapped source's Info in one line, so an informer over it
// still learns the resource and whether it can stream lists.
type countingSource struct {
	source.Source[*corev1.Pod]
	lists atomic.Int64
}

func (c *countingSource) Info() source.Info { return c.Source.Info() }

func (c *countingSource) List(ctx context.Context, opts metav1.ListOptions) (source.List[*corev1.Pod], error) {
	c.lists.Add(1)
	return c.Source.List(ctx, opts)
}

// A source says what it lists and what it can do in one value, Info.
func ExampleInfo() {
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
	var src source.Source[*corev1.Pod] = &countingSource{Source: fake}
	info := src.Info()
	fmt.Println(info.Resource, info.WatchList, info.Exclusive)
	fmt.Println(source.DefaultName(src))
	// Output:
	// pods true false
	// pods
}
