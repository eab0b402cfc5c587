//go:build race

package cache_test

// raceEnabled reports a -race build. The race detector changes inlining and
// escape analysis, so allocation counts are not measured under it.
const raceEnabled = true
