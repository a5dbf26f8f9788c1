#!/usr/bin/env bash
# Builds kube-apiserver, etcd and kubectl from source through the Go module proxy into
# bin/k8s/<version>-linux-amd64 (setup-envtest's layout), for envtest. The usual envtest
# download cannot be reached from our build machines. With --node it also builds what a
# real single-node cluster needs (hack/e2e-cluster.sh): kube-controller-manager,
# kube-scheduler, kubelet and kube-proxy.
#
# k8s.io/kubernetes cannot be `go install`ed: its go.mod replaces the staging modules
# (k8s.io/api, k8s.io/client-go, ...) with local paths. A throw-away module that requires
# it and replaces each staging module with its published version builds fine.
#
# Usage: hack/envtest-assets.sh [--node]   prints the assets directory (builds it if missing)
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-1.37.2}
ETCD_VERSION=${ETCD_VERSION:-3.7.0} # what Kubernetes $K8S_VERSION pins in hack/lib/etcd.sh
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bin/k8s/$K8S_VERSION-linux-amd64

commands=(kube-apiserver kubectl)
if [[ ${1:-} == --node ]]; then
  commands+=(kube-controller-manager kube-scheduler kubelet kube-proxy)
fi
missing=()
for c in "${commands[@]}"; do
  [[ -x $out/$c ]] || missing+=("$c")
done
if [[ ${#missing[@]} -eq 0 && -x $out/etcd ]]; then
  echo "$out"
  exit 0
fi
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod CGO_ENABLED=0

minor=${K8S_VERSION#1.}; minor=${minor%%.*}
staging=v0.${K8S_VERSION#1.}

echo "envtest-assets: building Kubernetes v$K8S_VERSION (${missing[*]}) into $out" >&2
mkdir -p "$work/k8s" && cd "$work/k8s"
go mod init envtest-build/k8s >/dev/null 2>&1
go mod edit -require "k8s.io/kubernetes@v$K8S_VERSION"
go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" >/dev/null
kmod=$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/v$K8S_VERSION.mod
# Every k8s.io module that kubernetes requires at v0.0.0 is a staging module.
for m in $(awk '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" {print $1}' "$kmod" | sort -u); do
  case $m in k8s.io/sample-cli-plugin | k8s.io/sample-controller) continue ;; esac
  go mod edit -replace "$m=$m@$staging"
done
cat >tools.go <<'GO'
//go:build tools

package tools
GO
# Each command is named in `go get`, so go.sum gets the entries of everything it imports.
packages=()
for c in "${missing[@]}"; do packages+=("k8s.io/kubernetes/cmd/$c"); done
if [[ ${#packages[@]} -gt 0 ]]; then
  go get "${packages[@]/%/@v$K8S_VERSION}" >&2
  ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  go build -trimpath -ldflags "$ldflags" -o "$out/" "${packages[@]}"
fi
[[ -x $out/etcd ]] && { echo "$out"; exit 0; }

echo "envtest-assets: building etcd v$ETCD_VERSION" >&2
mkdir -p "$work/etcd" && cd "$work/etcd"
go mod init envtest-build/etcd >/dev/null 2>&1
go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >&2
go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3
echo "$out"
