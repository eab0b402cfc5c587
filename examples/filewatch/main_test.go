package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/typedinformer/informer/internal/leakcheck"
)

// TestMain fails the test binary if a test leaves a goroutine running.
func TestMain(m *testing.M) { leakcheck.Main(m) }

// TestDemo runs the scripted demo and checks what the handlers saw, step
// by step.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	if err := demo(t.Context(), &out); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	var got []string
	for _, line := range strings.Split(out.String(), "\n") {
		if line != "" && !strings.HasPrefix(line, "# ") {
			got = append(got, line)
		}
	}
	want := []string{
		"add    shop/cache labels [app=cache] images [redis:8]",
		"synced: 1 pods",
		"add    shop/db labels [app=db] images [postgres:17]",
		"add    shop/web labels [app=web] images [nginx:1.27]",
		"problem: web.yaml:1: file: object defined twice: Pod shop/web is ignored: shop.yaml:1 defines it first",
		"update shop/web labels [app=web] images [nginx:1.28]",
		"problem: web.yaml:5: file: syntax error: yaml: line 5: did not find expected node content",
		"update shop/web labels [app=web tier=front] images [nginx:1.28]",
		"delete shop/db",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("demo output (-want +got):\n%s\nfull output:\n%s", diff, out.String())
	}
}
