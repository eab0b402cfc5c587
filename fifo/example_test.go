package fifo_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/fifo"
)

func examplePod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: rv}}
}

// An InOrder queue (the zero Options) hands out every change on its own, in
// the order the producer reported it. The consumer applies each change to
// its cache, which is also the queue's KnownObjects: a later Replace that no
// longer lists an object yields a deletion with FinalStateUnknown.
func ExampleNew() {
	ctx := context.Background()
	store, _ := cache.NewIndexer(cache.IndexerOptions[*corev1.Pod]{})
	q := fifo.New(fifo.Options[*corev1.Pod]{KnownObjects: store})

	_ = q.Replace([]*corev1.Pod{examplePod("a", "1"), examplePod("b", "1")}, "1")
	_ = q.Update(examplePod("a", "2"))
	_ = q.Add(examplePod("c", "3"))

	consume := func() {
		for q.Len() > 0 {
			_ = q.PopBatch(ctx, func(items []fifo.Item[*corev1.Pod], initial bool) error {
				for _, it := range items {
					d := it.Newest()
					fmt.Printf("%-10s %-8s rv=%s initial=%v unknown=%v\n",
						it.Key, d.Type, d.Object.ResourceVersion, initial, d.FinalStateUnknown)
					if d.Type == fifo.Deleted {
						store.DeleteKey(it.Key)
					} else {
						_ = store.Set(it.Key, d.Object)
					}
				}
				return nil
			})
		}
		fmt.Println("synced:", q.HasSynced())
	}
	consume()

	// b was deleted while the watch was down: the relist lacks it.
	_ = q.Replace([]*corev1.Pod{examplePod("a", "2"), examplePod("c", "3")}, "4")
	consume()

	// Output:
	// default/a  Replaced rv=1 initial=true unknown=false
	// default/b  Replaced rv=1 initial=true unknown=false
	// default/a  Updated  rv=2 initial=false unknown=false
	// default/c  Added    rv=3 initial=false unknown=false
	// synced: true
	// default/b  Deleted  rv=1 initial=false unknown=true
	// default/a  Replaced rv=2 initial=false unknown=false
	// default/c  Replaced rv=3 initial=false unknown=false
	// synced: true
}

// A PerKey queue accumulates the changes of each key and hands a key out once
// with all of them; keys leave in the order they first arrived.
func ExampleNew_perKey() {
	q := fifo.New(fifo.Options[*corev1.Pod]{Ordering: fifo.PerKey})

	_ = q.Add(examplePod("a", "1"))
	_ = q.Add(examplePod("b", "1"))
	_ = q.Update(examplePod("a", "2"))
	_ = q.Delete(examplePod("a", "3"))
	_ = q.Delete(examplePod("a", "4")) // consecutive deletions collapse

	for q.Len() > 0 {
		_ = q.Pop(context.Background(), func(it fifo.Item[*corev1.Pod], _ bool) error {
			fmt.Print(it.Key, ":")
			for _, d := range it.Deltas {
				fmt.Printf(" %s@%s", d.Type, d.Object.ResourceVersion)
			}
			fmt.Println()
			return nil
		})
	}
	// Output:
	// default/a: Added@1 Updated@2 Deleted@3
	// default/b: Added@1
}
