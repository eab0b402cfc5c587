package sharding_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedinformer/informer/sharding"
	"github.com/typedinformer/informer/source/sourcetest"
)

func TestNewMembershipErrors(t *testing.T) {
	cs := fake.NewClientset()
	ok := sharding.Options{Namespace: "ns", Group: "g", Identity: "a"}
	tests := []struct {
		name      string
		change    func(*sharding.Options)
		nilClient bool
	}{
		{"nil client", func(*sharding.Options) {}, true},
		{"no namespace", func(o *sharding.Options) { o.Namespace = "" }, false},
		{"no group", func(o *sharding.Options) { o.Group = "" }, false},
		{"negative weight", func(o *sharding.Options) { o.Weight = -1 }, false},
		{"renew not below the lease", func(o *sharding.Options) { o.LeaseDuration, o.RenewInterval = 2*time.Second, 2*time.Second }, false},
		{"not a Lease name", func(o *sharding.Options) { o.Identity = "Not_A_Name" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ok
			tt.change(&o)
			var err error
			if tt.nilClient {
				_, err = sharding.NewMembership(nil, o)
			} else {
				_, err = sharding.NewMembership(cs.CoordinationV1(), o)
			}
			if !errors.Is(err, sharding.ErrBadOptions) {
				t.Errorf("NewMembership: %v, want ErrBadOptions", err)
			}
		})
	}
	if _, err := sharding.NewMembership(cs.CoordinationV1(), ok); err != nil {
		t.Errorf("NewMembership with good options: %v", err)
	}
}

// TestMembershipWeights: two members of weights 1 and 3 see the same
// ranges, a quarter and three quarters in identity order; after one leaves
// (its Lease deleted), the other has everything.
func TestMembershipWeights(t *testing.T) {
	cs := fake.NewClientset()
	run := func(id string, weight int) (*sharding.Membership, context.CancelFunc, chan error) {
		m, err := sharding.NewMembership(cs.CoordinationV1(), sharding.Options{Namespace: "ns", Group: "g", Identity: id, Weight: weight, LeaseDuration: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		return m, cancel, done
	}
	a, stopA, doneA := run("a", 1)
	defer func() { stopA(); <-doneA }()
	b, stopB, doneB := run("b", 3)
	want := []sharding.Range{{End: 1 << 62}, {Start: 1 << 62}}
	ranges := func(m *sharding.Membership) []sharding.Range {
		var out []sharding.Range
		for _, mem := range m.Assignment().Members {
			out = append(out, mem.Range)
		}
		return out
	}
	eventually(t, "both to see both", func() bool {
		return cmp.Equal(want, ranges(a)) && cmp.Equal(want, ranges(b))
	})
	if r, ok := b.Assignment().Range(); !ok || r != want[1] {
		t.Errorf("b's range %v %v, want %v", r, ok, want[1])
	}
	stopB()
	if err := <-doneB; err != nil {
		t.Fatal(err)
	}
	eventually(t, "a to have everything", func() bool {
		r, ok := a.Assignment().Range()
		return ok && r == sharding.Full && len(a.Assignment().Members) == 1
	})
}

// TestExpiredLeasesAreCollected: the Lease of a replica killed long ago
// (expired for more than 20 lease durations) is deleted by the group's
// first member; a Lease expired for less, another group's, and the live
// ones stay.
func TestExpiredLeasesAreCollected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := fake.NewClientset()
		leases := cs.CoordinationV1().Leases("shards")
		old := func(name, group string, ago time.Duration) {
			id, secs := name, int32(3)
			_, err := leases.Create(t.Context(), &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{sharding.GroupLabel: group}},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &id, LeaseDurationSeconds: &secs,
					RenewTime: &metav1.MicroTime{Time: time.Now().Add(-ago)}},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		}
		old("pods-killed", "pods", time.Hour)
		old("pods-recent", "pods", 30*time.Second)
		old("nodes-killed", "nodes", time.Hour)
		var ms []*sharding.Membership
		for _, id := range []string{"a", "b"} {
			m, err := sharding.NewMembership(cs.CoordinationV1(), sharding.Options{Namespace: "shards", Group: "pods", Identity: id, LeaseDuration: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			ms = append(ms, m)
		}
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		for _, m := range ms {
			wg.Go(func() { _ = m.Run(ctx) })
			time.Sleep(time.Second) // one after the other: the fake's watch misses what came before it
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		l, err := leases.List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, x := range l.Items {
			names = append(names, x.Name)
		}
		slices.Sort(names)
		if want := []string{"nodes-killed", "pods-a", "pods-b", "pods-recent"}; !slices.Equal(names, want) {
			t.Errorf("Leases %q, want %q", names, want)
		}
		cancel()
		wg.Wait()
	})
}

// TestMembershipIsOneInformers: a membership given to a second sharded
// informer is refused at construction: its Lease holds one range.
func TestMembershipIsOneInformers(t *testing.T) {
	m, err := sharding.NewMembership(fake.NewClientset().CoordinationV1(), sharding.Options{Namespace: "ns", Group: "g", Identity: "a"})
	if err != nil {
		t.Fatal(err)
	}
	src := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
	if _, err := sharding.NewInformer(src, m, sharding.InformerOptions[*corev1.Pod]{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sharding.NewInformer(src, m, sharding.InformerOptions[*corev1.Pod]{}); !errors.Is(err, sharding.ErrBadOptions) || !strings.Contains(err.Error(), "another sharded Informer") {
		t.Errorf("a second NewInformer with the membership = %v, want ErrBadOptions saying it is taken", err)
	}
}
