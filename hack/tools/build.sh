#!/usr/bin/env bash
# Builds the binaries the integration test cluster needs into <repo>/bin:
#
#   bin/kube-apiserver   k8s.io/kubernetes/cmd/kube-apiserver
#   bin/etcd             go.etcd.io/etcd/server/v3 (via ./etcd)
#
# Versions come from hack/tools/go.mod. The script is a fast no-op when the
# binaries were built from the same go.mod, go.sum, sources and Go toolchain
# (recorded in bin/.cluster-bin.stamp). Set FORCE=1 to rebuild anyway.
#
# Environment:
#   BIN_DIR   output directory (default: <repo>/bin)
#   FORCE     rebuild even if the stamp matches
set -euo pipefail

tools_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "${tools_dir}/../.." && pwd)"
bin_dir="${BIN_DIR:-${repo_root}/bin}"
stamp_file="${bin_dir}/.cluster-bin.stamp"
binaries=(kube-apiserver etcd)

cd "${tools_dir}"
# This module is built on its own, never as part of a workspace.
export GOWORK=off

go_bin="${GO:-go}"
goos="$("${go_bin}" env GOOS)"
goarch="$("${go_bin}" env GOARCH)"

# Everything that determines the output. The build script itself is part of
# it so that changing build flags here invalidates old binaries.
compute_stamp() {
	{
		"${go_bin}" version
		echo "target ${goos}/${goarch}"
		sha256sum go.mod go.sum tools.go etcd/main.go build.sh
	}
}

stamp="$(compute_stamp)"

up_to_date=1
for b in "${binaries[@]}"; do
	if [[ ! -x "${bin_dir}/${b}" ]]; then
		up_to_date=0
	fi
done
if [[ "${up_to_date}" == 1 && -z "${FORCE:-}" && -f "${stamp_file}" ]] &&
	[[ "$(cat "${stamp_file}")" == "${stamp}" ]]; then
	echo "cluster binaries in ${bin_dir} are up to date"
	exit 0
fi

kube_version="$("${go_bin}" list -m -f '{{.Version}}' k8s.io/kubernetes)"
kube_minor="$(echo "${kube_version}" | cut -d. -f2)"
pkg="k8s.io/component-base/version"
ldflags=(
	# No symbol table or DWARF: a third smaller and faster to link. Stack
	# traces keep function names and line numbers.
	"-s" "-w"
	"-X ${pkg}.gitVersion=${kube_version}"
	"-X ${pkg}.gitMajor=1"
	"-X ${pkg}.gitMinor=${kube_minor}"
	"-X ${pkg}.gitTreeState=clean"
)

mkdir -p "${bin_dir}"
tmp_out="$(mktemp -d "${bin_dir}/.build.XXXXXX")"
trap 'rm -rf "${tmp_out}"' EXIT

echo "building kube-apiserver ${kube_version} and etcd into ${bin_dir} (a cold build takes several minutes)"
start=${SECONDS}
# One go build invocation for both commands so they share the compile
# parallelism; with -o pointing at a directory each command is written under
# its import path's last element.
CGO_ENABLED=0 "${go_bin}" build -trimpath -buildvcs=false -ldflags "${ldflags[*]}" -o "${tmp_out}/" \
	k8s.io/kubernetes/cmd/kube-apiserver ./etcd

for b in "${binaries[@]}"; do
	mv -f "${tmp_out}/${b}" "${bin_dir}/${b}"
done
echo "${stamp}" >"${stamp_file}"
echo "built ${binaries[*]} in $((SECONDS - start))s"
