package sourcetest_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

// A Faulty source injects faults into any source, here under a script: a
// 429 on the first list, and a cut connection at the second event. Its log
// says where each fault happened; a random plan (FaultOptions.Seed and the
// rates) is logged the same way, and Plan prints what replays it.
func ExampleNewFaulty() {
	ctx := context.Background()
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{
		Objects: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"}}},
	})
	src, err := sourcetest.NewFaulty[*corev1.Pod](fake, sourcetest.FaultOptions{Script: []sourcetest.Fault{
		{Kind: sourcetest.FaultTooManyRequests, Op: sourcetest.OpList, At: 1},
		{Kind: sourcetest.FaultCut, Op: sourcetest.OpNext, At: 2},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}

	_, err = src.List(ctx, metav1.ListOptions{})
	var serr *source.Error
	fmt.Println("list:", apierrors.IsTooManyRequests(err), errors.As(err, &serr) && serr.Phase == source.PhaseList)
	l, _ := src.List(ctx, metav1.ListOptions{})
	fmt.Println("listed", len(l.Items), "at", l.ResourceVersion)

	w, _ := src.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	defer w.Stop()
	_, _ = fake.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-2"}})
	ev, _ := w.Next(ctx)
	fmt.Println(ev.Type, ev.Object.Name)
	_, err = w.Next(ctx)
	fmt.Println("cut:", errors.Is(err, source.ErrWatchClosed))

	for _, r := range src.Log() {
		fmt.Println(r)
	}
	r := src.Requests()
	fmt.Printf("lists %d (complete %d), watches %d, events %d, faults %d\n", r.Lists, r.CompletedLists, r.Watches, r.Events, r.Faults)
	// Output:
	// list: true true
	// listed 1 at 101
	// ADDED web-2
	// cut: true
	// #1 429@list#1 after rv "" scripted
	// #2 cut@next#2 watch 1 event 2 after rv "102" scripted
	// lists 2 (complete 1), watches 1, events 1, faults 2
}
