// Package leakcheck fails a test that leaves goroutines behind, without a
// dependency: it compares the goroutines running when the test ends with
// those running when it started, and retries for a while so goroutines that
// are just finishing are not reported.
package leakcheck

import (
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// Check records the current goroutines and registers a cleanup that fails t
// if, after the test, goroutines other than those remain for longer than a
// few seconds. Call it first in a test (cleanups run in reverse order, so it
// runs after the test's own cleanups). Not for parallel tests.
func Check(t testing.TB) {
	t.Helper()
	before := ids()
	t.Cleanup(func() {
		var leaked []string
		for i := 0; i < 100; i++ {
			leaked = leaked[:0]
			for _, g := range stacks() {
				if !slices.Contains(before, g.id) && !ignored(g.stack) {
					leaked = append(leaked, g.stack)
				}
			}
			if len(leaked) == 0 {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Errorf("%d goroutine(s) leaked:\n\n%s", len(leaked), strings.Join(leaked, "\n\n"))
	})
}

type goroutine struct {
	id    string
	stack string
}

func ids() []string {
	var out []string
	for _, g := range stacks() {
		out = append(out, g.id)
	}
	return out
}

func stacks() []goroutine {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []goroutine
	for _, s := range strings.Split(string(buf), "\n\n") {
		head, _, _ := strings.Cut(s, "\n")
		// "goroutine 12 [running]:"
		f := strings.Fields(head)
		if len(f) < 2 {
			continue
		}
		out = append(out, goroutine{id: f[1], stack: s})
	}
	return out
}

// ignored are goroutines that are not ours to stop: the runtime's, the
// testing package's, this package's own, and pooled HTTP connections.
func ignored(stack string) bool {
	for _, s := range []string{
		"leakcheck.stacks",
		"testing.(*T).Run(",
		"testing.tRunner(",
		"testing.(*M).",
		"runtime.ensureSigM",
		"os/signal.signal_recv",
		"k8s.io/klog/v2.(*flushDaemon).run",
		"net/http.(*persistConn).readLoop",
		"net/http.(*persistConn).writeLoop",
		"golang.org/x/net/http2.(*clientConnReadLoop).run",
		"golang.org/x/net/http2.(*ClientConn).readLoop",
	} {
		if strings.Contains(stack, s) {
			return true
		}
	}
	return false
}
