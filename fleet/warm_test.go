package fleet_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/fleet"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/typed"
)

// TestFleetWarmStart: with Options.Factory.WarmStart, each cluster saves
// its caches in a directory of its own, its files marked with its name;
// a new fleet starts each cluster from its own files without a LIST, and a
// file of another cluster put in a cluster's place is refused (the
// cluster lists, nothing of the file is cached).
func TestFleetWarmStart(t *testing.T) {
	leakcheck.Check(t)
	dir := t.TempDir()
	servers := map[string][]*corev1.Pod{
		"east":  {pod("shop", "web-0", "web"), pod("shop", "web-1", "web")},
		"west":  {pod("shop", "db-0", "db")},
		"north": {pod("lab", "x-0", "x")},
	}
	cfgs := map[string]*rest.Config{}
	for name, pods := range servers {
		cfgs[name] = podCluster(t, pods...).Config()
	}
	type result struct {
		warm, lists, cached int
		warmErr             bool
	}
	run := func(before func()) map[string]result {
		t.Helper()
		var errs clusterErrors
		fl, err := fleet.New(fleet.Options{ErrorHandler: errs.handle,
			Factory: factory.Options{WarmStart: &factory.WarmStart{Dir: dir}}})
		if err != nil {
			t.Fatal(err)
		}
		pods, err := fleet.InformerFor[*corev1.Pod](fl, factory.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		for name := range servers {
			if err := fl.Engage(name, cfgs[name]); err != nil {
				t.Fatal(err)
			}
		}
		if err := fl.Engage("a/b", cfgs["east"]); !errors.Is(err, fleet.ErrBadName) {
			t.Errorf("Engage of a name that cannot name a directory = %v, want ErrBadName", err)
		}
		if before != nil {
			before()
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- fl.Run(ctx) }()
		out := map[string]result{}
		for name := range servers {
			inf, err := pods.WaitForCluster(ctx, name)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			st := inf.Status().Stats
			out[name] = result{warm: st.WarmStarts, lists: st.Lists + st.WatchLists, cached: inf.Store().Len()}
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
		for name := range servers {
			r := out[name]
			for _, e := range errs.got[name] {
				r.warmErr = r.warmErr || errors.Is(e, typed.ErrWarmStart)
			}
			out[name] = r
		}
		return out
	}

	for name, r := range run(nil) {
		if r.warm != 0 || r.cached != len(servers[name]) {
			t.Errorf("first run, %s: %+v, want a cold start of %d pods", name, r, len(servers[name]))
		}
	}
	files := map[string]string{}
	for name := range servers {
		got, _ := filepath.Glob(filepath.Join(dir, name, "*.cache"))
		if len(got) != 1 || !strings.HasPrefix(filepath.Base(got[0]), "pods") {
			t.Fatalf("%s saved %q, want one pods file in its directory", name, got)
		}
		files[name] = got[0]
	}

	// North's file goes in west's place.
	swap := func() {
		b, err := os.ReadFile(files["north"])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(files["west"], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for name, r := range run(swap) {
		switch name {
		case "west":
			if r.warm != 0 || r.lists == 0 || !r.warmErr || r.cached != len(servers[name]) {
				t.Errorf("west with north's file: %+v, want the file refused (a warm start error), a list, %d pods", r, len(servers[name]))
			}
		default:
			if r.warm != 1 || r.lists != 0 || r.cached != len(servers[name]) {
				t.Errorf("second run, %s: %+v, want a warm start of %d pods, no list", name, r, len(servers[name]))
			}
		}
	}
}
