package main

import (
	"testing"

	"github.com/typedinformer/informer/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }
