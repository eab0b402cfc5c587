package fifo_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
)

func examplePod(name, rv string) cache.Entry[*corev1.Pod] {
	o := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: rv}}
	return cache.Entry[*corev1.Pod]{Key: cache.KeyOf(o), Object: o}
}

// A Queue hands out every delta once, in the order it was pushed, in
// batches of up to MaxBatch. A list travels as ReplaceStart, Replaced...,
// ReplaceEnd; the queue infers nothing from it: deciding what the list
// deleted is the consumer's job.
func ExampleNew() {
	ctx := context.Background()
	q := fifo.New[*corev1.Pod](fifo.Options{MaxBatch: 4})

	// The reflector's initial list, pushed at once (a paged list is
	// pushed page by page), then watch events: one object it could not
	// take travels as what it is, Refused, with its error.
	_ = q.Push(
		fifo.Delta[*corev1.Pod]{Type: fifo.ReplaceStart},
		fifo.Delta[*corev1.Pod]{Type: fifo.Replaced, Entry: examplePod("a", "1")},
		fifo.Delta[*corev1.Pod]{Type: fifo.Replaced, Entry: examplePod("b", "1")},
		fifo.Delta[*corev1.Pod]{Type: fifo.ReplaceEnd, ResourceVersion: "1"},
	)
	_ = q.Push(fifo.Delta[*corev1.Pod]{Type: fifo.Updated, Entry: examplePod("a", "2")})
	_ = q.Push(
		fifo.Delta[*corev1.Pod]{Type: fifo.Added, Entry: examplePod("c", "3")},
		fifo.Delta[*corev1.Pod]{Type: fifo.Deleted, Entry: examplePod("b", "4")},
	)
	_ = q.Push(fifo.Delta[*corev1.Pod]{Type: fifo.Refused, Entry: cache.Entry[*corev1.Pod]{Key: cache.Key{Namespace: "default", Name: "d"}},
		ResourceVersion: "5", Err: errors.New("transform: no owner")})
	_ = q.Push(fifo.Delta[*corev1.Pod]{Type: fifo.Bookmark, ResourceVersion: "6"})
	q.Close() // Pop drains what is queued, then returns ErrClosed

	for {
		batch, err := q.Pop(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("batch of", len(batch))
		for _, d := range batch {
			switch d.Type {
			case fifo.ReplaceStart, fifo.Sync:
				fmt.Printf("  %s\n", d.Type)
			case fifo.ReplaceEnd, fifo.Bookmark:
				fmt.Printf("  %s rv=%s\n", d.Type, d.ResourceVersion)
			case fifo.Refused:
				fmt.Printf("  %s %s rv=%s: %v\n", d.Type, d.Key, d.ResourceVersion, d.Err)
			default:
				fmt.Printf("  %-8s %s rv=%s\n", d.Type, d.Key, d.Object.ResourceVersion)
			}
		}
	}

	// Output:
	// batch of 4
	//   ReplaceStart
	//   Replaced default/a rv=1
	//   Replaced default/b rv=1
	//   ReplaceEnd rv=1
	// batch of 4
	//   Updated  default/a rv=2
	//   Added    default/c rv=3
	//   Deleted  default/b rv=4
	//   Refused default/d rv=5: transform: no owner
	// batch of 1
	//   Bookmark rv=6
	// fifo: queue closed
}
