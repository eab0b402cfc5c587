package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/typedinformer/informer/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// TestRun: the program on the fake clientset shares the first namespace's
// informer, caches each namespace's pods, sees a later pod, sends one
// watch per scope, and stops the informer after every release.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name       string
		namespaces []string
		want       []string
	}{
		{"two namespaces", []string{"shop", "lab"}, []string{
			"3 users, same informer for the first two: true",
			"pods (namespace shop): 2 pods cached",
			"pods (namespace lab): 1 pods cached",
			"pods (namespace shop) saw a new pod: shop/web-1",
			"watch requests: 2 for 2 scopes",
			"after every release: typed: stopped",
		}},
		{"one namespace", []string{"lab"}, []string{
			"2 users, same informer for the first two: true",
			"pods (namespace lab): 1 pods cached",
			"pods (namespace lab) saw a new pod: lab/web-1",
			"watch requests: 1 for 1 scopes",
			"after every release: typed: stopped",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a deadlock guard
			defer cancel()
			var out bytes.Buffer
			if err := run(ctx, &out, "", tc.namespaces); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, strings.Split(strings.TrimSpace(out.String()), "\n")); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}
