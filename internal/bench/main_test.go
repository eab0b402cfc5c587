package bench_test

import (
	"os"
	"os/exec"
	goruntime "runtime"
	"testing"

	"github.com/typedinformer/informer/internal/leakcheck"
)

// neighbourEnv, set in the environment of the test binary, makes it a
// CPU-bound neighbour process instead: one busy goroutine per core until
// it is killed.
const neighbourEnv = "BENCH_CPU_NEIGHBOUR"

// TestMain fails the test binary if a test or benchmark leaves a goroutine
// running.
func TestMain(m *testing.M) {
	if os.Getenv(neighbourEnv) != "" {
		spin()
	}
	leakcheck.Main(m)
}

// spin keeps every core busy and never returns.
func spin() {
	for range goruntime.NumCPU() - 1 {
		go func() {
			for n := 0; ; n++ {
			}
		}()
	}
	for n := 0; ; n++ {
	}
}

// startNeighbour starts a CPU-bound process beside the benchmark, as
// controllers share their nodes with other work, and returns its stop.
func startNeighbour(b *testing.B) (stop func()) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), neighbourEnv+"=1")
	if err := cmd.Start(); err != nil {
		b.Fatalf("start the CPU-bound neighbour: %v", err)
	}
	return func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}
