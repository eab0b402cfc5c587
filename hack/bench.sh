#!/usr/bin/env bash
# Runs the side-by-side benchmarks of internal/bench (this module against
# client-go, on the same inputs), writes their raw output where benchstat
# can read it, and prints one ratio line per figure, last.
#
#   COUNT=3 bash hack/bench.sh          # what `make bench` runs
#   BENCH_OUT=/tmp/b.txt bash hack/bench.sh
#   GROUPS_RE=lister bash hack/bench.sh # only the groups whose name matches
#                                       # (raw output then in $TMPDIR, not docs/)
#
# The runs are interleaved: each of COUNT rounds runs every group of
# benchmarks once for each side, each side in a process of its own
# (-bench.impl), the order of the two sides alternating between rounds.
# The report pairs the two sides' runs of one round and takes the median
# of the rounds' ratios; a "worst round" is the worst of those pairs.
#
# With the cluster binaries built (make cluster-bin), the real
# kube-apiserver rows follow (hack/bench-real.sh, COUNT rounds), unless
# BENCH_REAL=0. The chart and the table of docs/benchmarks.md are
# rewritten from the run unless BENCH_DOCS=0 (and never when GROUPS_RE
# leaves groups out).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
COUNT=${COUNT:-3}
GROUPS_RE=${GROUPS_RE:-.}
out=docs/benchmarks.txt
if [ "$GROUPS_RE" != . ]; then out=${TMPDIR:-/tmp}/benchmarks-partial.txt; fi
OUT=${BENCH_OUT:-$out}
PKG=./internal/bench/

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$GO test -c -o "$tmp/bench.test" $PKG

# name;benchmarks of both sides;benchmarks of ours alone (the machine's
# floors and ceilings);benchtime
groups=(
	"pipeline;Watch;Handoff;1s"
	"wire;Wire|WireParallel;DecodeSpread;1s"
	"decode;DecodeWatchEvent;;1s"
	"lister;Lister;;1s"
	"sync;InitialSync;;1s"
	"heap;HeapPerPod\$;;1x"
	"relist;RelistPeakHeap;;1x"
)

run() { # run <group> <side> <regexp> <benchtime>
	echo "bench: round $round/$COUNT, $1, impl=$2 (benchtime $4)" >&2
	(cd internal/bench && "$tmp/bench.test" -test.run '^$' -test.bench "$3" -test.benchmem \
		-test.count 1 -test.benchtime "$4" -test.timeout 60m -bench.impl="$2") | tee -a "$tmp/raw.txt" >&2
}

: >"$tmp/raw.txt"
start=$(date +%s)
for round in $(seq 1 "$COUNT"); do
	sides=(ours client-go)
	if [ $((round % 2)) = 0 ]; then sides=(client-go ours); fi
	for g in "${groups[@]}"; do
		IFS=';' read -r name both alone benchtime <<<"$g"
		[[ $name =~ $GROUPS_RE ]] || continue
		for side in "${sides[@]}"; do
			re="$both"
			if [ "$side" = ours ] && [ -n "$alone" ]; then re="$both|$alone"; fi
			run "$name" "$side" "^Benchmark($re)\$" "$benchtime"
		done
	done
done
echo "bench: $COUNT rounds in $(($(date +%s) - start)) s" >&2

mkdir -p "$(dirname "$OUT")"
cp "$tmp/raw.txt" "$OUT"
inputs=("$OUT")
# The real kube-apiserver rows, when its binaries are built (make
# cluster-bin; make test builds them): COUNT rounds of hack/bench-real.sh,
# in a raw file of their own. BENCH_REAL=0 leaves them out.
real_out=$(dirname "$OUT")/benchmarks-real.txt
if [ "${BENCH_REAL:-1}" = 1 ] && [ "$GROUPS_RE" = . ] && [ -x bin/kube-apiserver ] && [ -x bin/etcd ]; then
	rm -f "$real_out"
	ROUNDS=$COUNT BENCH_REAL_OUT=$real_out GO=$GO bash hack/bench-real.sh
	inputs+=("$real_out")
elif [ "$GROUPS_RE" = . ]; then
	echo "bench: no bin/kube-apiserver and bin/etcd (make cluster-bin): the real-server rows are left out" >&2
fi
args=()
if [ "${BENCH_DOCS:-1}" = 1 ] && [ "$GROUPS_RE" = . ]; then
	args=(-svg docs/benchmarks.svg -md docs/benchmarks.md -command "make bench (COUNT=$COUNT)")
fi
$GO run ./internal/bench/report "${args[@]}" "${inputs[@]}"
