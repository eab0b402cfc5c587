package testcluster

import (
	"testing"

	"github.com/typedinformer/informer/internal/leakcheck"
)

// TestMain fails the run if goroutines outlive the tests; clusters the
// tests start are stopped by them (processes are not goroutines, but their
// waiters are).
func TestMain(m *testing.M) { leakcheck.Main(m) }
