// Package leakcheck fails a test, or a package's whole test run, that leaves
// goroutines behind, without a dependency: it compares the goroutines running
// when the test ends with those running when it started (or, for [Main],
// with none but the runtime's and the testing package's), and retries for a
// while so goroutines that are just finishing are not reported.
package leakcheck

import (
	"fmt"
	"io"
	"os"
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
		if leaked := leakedSince(before, 100, 50*time.Millisecond); len(leaked) > 0 {
			t.Errorf("%d goroutine(s) leaked:\n\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
	})
}

// Main runs a package's tests and benchmarks, then fails the run if
// goroutines other than the runtime's and the testing package's remain for
// longer than a few seconds, printing their stacks. Use it as TestMain:
//
//	func TestMain(m *testing.M) { leakcheck.Main(m) }
func Main(m *testing.M) {
	os.Exit(run(m, os.Stderr, 100, 50*time.Millisecond))
}

// MainWithTeardown is Main for a package whose tests share fixtures that
// outlive each test (a test cluster started on first use, say): it runs
// the tests, then teardown, which stops the fixtures and waits for their
// goroutines, then checks for leaks as Main does.
//
//	func TestMain(m *testing.M) { leakcheck.MainWithTeardown(m, stopShared) }
func MainWithTeardown(m *testing.M, teardown func()) {
	os.Exit(run(withTeardown{m: m, teardown: teardown}, os.Stderr, 100, 50*time.Millisecond))
}

// withTeardown runs teardown after m, whatever m's result.
type withTeardown struct {
	m        runner
	teardown func()
}

func (w withTeardown) Run() int {
	code := w.m.Run()
	if w.teardown != nil {
		w.teardown()
	}
	return code
}

// runner is what Main needs of a *testing.M.
type runner interface{ Run() int }

// run runs m and returns its exit code, or 1 if it passed but left
// goroutines behind, checking tries times, wait apart.
func run(m runner, w io.Writer, tries int, wait time.Duration) int {
	code := m.Run()
	if code != 0 {
		return code // the failure is reported; leaks of failed tests are noise
	}
	if leaked := leakedSince(nil, tries, wait); len(leaked) > 0 {
		fmt.Fprintf(w, "leakcheck: %d goroutine(s) leaked by the tests:\n\n%s\n", len(leaked), strings.Join(leaked, "\n\n"))
		fmt.Fprintln(w, "FAIL")
		return 1
	}
	return 0
}

// leakedSince returns the stacks of the goroutines, not in before and not
// ignored, that remain after up to tries checks, wait apart.
func leakedSince(before []string, tries int, wait time.Duration) []string {
	var leaked []string
	for i := 0; i < tries; i++ {
		if i > 0 {
			time.Sleep(wait)
		}
		leaked = leaked[:0]
		for _, g := range stacks() {
			if !slices.Contains(before, g.id) && !ignored(g.stack) {
				leaked = append(leaked, g.stack)
			}
		}
		if len(leaked) == 0 {
			return nil
		}
	}
	return leaked
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
