package fleet_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/fleet"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/source/sourcetest"
)

// podCluster is an API server over HTTP with the given pods.
func podCluster(t *testing.T, pods ...*corev1.Pod) *podserver.Server {
	return podserver.New(t, sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: pods}))
}

// clusterErrors records the errors of each cluster.
type clusterErrors struct {
	mu  sync.Mutex
	got map[string][]error
}

func (c *clusterErrors) handle(cluster string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.got == nil {
		c.got = map[string][]error{}
	}
	c.got[cluster] = append(c.got[cluster], err)
}

func (c *clusterErrors) clusters() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for n := range c.got {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// TestFleetOverHTTP: clusters engaged by rest.Config, each with discovery
// and connections of its own. One that refuses connections is reported
// for itself alone and the others sync; a second name for a server is
// refused; disengaging a cluster returns the process's goroutines, the
// server's included, to what they were before it was engaged.
func TestFleetOverHTTP(t *testing.T) {
	leakcheck.Check(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var errs clusterErrors
	fl, err := fleet.New(fleet.Options{ErrorHandler: errs.handle})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := fleet.InformerFor[*corev1.Pod](fl, factory.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	east := podCluster(t, pod("shop", "web-0", "web"))
	west := podCluster(t, pod("shop", "web-1", "web"), pod("lab", "x", "x"))
	for name, cfg := range map[string]*rest.Config{
		"east": east.Config(), "west": west.Config(),
		"down": {Host: "http://127.0.0.1:1"}, // nothing listens there
	} {
		if err := fl.Engage(name, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if err := fl.Engage("east-again", east.Config()); !errors.Is(err, fleet.ErrSameServer) {
		t.Errorf("a second name for east's server: %v, want ErrSameServer", err)
	}
	done := make(chan error, 1)
	go func() { done <- fl.Run(ctx) }()

	for _, name := range []string{"east", "west"} {
		if _, err := pods.WaitForCluster(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := items(pods.List(nil)), []string{"east/shop/web-0", "west/lab/x", "west/shop/web-1"}; !slices.Equal(got, want) {
		t.Errorf("List = %q, want %q", got, want)
	}
	eventually(t, "down's errors are reported", func() bool { return slices.Equal(errs.clusters(), []string{"down"}) })
	wctx, wcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = pods.WaitForSync(wctx)
	wcancel()
	if err == nil || !strings.Contains(err.Error(), `cluster "down"`) || strings.Contains(err.Error(), `"east"`) || strings.Contains(err.Error(), `"west"`) {
		t.Errorf("WaitForSync = %v, want an error naming down alone", err)
	}
	if err := fl.Disengage("down"); err != nil {
		t.Fatal(err)
	}

	// Disengaging a cluster frees its goroutines: the informer's, the
	// watch's, the connection's and the server's side of it.
	north := podCluster(t, pod("lab", "y", "y")) // its listener's goroutine counts in before
	goroutinesAcross(t, ctx, fl, pods, "north", north.Config()).check(t, "north")

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}
