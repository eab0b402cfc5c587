//go:build race

package cache_test

// raceEnabled reports a -race build. The race detector makes sync.Pool drop
// buffers at random and changes inlining, so allocation counts are not
// measured under it.
const raceEnabled = true
