package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/typedinformer/informer/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// TestRun runs the program on its fake clusters and checks what it says.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out, kubeconfigs{}, ""); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	want := `east: 2 pods
west: 2 pods
added west: shop/west-web-2
east disengaged: 3 pods left, clusters [west]
`
	if out.String() != want {
		t.Errorf("run said:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestBadKubeconfig: a kubeconfig that does not load is an error naming
// its cluster, and nothing is left running.
func TestBadKubeconfig(t *testing.T) {
	err := run(t.Context(), &bytes.Buffer{}, kubeconfigs{"gone": t.TempDir() + "/missing"}, "")
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("cluster gone")) {
		t.Errorf("run = %v, want an error naming cluster gone", err)
	}
}
