package sharding_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/sharding"
	"github.com/typedinformer/informer/source/sourcetest"
)

func ExampleSplit() {
	ranges, err := sharding.Split(1, 1, 2)
	if err != nil {
		panic(err)
	}
	for _, r := range ranges {
		fmt.Println(r.Selector(sharding.ByUID))
	}
	// Output:
	// shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000')
	// shardRange(object.metadata.uid, '0x4000000000000000', '0x8000000000000000')
	// shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')
}

func ExampleShard_Contains() {
	s := sharding.Shard{Key: sharding.ByNamespace, Range: sharding.Range{End: 1 << 63}}
	for _, ns := range []string{"default", "shop"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}}
		fmt.Printf("%s %016x %v\n", ns, sharding.Hash(ns), s.Contains(p))
	}
	// Output:
	// default ebada5168620c5fe false
	// shop 46dc5e18e28e2409 true
}

func ExampleNewMembership() {
	// A clientset of a real cluster works the same: clientset.CoordinationV1().
	cs := fake.NewClientset()
	m, err := sharding.NewMembership(cs.CoordinationV1(), sharding.Options{
		Namespace: "shards", Group: "pods", Identity: "replica-0", LeaseDuration: 10 * time.Second,
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	for {
		changed := m.Changed()
		if r, ok := m.Assignment().Range(); ok {
			fmt.Println("replica-0 owns", r, r.Fraction())
			break
		}
		<-changed
	}
	cancel()
	fmt.Println(<-done)
	// Output:
	// replica-0 owns [0x0000000000000000, 0x10000000000000000) 1
	// <nil>
}

func ExampleNewInformer() {
	pods := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
	for i := range 3 {
		_, _ = pods.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: fmt.Sprintf("pod-%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i))}})
	}
	cs := fake.NewClientset()
	m, err := sharding.NewMembership(cs.CoordinationV1(), sharding.Options{Namespace: "shards", Group: "pods", Identity: "replica-0"})
	if err != nil {
		panic(err)
	}
	inf, err := sharding.NewInformer(pods, m, sharding.InformerOptions[*corev1.Pod]{Key: sharding.ByUID})
	if err != nil {
		panic(err)
	}
	_, _ = inf.AddHandler(handler.Funcs[*corev1.Pod]{
		DeleteFunc: func(d handler.Deleted[*corev1.Pod]) {
			if d.MovedOut {
				return // another replica has it now
			}
			// ... the object is gone
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- inf.Run(ctx) }()
	if err := inf.WaitForSync(ctx); err != nil {
		panic(err)
	}
	st := inf.Status()
	fmt.Println(st.Identity, st.Range(), st.Objects, "objects; client filtering:", st.Informer.Shard.ClientFiltering)
	cancel()
	fmt.Println(<-done)
	// Output:
	// replica-0 [0x0000000000000000, 0x10000000000000000) 3 objects; client filtering: true
	// <nil>
}
