#!/usr/bin/env bash
# Runs the pod-watching demo against a real, local kube-apiserver + etcd:
#
#   1. builds the cluster binaries into bin/ if needed (hack/tools/build.sh),
#   2. starts internal/testcluster/cmd/localcluster in the background and
#      waits for its "ready <kubeconfig> <url>" line,
#   3. seeds pods with internal/testcluster/cmd/seedpods,
#   4. runs examples/podwatch --kubeconfig <kubeconfig> $DEMO_FLAGS,
#   5. stops the cluster on exit, also on Ctrl-C or failure.
#
# Environment:
#   DEMO_FLAGS        extra flags for examples/podwatch, e.g. "--duration=30s"
#   SEED_PODS         number of pods to create (default 50)
#   SEED_NAMESPACES   comma-separated namespaces for them (default shop,team-0)
#   SEED_NODES        node names assigned to them in turn (default node-a,node-b,node-c;
#                     no node objects are created; empty for unscheduled pods)
#   READY_TIMEOUT     seconds to wait for the cluster (default 180)
#   GO                the go command (default go)
#
# Usage: bash hack/demo-cluster.sh   (or: make demo-cluster DEMO_FLAGS=--duration=30s)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"
go_bin="${GO:-go}"
seed_pods="${SEED_PODS:-50}"
seed_namespaces="${SEED_NAMESPACES:-shop,team-0}"
seed_nodes="${SEED_NODES-node-a,node-b,node-c}"
ready_timeout="${READY_TIMEOUT:-180}"

log() { echo "demo-cluster: $*" >&2; }

work_dir="$(mktemp -d "${TMPDIR:-/tmp}/demo-cluster.XXXXXX")"
kubeconfig="${work_dir}/kubeconfig"
cluster_out="${work_dir}/localcluster.out"
cluster_pid=""

cleanup() {
	local status=$?
	trap - EXIT INT TERM
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
			log "cluster did not stop in 30s; killing it"
			kill -KILL "${cluster_pid}" 2>/dev/null || true
		fi
		wait "${cluster_pid}" 2>/dev/null || true
	fi
	rm -rf "${work_dir}"
	exit "${status}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# 1. Binaries (a fast no-op when they are current).
GO="${go_bin}" bash hack/tools/build.sh

# 2. The cluster. Built first rather than started with `go run`, so that the
# pid we signal is localcluster itself, which stops its processes cleanly.
"${go_bin}" build -o "${work_dir}/localcluster" ./internal/testcluster/cmd/localcluster
"${go_bin}" build -o "${work_dir}/seedpods" ./internal/testcluster/cmd/seedpods
log "starting kube-apiserver + etcd"
"${work_dir}/localcluster" -kubeconfig "${kubeconfig}" >"${cluster_out}" &
cluster_pid=$!

deadline=$((SECONDS + ready_timeout))
until grep -q '^ready ' "${cluster_out}" 2>/dev/null; do
	if ! kill -0 "${cluster_pid}" 2>/dev/null; then
		wait "${cluster_pid}" || true
		cluster_pid=""
		log "the cluster exited before it was ready"
		exit 1
	fi
	if ((SECONDS >= deadline)); then
		log "the cluster was not ready after ${ready_timeout}s"
		exit 1
	fi
	sleep 0.2
done
read -r _ ready_kubeconfig server < <(grep -m1 '^ready ' "${cluster_out}")
log "cluster ready at ${server}; kubeconfig ${ready_kubeconfig}"

# 3. Pods to watch.
"${work_dir}/seedpods" -kubeconfig "${ready_kubeconfig}" -n "${seed_pods}" -namespaces "${seed_namespaces}" -nodes "${seed_nodes}"

# 4. The demo.
if [[ ! -d examples/podwatch ]]; then
	log "examples/podwatch does not exist yet; nothing to run"
	exit 1
fi
log "running examples/podwatch ${DEMO_FLAGS:-}"
# DEMO_FLAGS is split into words on purpose.
# shellcheck disable=SC2086
"${go_bin}" run ./examples/podwatch --kubeconfig "${ready_kubeconfig}" ${DEMO_FLAGS:-}
