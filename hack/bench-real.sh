#!/usr/bin/env bash
# Runs the real-server benchmarks of internal/bench (BenchmarkRealServer*:
# this module against client-go, both against one real kube-apiserver):
#
#   1. builds the cluster binaries into bin/ if they are missing
#      (make cluster-bin),
#   2. starts kube-apiserver + etcd (internal/testcluster/cmd/localcluster)
#      and waits for its "ready <kubeconfig> <url>" line,
#   3. seeds it once with PODS pods of the benchmark fixture
#      (internal/bench/cmd/seedbench) and prints how long that took,
#   4. runs ROUNDS rounds, each running the benchmark binary once with
#      -bench.impl=ours and once with -bench.impl=client-go, the order
#      alternating between rounds, appending the raw output to BENCH_REAL_OUT,
#   5. stops the cluster on exit, also on Ctrl-C or failure, and prints the
#      total run time.
#
# The API server runs with --watch-cache=false (APISERVER_FLAGS): the relist
# benchmark makes the informers' resourceVersion expire by compacting etcd,
# and a watch cache would serve the re-watch from its own history instead
# of answering 410 Gone. Streaming lists (the WatchList feature) are on by
# default in kube-apiserver 1.37 and are served from etcd then.
#
# Environment:
#   ROUNDS           rounds (default 3)
#   PODS             pods to seed (default 10000)
#   BENCH_REAL_OUT   file the raw output is appended to (default docs/benchmarks-real.txt)
#   BENCH_RE         benchmarks to run (default ^BenchmarkRealServer)
#   BENCHTIME        -test.benchtime of each run (default 1x: one timed sync
#                    or relist per benchmark and round, plus one sampled for
#                    the heap)
#   APISERVER_FLAGS  kube-apiserver flags, split on spaces (default --watch-cache=false)
#   READY_TIMEOUT    seconds to wait for the cluster (default 180)
#   GO               the go command (default go)
#
# Usage: bash hack/bench-real.sh   (or: make bench-real ROUNDS=2)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"
go_bin="${GO:-go}"
rounds="${ROUNDS:-3}"
pods="${PODS:-10000}"
out="${BENCH_REAL_OUT:-docs/benchmarks-real.txt}"
bench_re="${BENCH_RE:-^BenchmarkRealServer}"
benchtime="${BENCHTIME:-1x}"
apiserver_flags="${APISERVER_FLAGS---watch-cache=false}"
ready_timeout="${READY_TIMEOUT:-180}"

log() { echo "bench-real: $*" >&2; }

start=$(date +%s)
work_dir="$(mktemp -d "${TMPDIR:-/tmp}/bench-real.XXXXXX")"
kubeconfig="${work_dir}/kubeconfig"
cluster_out="${work_dir}/localcluster.out"
cluster_err="${work_dir}/localcluster.err"
cluster_pid=""
bench_pid=""

