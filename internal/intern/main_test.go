package intern_test

import (
	"testing"

	"github.com/typedinformer/informer/internal/leakcheck"
)

// TestMain fails the test binary if a test or benchmark leaves a goroutine
// running.
func TestMain(m *testing.M) { leakcheck.Main(m) }
