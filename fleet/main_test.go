package fleet_test

import (
	"testing"

	"github.com/typedinformer/informer/internal/leakcheck"
)

// TestMain fails the test binary if a test or example leaves a goroutine
// running.
func TestMain(m *testing.M) { leakcheck.Main(m) }
