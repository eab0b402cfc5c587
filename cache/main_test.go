package cache_test

import (
	"testing"

	"github.com/typedinformer/informer/internal/leakcheck"
)

// TestMain fails the run if any test leaves a goroutine behind.
func TestMain(m *testing.M) { leakcheck.Main(m) }
