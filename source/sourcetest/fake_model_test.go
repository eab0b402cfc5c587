package sourcetest_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source/sourcetest"
)

var modelSeed = flag.Uint64("model.seed", 0, "seed of TestFakeModel (0: a new one)")

// modelObj is what the model knows of a stored pod.
type modelObj struct {
	rv  string
	app string
}

type modelState map[cache.Key]modelObj

// TestFakeModel makes random changes to a Fake with a random window and
// checks its history against a model that keeps every state: an Exact list
// at every retained version, paginated or not, and a watch from every
// retained version, with or without a selector, rebuild the states the
// model recorded; older versions are 410 Gone.
func TestFakeModel(t *testing.T) {
	seed := *modelSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reproduce with: go test -run 'TestFakeModel$' -model.seed=%d", seed)
		}
	})
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	for run := range 20 {
		window := []int{1, 3, 10, 1000}[rng.IntN(4)]
		ops := 10 + rng.IntN(50)
		t.Run(fmt.Sprintf("run%d-window%d-ops%d", run, window, ops), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { checkModel(t, rng, window, ops) })
		})
	}
}

func checkModel(t *testing.T, rng *rand.Rand, window, ops int) {
	const start = 100
	f := sourcetest.NewFake(podOptions{Window: window})
	states := map[int64]modelState{start: {}} // the state at each version
	cur := modelState{}
	rv := int64(start)
	names := []string{"a", "b", "c", "d"}
	apps := []string{"web", "db"}
	for range ops {
		k := key([]string{"x", "y"}[rng.IntN(2)], names[rng.IntN(len(names))])
		app := apps[rng.IntN(len(apps))]
		p := pod(k.Namespace, k.Name, map[string]string{"app": app})
		_, exists := cur[k]
		op := rng.IntN(3)
		var err error
		switch op {
		case 0:
			_, err = f.Create(p)
		case 1:
			_, err = f.Update(p)
		default:
			_, err = f.Delete(k)
		}
		// Create fails if the key exists, Update and Delete if it does not.
		if failed, want := err != nil, (op == 0) == exists; failed != want {
			t.Fatalf("op %d on %v (exists: %v): err = %v", op, k, exists, err)
		}
		if err != nil {
			if !apierrors.IsAlreadyExists(err) && !apierrors.IsNotFound(err) {
				t.Fatalf("op %d on %v: %v, want AlreadyExists or NotFound", op, k, err)
			}
			continue
		}
		rv++
		cur = maps.Clone(cur)
		if op == 2 {
			delete(cur, k)
		} else {
			cur[k] = modelObj{rv: strconv.FormatInt(rv, 10), app: app}
		}
		states[rv] = cur
	}
	if got := f.ResourceVersion(); got != strconv.FormatInt(rv, 10) {
		t.Fatalf("ResourceVersion() = %s, want %d", got, rv)
	}
	oldest := max(start, rv-int64(window)) // the oldest version the history can rebuild
	selectors := []string{"", "app=web", "app!=web"}
	for at := int64(start); at <= rv; at++ {
		opts := metav1.ListOptions{ResourceVersion: strconv.FormatInt(at, 10), ResourceVersionMatch: metav1.ResourceVersionMatchExact}
		if at < oldest {
			if _, err := f.List(t.Context(), opts); !isExpired(err) {
				t.Errorf("Exact list at compacted %d: %v, want 410", at, err)
			}
			w, err := f.Watch(t.Context(), metav1.ListOptions{ResourceVersion: opts.ResourceVersion})
			if err != nil {
				t.Fatalf("watch at compacted %d: %v", at, err)
			}
			if diff := cmp.Diff([]string{"ERROR Expired", "CLOSED"}, drain(t, w)); diff != "" {
				t.Errorf("watch at compacted %d (-want +got)\n%s", at, diff)
			}
			continue
		}
		for _, s := range selectors {
			sel, err := labels.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			opts.LabelSelector = s
			opts.Limit = int64(rng.IntN(4)) // 0: no pagination
			if diff := cmp.Diff(modelIDs(states[at], sel), listPaged(t, f, opts)); diff != "" {
				t.Errorf("list at %d, selector %q, limit %d (-want +got)\n%s", at, s, opts.Limit, diff)
			}
			w := mustWatch(t, f, metav1.ListOptions{ResourceVersion: opts.ResourceVersion, LabelSelector: s})
			if diff := cmp.Diff(modelIDs(cur, sel), replay(t, w, states[at], sel, at)); diff != "" {
				t.Errorf("state from a watch at %d, selector %q (-want +got)\n%s", at, s, diff)
			}
			w.Stop()
		}
	}
}

// modelIDs is ids for a model state: "ns/name@rv" in key order, for the
// objects sel selects.
func modelIDs(s modelState, sel labels.Selector) []string {
	out := []string{}
	for _, k := range slices.SortedFunc(maps.Keys(s), func(a, b cache.Key) int {
		return strings.Compare(a.String(), b.String())
	}) {
		if sel.Matches(labels.Set{"app": s[k].app}) {
			out = append(out, k.String()+"@"+s[k].rv)
		}
	}
	return out
}

// listPaged lists with opts, following continue tokens.
func listPaged(t *testing.T, f *podFake, opts metav1.ListOptions) []string {
	t.Helper()
	var got []*corev1.Pod
	for range 100 {
		l, err := f.List(t.Context(), opts)
		if err != nil {
			t.Fatalf("list %+v: %v", opts, err)
		}
		if l.ResourceVersion != opts.ResourceVersion && opts.Continue == "" {
			t.Errorf("Exact list at %s has resourceVersion %s", opts.ResourceVersion, l.ResourceVersion)
		}
		got = append(got, l.Items...)
		if l.Continue == "" {
			return ids(got)
		}
		opts.Continue, opts.ResourceVersion, opts.ResourceVersionMatch = l.Continue, "", ""
	}
	t.Fatal("more than 100 pages")
	return nil
}

// replay applies the events a watch from version at delivers now to the
// state at that version, filtered by sel, checking that versions increase.
func replay(t *testing.T, w podWatcher, from modelState, sel labels.Selector, at int64) []string {
	t.Helper()
	state := modelState{}
	for k, o := range from {
		if sel.Matches(labels.Set{"app": o.app}) {
			state[k] = o
		}
	}
	last := at
	for range 1000 {
		ev, ok := nextNow(t, w)
		if !ok {
			return modelIDs(state, labels.Everything())
		}
		rv, perr := strconv.ParseInt(ev.Object.ResourceVersion, 10, 64)
		if perr != nil || rv <= last {
			t.Errorf("%s %s at resourceVersion %q, not after %d", ev.Type, ev.Object.Name, ev.Object.ResourceVersion, last)
		}
		last = rv
		k := cache.KeyOf(ev.Object)
		switch ev.Type {
		case watch.Added, watch.Modified:
			state[k] = modelObj{rv: ev.Object.ResourceVersion, app: ev.Object.Labels["app"]}
		case watch.Deleted:
			delete(state, k)
		default:
			t.Errorf("unexpected event type %s", ev.Type)
		}
	}
	t.Fatal("more than 1000 events")
	return nil
}

// nextNow returns the next event if there is one now (in a synctest
// bubble, within a second of the bubble's clock); any error fails the test.
func nextNow(t *testing.T, w podWatcher) (podEvent, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	ev, err := w.Next(ctx)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return ev, false
	case err != nil:
		t.Fatalf("Next: %v", err)
	}
	return ev, true
}
