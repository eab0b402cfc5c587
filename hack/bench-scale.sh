#!/usr/bin/env bash
# Runs BenchmarkScale: PODS pods (default 1,000,000) synced, relisted and
# watched by ours (defaults), ours caching a projection, and client-go
# (dropping managedFields), in FORMATS (default "json protobuf"), ROUNDS
# rounds (default 1), each side in its own process, the order alternating
# between rounds. Ours needs about 15 GiB at 1M pods; client-go's side needs
# more than 23 GiB there, so a side whose RSS passes MAX_RSS_GIB (default:
# 85% of the machine's memory) is given up with a line saying how far it
# got, and the run goes on. SIDES="ours ours-summary" leaves client-go out.
# Output: the raw lines in $OUT (default docs/benchmarks-scale.txt), then
# the medians and ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
PODS=${PODS:-1000000}
ROUNDS=${ROUNDS:-1}
SIDES=${SIDES:-"floor ours ours-summary client-go"}
FORMATS=${FORMATS:-"json protobuf"}
mem_kib=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo 2>/dev/null || echo 0)
MAX_RSS_GIB=${MAX_RSS_GIB:-$((mem_kib * 85 / 100 / 1024 / 1024))}
OUT=${OUT:-docs/benchmarks-scale.txt}
bin=$(mktemp -d)/bench.test
log=$(dirname "$bin")/side.log
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
	for f in $FORMATS; do
		for s in "${order[@]}"; do
			echo "round $r: $f $s" >&2
			status=0
			(cd internal/bench && "$bin" -test.run '^$' -test.bench '^BenchmarkScale$' -test.benchtime 1x \
				-bench.impl="$s" -scale.format="$f" -scale.pods="$PODS" -scale.maxrss=$((MAX_RSS_GIB << 30))) >"$log" 2>&1 || status=$?
			grep -E '^Benchmark|scale_test.go' "$log" | tee -a "$OUT" || true
			if ((status > 128)); then # a signal: the RSS bound cannot catch one allocation of gigabytes
				echo "    $f $s: killed by signal $((status - 128)) (9: the kernel's OOM killer, most likely)" | tee -a "$OUT"
			fi
		done
	done
done
echo "took $((SECONDS - start)) s for $PODS pods, $ROUNDS round(s), formats $FORMATS, RSS bound $MAX_RSS_GIB GiB" | tee -a "$OUT"
# Medians per side and metric, and each over client-go's.
awk '
/^Benchmark/ {
	split($1, p, "impl="); side = p[2]; sub(/-[0-9]+$/, "", side)
	split($1, q, "format="); split(q[2], q, "/"); side = q[1] "/" side
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
		for (s in seen) {
			split(s, f, "/"); c = median(f[1] "/client-go", m)
			if (f[2] != "client-go" && c != "" && c != 0) line = line sprintf("  %s/client-go %.3f", s, median(s, m) / c)
		}
		print line
	}
}' "$OUT" | sort
