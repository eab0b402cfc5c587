#!/usr/bin/env bash
# Runs the side-by-side benchmarks of internal/bench (this module against
# client-go, on the same inputs, in the same run), writes their raw output
# where benchstat can read it, and prints one ratio line per figure, last.
#
#   COUNT=5 bash hack/bench.sh          # what `make bench` runs
#   BENCH_OUT=/tmp/b.txt bash hack/bench.sh
#
# The chart and the table of docs/benchmarks.md are rewritten from the run
# unless BENCH_DOCS=0.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
COUNT=${COUNT:-5}
OUT=${BENCH_OUT:-docs/benchmarks.txt}
PKG=./internal/bench/

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$GO test -c -o "$tmp/bench.test" $PKG

run() { # run <regexp> <benchtime>
	echo "bench: $1 (count $COUNT, benchtime $2)" >&2
	"$tmp/bench.test" -test.run '^$' -test.bench "$1" -test.benchmem \
		-test.count "$COUNT" -test.benchtime "$2" -test.timeout 60m | tee -a "$tmp/raw.txt" >&2
}

: >"$tmp/raw.txt"
run '^Benchmark(Watch|Wire|WireParallel|DecodeSpread|DecodeWatchEvent|Lister|Handoff)$' 1s
run '^BenchmarkInitialSync$' 1s
run '^BenchmarkHeapPerPod$' 1x
run '^BenchmarkRelistPeakHeap$' 1x

mkdir -p "$(dirname "$OUT")"
cp "$tmp/raw.txt" "$OUT"
args=()
if [ "${BENCH_DOCS:-1}" = 1 ]; then
	args=(-svg docs/benchmarks.svg -md docs/benchmarks.md -command "make bench (COUNT=$COUNT)")
fi
$GO run ./internal/bench/report "${args[@]}" "$OUT"
