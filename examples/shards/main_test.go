package main

import (
	"bytes"
	"regexp"
	"strconv"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedinformer/informer/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// TestRun runs the demo on a fake clientset, which ignores shard
// selectors: the shards filter on the client, split the pods at rest, after
// the stop and after the return, and each hears of its pods' updates.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	cfg := config{namespace: "demo", pods: 300, replicas: 3, lease: time.Second, workers: 4}
	if err := run(t.Context(), fake.NewClientset(), cfg, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Log(out.String())
	share := regexp.MustCompile(`shard-\d: +(\d+) pods .* client-side`)
	lines := share.FindAllStringSubmatch(out.String(), -1)
	if len(lines) != 3+2+3 {
		t.Fatalf("%d share lines, want 8:\n%s", len(lines), out.String())
	}
	for _, group := range [][][]string{lines[:3], lines[3:5], lines[5:]} {
		sum := 0
		for _, l := range group {
			n, _ := strconv.Atoi(l[1])
			sum += n
		}
		if sum != cfg.pods {
			t.Errorf("shares add up to %d, want %d: %q", sum, cfg.pods, group)
		}
	}
	if n := len(regexp.MustCompile(`events \(`).FindAllString(out.String(), -1)); n != 3 {
		t.Errorf("%d event lines, want 3", n)
	}
}
