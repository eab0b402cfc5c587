package prometheus_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryMetricDocumented: every metric name this package exports is
// in docs/observability.md, or for the shard metrics in docs/sharding.md.
func TestEveryMetricDocumented(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`(?:NewDesc\(|Name: *)"((?:informer|controller_runtime)_[a-z_]+)"`)
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range name.FindAllStringSubmatch(string(b), -1) {
			names = append(names, m[1])
		}
	}
	if len(names) < 20 {
		t.Fatalf("found %d metric names in the package's sources, want the 20 and more it has: is the pattern stale?", len(names))
	}
	docs := map[string]string{}
	for _, d := range []string{"observability.md", "sharding.md"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", d))
		if err != nil {
			t.Fatal(err)
		}
		docs[d] = string(b)
	}
	for _, n := range names {
		doc := "observability.md"
		if strings.HasPrefix(n, "informer_shard_") {
			doc = "sharding.md"
		}
		if !strings.Contains(docs[doc], "`"+n) {
			t.Errorf("metric %s is not in docs/%s", n, doc)
		}
	}
}
