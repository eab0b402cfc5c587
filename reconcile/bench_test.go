package reconcile_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/reconcile"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// BenchmarkOwned measures what an Owned watch costs as the caches grow:
// a child's change mapped to its owner's key (event: from the fake's
// update to the owner's key in the queue), an owner's children read with
// OwnedBy (the owner index), and, for comparison, the same read as a scan
// of the child cache. With 10 children an owner, the event and OwnedBy
// stay flat from 1k to 10k owners; the scan grows with the children.
//
//	go test -run '^$' -bench BenchmarkOwned -benchmem ./reconcile/
func BenchmarkOwned(b *testing.B) {
	for _, parents := range []int{1_000, 10_000} {
		children := 10 * parents
		b.Run(fmt.Sprintf("parents=%d/children=%d", parents, children), func(b *testing.B) {
			deps := make([]*appsv1.Deployment, parents)
			rss := make([]*appsv1.ReplicaSet, 0, children)
			for i := range parents {
				deps[i] = deployment(fmt.Sprintf("d-%05d", i))
				for j := range 10 {
					rss = append(rss, replicaSet(fmt.Sprintf("d-%05d-%d", i, j), deps[i].Name, true))
				}
			}
			depFake := sourcetest.NewFake(sourcetest.FakeOptions[*appsv1.Deployment]{
				Resource: schema.GroupResource{Group: "apps", Resource: "deployments"}, Scope: cache.ScopeNamespaced, Objects: deps,
			})
			rsFake := sourcetest.NewFake(sourcetest.FakeOptions[*appsv1.ReplicaSet]{Objects: rss, Window: 1 << 20})
			depInf, _ := typed.NewInformer(depFake, typed.Options[*appsv1.Deployment]{})
			rsInf, _ := typed.NewInformer(rsFake, typed.Options[*appsv1.ReplicaSet]{})
			ctrl, err := reconcile.New(depInf, reconcile.Func(func(context.Context, cache.Key) error { return nil }),
				reconcile.Options[*appsv1.Deployment]{Watches: []reconcile.Watch{
					reconcile.Owned(rsInf, deploymentKind, reconcile.WatchOptions[*appsv1.ReplicaSet]{}),
				}})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{}, 3)
			for _, run := range []func(context.Context) error{depInf.Run, rsInf.Run, ctrl.Run} {
				go func() { _ = run(ctx); done <- struct{}{} }()
			}
			defer func() {
				cancel()
				for range 3 {
					<-done
				}
			}()
			if err := rsInf.WaitForSync(ctx); err != nil {
				b.Fatal(err)
			}
			for ctrl.Status().Watches[0].Mapped < uint64(children) {
				time.Sleep(time.Millisecond)
			}

			b.Run("event", func(b *testing.B) {
				start := ctrl.Status().Watches[0].Mapped
				i := 0
				for b.Loop() {
					rs := rss[i%len(rss)].DeepCopy()
					rs.Labels = map[string]string{"n": fmt.Sprint(i)}
					if _, err := rsFake.Update(rs); err != nil {
						b.Fatal(err)
					}
					i++
				}
				for ctrl.Status().Watches[0].Mapped < start+uint64(i) {
					time.Sleep(100 * time.Microsecond)
				}
			})
			b.Run("owned-by-index", func(b *testing.B) {
				i := 0
				for b.Loop() {
					got, err := reconcile.OwnedBy(rsInf, deploymentKind, cache.KeyOf(deps[i%parents]))
					if err != nil || len(got) != 10 {
						b.Fatalf("OwnedBy = %d children, %v; want 10", len(got), err)
					}
					i++
				}
			})
			b.Run("owned-by-scan", func(b *testing.B) {
				i := 0
				for b.Loop() {
					owner := deps[i%parents].Name
					n := 0
					for _, rs := range rsInf.Store().All() {
						for _, ref := range rs.OwnerReferences {
							if ref.Controller != nil && *ref.Controller && ref.Kind == "Deployment" && ref.Name == owner {
								n++
							}
						}
					}
					if n != 10 {
						b.Fatalf("scan found %d children, want 10", n)
					}
					i++
				}
			})
		})
	}
}