cleanup() {
	local status=$?
	trap - EXIT INT TERM
	if [[ -n "${bench_pid}" ]] && kill -0 "${bench_pid}" 2>/dev/null; then
		log "stopping the benchmark run (pid ${bench_pid})"
		kill -TERM "${bench_pid}" 2>/dev/null || true
		wait "${bench_pid}" 2>/dev/null || true
	fi
	if [[ -n "${cluster_pid}" ]] && kill -0 "${cluster_pid}" 2>/dev/null; then
		log "stopping the cluster (pid ${cluster_pid})"
		kill -TERM "${cluster_pid}" 2>/dev/null || true
		# localcluster stops kube-apiserver, then etcd, and removes their
		# directory; give it a while, then force it.
		for _ in $(seq 1 300); do
			kill -0 "${cluster_pid}" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "${cluster_pid}" 2>/dev/null; then
			log "the cluster did not stop in 30s; killing it"
			kill -KILL "${cluster_pid}" 2>/dev/null || true
		fi
		wait "${cluster_pid}" 2>/dev/null || true
	fi
	rm -rf "${work_dir}"
	log "total run time $(($(date +%s) - start)) s (exit status ${status})"
	exit "${status}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# 1. Binaries: built only when missing (make test builds them).
if [[ ! -x bin/kube-apiserver || ! -x bin/etcd ]]; then
	log "building kube-apiserver and etcd (make cluster-bin)"
	make cluster-bin
fi

# Built first rather than started with `go run`, so that the pid we signal
# is localcluster itself, which stops its processes cleanly.
log "building the cluster runner, the seeder and the benchmark binary"
"${go_bin}" build -o "${work_dir}/localcluster" ./internal/testcluster/cmd/localcluster
"${go_bin}" build -o "${work_dir}/seedbench" ./internal/bench/cmd/seedbench
"${go_bin}" test -c -o "${work_dir}/bench.test" ./internal/bench/

# 2. The cluster.
cluster_args=(-kubeconfig "${kubeconfig}")
for f in ${apiserver_flags}; do
	cluster_args+=("-apiserver-flag=${f}")
done
log "starting kube-apiserver + etcd (kube-apiserver flags: ${apiserver_flags:-none})"
"${work_dir}/localcluster" "${cluster_args[@]}" >"${cluster_out}" 2>"${cluster_err}" &
cluster_pid=$!

deadline=$((SECONDS + ready_timeout))
until grep -q '^ready ' "${cluster_out}" 2>/dev/null; do
	if ! kill -0 "${cluster_pid}" 2>/dev/null; then
		wait "${cluster_pid}" || true
		cluster_pid=""
		cat "${cluster_err}" >&2
		log "the cluster exited before it was ready"
		exit 1
	fi
	if ((SECONDS >= deadline)); then
		cat "${cluster_err}" >&2
		log "the cluster was not ready after ${ready_timeout}s"
		exit 1
	fi
	sleep 0.2
done
read -r _ ready_kubeconfig server < <(grep -m1 '^ready ' "${cluster_out}")
# localcluster logs "...; etcd at <url>; ..." once it is ready.
etcd_url="$(grep -o 'etcd at [^;]*' "${cluster_err}" | head -1 | cut -d' ' -f3)"
if [[ -z "${etcd_url}" ]]; then
	cat "${cluster_err}" >&2
	log "cannot tell etcd's URL from localcluster's log"
	exit 1
fi
log "cluster ready at ${server}, etcd at ${etcd_url}"

# 3. The pods, once for every round.
seed_start=$(date +%s%N)
"${work_dir}/seedbench" -kubeconfig "${ready_kubeconfig}" -n "${pods}"
seed_ms=$((($(date +%s%N) - seed_start) / 1000000))
log "seeded ${pods} pods in $((seed_ms / 1000)).$((seed_ms % 1000 / 100)) s"

# 4. The rounds.
mkdir -p "$(dirname "${out}")"
bench_start=$(date +%s)
for round in $(seq 1 "${rounds}"); do
	sides=(ours client-go)
	if ((round % 2 == 0)); then sides=(client-go ours); fi
	for side in "${sides[@]}"; do
		log "round ${round}/${rounds}, impl=${side}"
		# In the background and waited for, so that a signal to this
		# script is handled at once (cleanup stops the run, then the
		# cluster), not when the run ends.
		(cd internal/bench && exec "${work_dir}/bench.test" -test.run '^$' -test.bench "${bench_re}" -test.benchmem \
			-test.count 1 -test.benchtime "${benchtime}" -test.timeout 60m -bench.impl="${side}" \
			-bench.kubeconfig "${ready_kubeconfig}" -bench.etcd "${etcd_url}") > >(tee -a "${out}") &
		bench_pid=$!
		wait "${bench_pid}"
		bench_pid=""
	done
done
log "${rounds} rounds in $(($(date +%s) - bench_start)) s; raw output appended to ${out}"
