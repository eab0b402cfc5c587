package informertest_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// A controller test runs an informer on a faulty source, with the
// checker's handler beside the controller's, changes the fake, heals the
// faults and checks that everything converged to what the fake holds.
// Here the first watch (the streaming initial list) fails with a 500:
// the informer reports it, retries, and converges.
func ExampleNewChecker() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-2"}},
	}})
	faulty, err := sourcetest.NewFaulty[*corev1.Pod](fake, sourcetest.FaultOptions{
		Script: []sourcetest.Fault{{Kind: sourcetest.FaultInternal, Op: sourcetest.OpWatch, At: 1}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	chk, err := informertest.NewChecker[*corev1.Pod](fake, informertest.Options[*corev1.Pod]{Faults: faulty})
	if err != nil {
		fmt.Println(err)
		return
	}
	inf, err := typed.NewInformer[*corev1.Pod](faulty, typed.Options[*corev1.Pod]{ErrorHandler: chk.ErrorHandler})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := chk.AddHandler(inf, typed.HandlerOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	defer func() { cancel(); <-done }()

	if err := inf.WaitForSync(ctx); err != nil {
		fmt.Println(err)
		return
	}
	_, _ = fake.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-3"}})
	_, _ = fake.Delete(cache.Key{Namespace: "shop", Name: "web-1"})
	faulty.Heal()

	fmt.Println("converged:", chk.Converge(ctx, inf))
	for _, f := range faulty.Log() {
		fmt.Println(f)
	}
	c := chk.Counts()
	fmt.Printf("adds %d, deletes %d, reported errors %d\n", c.Adds, c.Deletes, len(chk.Errors()))
	// Output:
	// converged: <nil>
	// #1 500@watch#1 watch 1 after rv "" scripted
	// adds 3, deletes 1, reported errors 1
}

// A Recorder is a handler that checks every call it gets against the ones
// before and keeps them by key: give it to an informer beside the handler
// under test, then compare its view with what the source holds.
func ExampleNewRecorder() {
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart"}},
	}})
	rec := informertest.NewRecorder[*corev1.Pod](informertest.RecorderOptions{CheckMutations: true})
	inf, err := typed.NewInformer[*corev1.Pod](fake, typed.Options[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	reg, _ := inf.AddHandler(rec)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- inf.Run(ctx) }()
	if err := typed.WaitForCacheSync(ctx, inf, reg); err != nil {
		panic(err)
	}
	_, _ = fake.Delete(cache.Key{Namespace: "shop", Name: "cart"})
	for len(rec.Replay()) != 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	for _, e := range rec.Events(cache.Key{Namespace: "shop", Name: "cart"}) {
		fmt.Println(e.Kind, e.Initial)
	}
	fmt.Println("violations:", len(rec.Violations()))
	// Output:
	// add true
	// delete false
	// violations: 0
}
