package reflector

import (
	"testing"

	"github.com/typedinformer/informer/internal/leakcheck"
)

// TestMain fails the package's run if a test leaves goroutines behind.
func TestMain(m *testing.M) { leakcheck.Main(m) }
