package factory_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/source/sourcetest"
)

// An informer that follows discovery is made for a kind the server does
// not serve yet, parks, and syncs once the kind is served.
func ExampleOptions_followDiscovery() {
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
	_, _ = fake.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}})
	ps := podserver.Start(fake)
	defer ps.Close()
	g := newGate(ps) // serves no pods until setOpen, as a CRD not installed yet
	defer g.Close()

	f, err := factory.New(&rest.Config{Host: g.srv.URL}, factory.Options{
		FollowDiscovery: true, DiscoveryInterval: 10 * time.Millisecond,
		ErrorHandler: func(error) {}, // the one report of the park
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	inf, release, err := factory.InformerFor[*corev1.Pod](f, factory.Scope{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx) }()
	defer func() { cancel(); <-done }()

	for !errors.Is(inf.Status().LastError, factory.ErrNotServed) {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("parked:", inf.Name(), "synced:", inf.HasSynced())
	g.setOpen() // the CRD is installed
	if err := inf.WaitForSync(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("served:", inf.Store().Len(), "pod")
	// Output:
	// parked: pods synced: false
	// served: 1 pod
}
