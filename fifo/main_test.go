package fifo_test

import (
	"testing"

	"github.com/typedinformer/informer/internal/leakcheck"
)

// TestMain fails the run if the tests leave goroutines behind (a Pop that
// never returned, a producer that never ended).
func TestMain(m *testing.M) { leakcheck.Main(m) }
