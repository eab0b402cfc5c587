#!/usr/bin/env bash
# Runs BenchmarkScale: PODS pods (default 1,000,000) synced and relisted
# by ours (defaults), ours caching a projection, and client-go (dropping
# managedFields), ROUNDS rounds (default 1), each side in its own process,
# the order alternating between rounds. Needs about 30 GiB of memory at
# 1M pods for client-go's side (5 GiB for ours); SIDES="ours ours-summary"
# leaves client-go out. Output: the raw lines in $OUT (default
# docs/benchmarks-scale.txt), then the medians and ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
PODS=${PODS:-1000000}
ROUNDS=${ROUNDS:-1}
SIDES=${SIDES:-"ours ours-summary client-go"}
OUT=${OUT:-docs/benchmarks-scale.txt}
bin=$(mktemp -d)/bench.test
trap 'rm -rf "$(dirname "$bin")"' EXIT
$GO test -c -o "$bin" ./internal/bench/
: >"$OUT"
read -r -a sides <<<"$SIDES"
start=$SECONDS
for ((r = 1; r <= ROUNDS; r++)); do
	order=("${sides[@]}")
	if ((r % 2 == 0)); then
		order=()
		for ((i = ${#sides[@]} - 1; i >= 0; i--)); do order+=("${sides[i]}"); done
	fi
	for s in "${order[@]}"; do
		echo "round $r: $s" >&2
		(cd internal/bench && "$bin" -test.run '^$' -test.bench '^BenchmarkScale$' -test.benchtime 1x \
			-bench.impl="$s" -scale.pods="$PODS") | grep '^Benchmark' | tee -a "$OUT"
	done
done
echo "took $((SECONDS - start)) s for $PODS pods, $ROUNDS round(s)" | tee -a "$OUT"
# Medians per side and metric, and each over client-go's.
awk '
/^Benchmark/ {
	split($1, p, "impl="); side = p[2]; sub(/-[0-9]+$/, "", side)
	for (i = 5; i < NF; i += 2) { v[side, $(i+1), ++n[side, $(i+1)]] = $i; metric[$(i+1)] = 1; seen[side] = 1 }
}
function median(s, m,   k, a, i, j, t) {
	k = n[s, m]; if (k == 0) return ""
	for (i = 1; i <= k; i++) a[i] = v[s, m, i]
	for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
END {
	for (m in metric) {
		line = m ":"
		for (s in seen) line = line sprintf("  %s %s", s, median(s, m))
		c = median("client-go", m)
		if (c != "" && c != 0) for (s in seen) if (s != "client-go") line = line sprintf("  %s/client-go %.3f", s, median(s, m) / c)
		print line
	}
}' "$OUT" | sort
