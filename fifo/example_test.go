package fifo_test

import (
	"context"
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

	// The reflector's initial list, then watch events.
	_ = q.Replace([]cache.Entry[*corev1.Pod]{examplePod("a", "1"), examplePod("b", "1")}, "1")
	_ = q.Push(fifo.Delta[*corev1.Pod]{Type: fifo.Updated, Entry: examplePod("a", "2")})
	_ = q.Push(
		fifo.Delta[*corev1.Pod]{Type: fifo.Added, Entry: examplePod("c", "3")},
		fifo.Delta[*corev1.Pod]{Type: fifo.Deleted, Entry: examplePod("b", "4")},
	)
	_ = q.Push(fifo.Delta[*corev1.Pod]{Type: fifo.Bookmark, ResourceVersion: "5"})
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
	//   Bookmark rv=5
	// fifo: queue closed
}

// A KeyedQueue hands out a key with all its pending deltas. It remembers
// what it handed out, so a later list that lacks a key yields a deletion
// with FinalStateUnknown, and HasSynced reports when the first list is out.
func ExampleNewKeyed() {
	ctx := context.Background()
	q := fifo.NewKeyed[*corev1.Pod](fifo.Options{})

	consume := func() {
		for q.Len() > 0 {
			it, _ := q.Pop(ctx)
			fmt.Printf("%s initial=%v:", it.Key, it.Initial)
			for _, d := range it.Deltas {
				fmt.Printf(" %s(rv=%s unknown=%v)", d.Type, d.Object.ResourceVersion, d.FinalStateUnknown)
			}
			fmt.Println()
		}
		fmt.Println("synced:", q.HasSynced())
	}

	_ = q.Replace([]cache.Entry[*corev1.Pod]{examplePod("a", "1"), examplePod("b", "1")}, "1")
	_ = q.Update(examplePod("a", "2"))
	_ = q.Add(examplePod("c", "3"))
	consume()

	// b was deleted while the watch was down: the relist lacks it.
	_ = q.Replace([]cache.Entry[*corev1.Pod]{examplePod("a", "2"), examplePod("c", "3")}, "4")
	consume()

	// Output:
	// default/a initial=true: Replaced(rv=1 unknown=false) Updated(rv=2 unknown=false)
	// default/b initial=true: Replaced(rv=1 unknown=false)
	// default/c initial=false: Added(rv=3 unknown=false)
	// synced: true
	// default/a initial=false: Replaced(rv=2 unknown=false)
	// default/c initial=false: Replaced(rv=3 unknown=false)
	// default/b initial=false: Deleted(rv=1 unknown=true)
	// synced: true
}
