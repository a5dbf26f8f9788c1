#!/usr/bin/env bash
# A real single-node Kubernetes for the end-to-end test (make test-e2e), on this
# machine, with nothing pulled and nothing routed off it.
#
#   hack/e2e-cluster.sh build    binaries: Kubernetes and etcd from source (hack/envtest-assets.sh
#                                --node), CoreDNS with the kubernetes plugin only, the pause image;
#                                Debian packages: containerd, runc, CNI plugins, iptables, conntrack, socat
#   hack/e2e-cluster.sh up       builds what is missing, starts the cluster, waits for a Ready node
#   hack/e2e-cluster.sh down     stops everything it started (by PID) and undoes what it changed
#   hack/e2e-cluster.sh import T loads the image tarball T into the node's containerd
#   hack/e2e-cluster.sh env      prints KUBECONFIG=... and the cluster DNS address
#
# The node is a bridge ($BRIDGE) on $POD_SUBNET: its first address is the node IP, the
# API server's address, the pods' gateway and the cluster DNS (CoreDNS runs on the host,
# answering cluster.local only). Pods get addresses on the bridge from the CNI bridge
# plugin; a FORWARD rule drops whatever would leave the bridge for another interface.
# Broker volumes are local PersistentVolumes under $STATE/volumes, made by this script,
# in the default StorageClass "local".
#
# Facts of the machines this runs on: no CAP_SYS_RESOURCE (containerd needs
# restrict_oom_score_adj), cgroups v1 (cgroupfs driver, failCgroupV1: false), the
# kubelet refuses a loopback node IP (hence the bridge address).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
K8S_VERSION=${K8S_VERSION:-1.37.2}
COREDNS_VERSION=${COREDNS_VERSION:-1.15.0}
BRIDGE=${E2E_BRIDGE:-raftka0}
POD_SUBNET=${E2E_POD_SUBNET:-10.247.0.0/24}
SERVICE_SUBNET=${E2E_SERVICE_SUBNET:-10.248.0.0/24}
NODE_NAME=${E2E_NODE_NAME:-raftka-e2e}
STATE=${E2E_STATE:-/var/lib/raftka-e2e}
RUN=/run/raftka-e2e
VOLUMES=${E2E_VOLUMES:-8}
PAUSE_IMAGE=raftka/e2e-pause:v0.1.0

prefix=${POD_SUBNET%.*/*}
NODE_IP=$prefix.1
API_SERVICE_IP=${SERVICE_SUBNET%.*/*}.1
assets=$root/bin/k8s/$K8S_VERSION-linux-amd64
coredns=$root/bin/coredns-$COREDNS_VERSION
pause_tar=$root/bin/images/raftka-e2e-pause.tar
pki=$STATE/pki
logs=$STATE/logs
containerd_sock=$RUN/containerd/containerd.sock
export KUBECONFIG=$STATE/admin.kubeconfig

log() { echo "e2e-cluster: $*" >&2; }

# --- build -------------------------------------------------------------------

install_packages() {
  local missing=()
  for cmd in containerd runc iptables conntrack socat; do
    command -v "$cmd" >/dev/null || missing+=("$cmd")
  done
  [[ -x /usr/lib/cni/bridge ]] || missing+=(containernetworking-plugins)
  [[ ${#missing[@]} -eq 0 ]] && return
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq containerd runc containernetworking-plugins iptables conntrack socat >/dev/null
}

# build_coredns builds CoreDNS with a plugin list of our own: kubernetes answers
# cluster.local; no forward plugin, so no query ever leaves the machine.
build_coredns() {
  [[ -x $coredns ]] && return
  log "building CoreDNS v$COREDNS_VERSION"
  local work
  work=$(mktemp -d)
  (
    trap 'rm -rf "$work"' EXIT
    export GOFLAGS=-mod=mod CGO_ENABLED=0
    cd "$work"
    go mod init e2e-build/coredns >/dev/null 2>&1
    cat >main.go <<'GO'
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() { dnsserver.Directives = []string{"bind", "ready", "health", "errors", "kubernetes"} }

func main() { coremain.Run() }
GO
    go get "github.com/coredns/coredns@v$COREDNS_VERSION" >&2
    go build -trimpath -ldflags "-s -w" -o "$coredns" .
  )
}

build_pause_image() {
  [[ -f $pause_tar ]] && return
  make -C "$root" --no-print-directory e2e-pause-image VERSION="${PAUSE_IMAGE##*:}"
}

build() {
  install_packages
  "$root/hack/envtest-assets.sh" --node >/dev/null
  build_coredns
  build_pause_image
}

# --- certificates and kubeconfigs ---------------------------------------------

# cert NAME CN [O] [SANs]: a client/server certificate signed by the cluster CA.
cert() {
  local name=$1 cn=$2 org=${3:-} sans=${4:-}
  local subj="/CN=$cn"
  [[ -n $org ]] && subj="/O=$org$subj"
  local ext="keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth,serverAuth
basicConstraints=critical,CA:FALSE"
  [[ -n $sans ]] && ext+=$'\n'"subjectAltName=$sans"
  openssl req -new -newkey rsa:2048 -nodes -keyout "$pki/$name.key" -subj "$subj" -out "$pki/$name.csr" 2>/dev/null
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 7 \
    -extfile <(echo "$ext") -out "$pki/$name.crt" 2>/dev/null
}

kubeconfig() {
  local name=$1 file=$STATE/$1.kubeconfig
  cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: https://$NODE_IP:6443
    certificate-authority: $pki/ca.crt
users:
- name: $name
  user:
    client-certificate: $pki/$name.crt
    client-key: $pki/$name.key
contexts:
- name: e2e
  context: {cluster: e2e, user: $name, namespace: default}
current-context: e2e
EOF
}

make_pki() {
  mkdir -p "$pki"
  openssl req -x509 -new -newkey rsa:2048 -nodes -keyout "$pki/ca.key" -subj "/CN=raftka-e2e-ca" -days 7 -out "$pki/ca.crt" 2>/dev/null
  openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  cert apiserver kube-apiserver "" "IP:$NODE_IP,IP:$API_SERVICE_IP,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
  cert admin raftka-e2e-admin system:masters
  cert controller-manager system:kube-controller-manager
  cert scheduler system:kube-scheduler
  cert kube-proxy system:kube-proxy
  cert kubelet "system:node:$NODE_NAME" system:nodes "IP:$NODE_IP,DNS:$NODE_NAME"
  cert coredns system:coredns
  for c in admin controller-manager scheduler kube-proxy kubelet coredns; do kubeconfig "$c"; done
}

# --- processes -----------------------------------------------------------------

# start NAME CMD...: runs CMD in its own session, logging to $logs/NAME.log,
# its PID in $RUN/pids/NAME.pid for down.
start() {
  local name=$1
  shift
  mkdir -p "$RUN/pids" "$logs"
  setsid "$@" >"$logs/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/pids/$name.pid"
}

# wait_for WHAT SECONDS CMD...: polls CMD until it succeeds.
wait_for() {
  local what=$1 seconds=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS > deadline)); then
      log "$what not ready after ${seconds}s; last lines of the logs:"
      tail -n 20 "$logs"/*.log >&2 || true
      return 1
    fi
    sleep 0.5
  done
}

stop_pid() {
  local file=$1 pid
  pid=$(cat "$file")
  if kill -TERM "$pid" 2>/dev/null; then
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}

kubectl() { "$assets/kubectl" "$@"; }

# --- host changes that down undoes ------------------------------------------------

# The kubelet and kube-proxy set these; the first two we need ourselves.
sysctls=(net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables kernel.panic kernel.panic_on_oops vm.overcommit_memory)

save_sysctls() {
  [[ -f $STATE/sysctls ]] && return
  for s in "${sysctls[@]}"; do echo "$s=$(sysctl -n "$s")"; done >"$STATE/sysctls"
}

restore_sysctls() {
  [[ -f $STATE/sysctls ]] || return 0
  while IFS= read -r line; do sysctl -q -w "$line" || true; done <"$STATE/sysctls"
}

network_up() {
  sysctl -q -w net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
    ip addr add "$NODE_IP/${POD_SUBNET#*/}" dev "$BRIDGE"
    ip link set "$BRIDGE" up
  fi
  # Nothing from the pods leaves the machine: forwarded traffic from the bridge
  # may only go back to the bridge.
  iptables -N RAFTKA-E2E 2>/dev/null || iptables -F RAFTKA-E2E
  iptables -A RAFTKA-E2E -i "$BRIDGE" ! -o "$BRIDGE" -j DROP
  iptables -C FORWARD -j RAFTKA-E2E 2>/dev/null || iptables -I FORWARD 1 -j RAFTKA-E2E
}

# remove_kube_chains drops the chains the kubelet and kube-proxy made (KUBE-*)
# and the rules that jump to them, in every table, for IPv4 and IPv6.
remove_kube_chains() {
  local tool table rule chain
  for tool in iptables ip6tables; do
    command -v "$tool" >/dev/null || continue
    for table in filter nat mangle; do
      "$tool" -t "$table" -S 2>/dev/null | grep -E '^-A .* -j KUBE-' | sed 's/^-A/-D/' |
        while IFS= read -r rule; do eval "$tool -t $table $rule" 2>/dev/null || true; done || true
      for chain in $("$tool" -t "$table" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ {print $2}'); do
        "$tool" -t "$table" -F "$chain" 2>/dev/null || true
      done
      for chain in $("$tool" -t "$table" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ {print $2}'); do
        "$tool" -t "$table" -X "$chain" 2>/dev/null || true
      done
    done
  done
}

network_down() {
  while iptables -D FORWARD -j RAFTKA-E2E 2>/dev/null; do :; done
  iptables -F RAFTKA-E2E 2>/dev/null || true
  iptables -X RAFTKA-E2E 2>/dev/null || true
  ip link del "$BRIDGE" 2>/dev/null || true
}

# --- components ----------------------------------------------------------------

start_etcd() {
  start etcd "$assets/etcd" --name e2e --data-dir "$STATE/etcd" \
    --listen-client-urls http://127.0.0.1:12379 --advertise-client-urls http://127.0.0.1:12379 \
    --listen-peer-urls http://127.0.0.1:12380 --initial-advertise-peer-urls http://127.0.0.1:12380 \
    --initial-cluster e2e=http://127.0.0.1:12380 --unsafe-no-fsync --log-level warn
}

start_apiserver() {
  start kube-apiserver "$assets/kube-apiserver" \
    --etcd-servers http://127.0.0.1:12379 \
    --bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port 6443 \
    --service-cluster-ip-range "$SERVICE_SUBNET" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" \
    --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types InternalIP \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --authorization-mode Node,RBAC --allow-privileged=false
}

start_containerd() {
  mkdir -p "$STATE/cni/net.d" "$RUN/containerd"
  cat >"$STATE/containerd.toml" <<EOF
version = 2
root = "$STATE/containerd"
state = "$RUN/containerd/state"
[grpc]
  address = "$containerd_sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "docker.io/$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni/net.d"
EOF
  cat >"$STATE/cni/net.d/10-raftka-e2e.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "raftka-e2e",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$STATE/cni/ipam",
        "ranges": [[{"subnet": "$POD_SUBNET", "rangeStart": "$prefix.10", "gateway": "$NODE_IP"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "loopback"}
  ]
}
EOF
  start containerd containerd --config "$STATE/containerd.toml"
}

import_image() {
  ctr --address "$containerd_sock" -n k8s.io images import --no-unpack=false "$1" >/dev/null
}

start_controllers() {
  start kube-controller-manager "$assets/kube-controller-manager" \
    --kubeconfig "$STATE/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$STATE/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$STATE/controller-manager.kubeconfig" \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --use-service-account-credentials --leader-elect=false --bind-address 127.0.0.1 \
    --service-cluster-ip-range "$SERVICE_SUBNET" --cluster-name raftka-e2e
  start kube-scheduler "$assets/kube-scheduler" \
    --kubeconfig "$STATE/scheduler.kubeconfig" \
    --authentication-kubeconfig "$STATE/scheduler.kubeconfig" \
    --authorization-kubeconfig "$STATE/scheduler.kubeconfig" \
    --leader-elect=false --bind-address 127.0.0.1
}

start_kubelet() {
  cat >"$STATE/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
containerRuntimeEndpoint: unix://$containerd_sock
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
clusterDomain: cluster.local
clusterDNS: [$NODE_IP]
resolvConf: ""
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $pki/kubelet.crt
tlsPrivateKeyFile: $pki/kubelet.key
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
maxPods: 60
EOF
  start kubelet "$assets/kubelet" --config "$STATE/kubelet.yaml" --kubeconfig "$STATE/kubelet.kubeconfig" \
    --hostname-override "$NODE_NAME" --node-ip "$NODE_IP"
}

start_kube_proxy() {
  cat >"$STATE/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: $STATE/kube-proxy.kubeconfig}
hostnameOverride: $NODE_NAME
clusterCIDR: $POD_SUBNET
bindAddress: $NODE_IP
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack: {maxPerCore: 0}
iptables: {localhostNodePorts: false}
EOF
  start kube-proxy "$assets/kube-proxy" --config "$STATE/kube-proxy.yaml"
}

start_coredns() {
  kubectl apply -f - >/dev/null <<'EOF'
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:coredns"}
EOF
  cat >"$STATE/Corefile" <<EOF
.:53 {
    bind $NODE_IP
    errors
    health 127.0.0.1:18080
    ready 127.0.0.1:18181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $STATE/coredns.kubeconfig e2e
        pods insecure
        ttl 5
    }
}
EOF
  start coredns "$coredns" -conf "$STATE/Corefile"
}

make_volumes() {
  local pvs=""
  for i in $(seq 0 $((VOLUMES - 1))); do
    mkdir -p "$STATE/volumes/pv$i"
    pvs+="---
apiVersion: v1
kind: PersistentVolume
metadata: {name: e2e-pv$i}
spec:
  capacity: {storage: 100Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: local
  local: {path: $STATE/volumes/pv$i}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [$NODE_NAME]}]
"
  done
  kubectl apply -f - >/dev/null <<EOF
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: local
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
$pvs
EOF
}

node_ready() {
  [[ $(kubectl get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]]
}

up() {
  build
  if [[ -d $RUN/pids ]] && ls "$RUN"/pids/*.pid >/dev/null 2>&1; then
    log "already up (run down first)"
    return 1
  fi
  # down deletes /var/lib/kubelet and every KUBE-* chain: never on a machine
  # that is a Kubernetes node of its own.
  if [[ ! -d $STATE ]] && { [[ -e /var/lib/kubelet ]] || pgrep -x kubelet >/dev/null; }; then
    log "this machine already runs a kubelet or has /var/lib/kubelet; not touching it"
    return 1
  fi
  local t0=$SECONDS
  mkdir -p "$STATE" "$RUN"
  save_sysctls
  network_up
  make_pki
  start_etcd
  wait_for etcd 30 curl -fsS http://127.0.0.1:12379/health
  start_apiserver
  wait_for kube-apiserver 60 kubectl get --raw /readyz
  start_containerd
  wait_for containerd 30 ctr --address "$containerd_sock" version
  import_image "$pause_tar"
  start_controllers
  start_kubelet
  start_kube_proxy
  start_coredns
  make_volumes
  wait_for "node $NODE_NAME" 120 node_ready
  # A zone, which Kubernetes copies onto each pod: the brokers' rack.
  kubectl label node "$NODE_NAME" topology.kubernetes.io/zone=e2e-zone-a --overwrite >/dev/null
  wait_for coredns 30 curl -fsS http://127.0.0.1:18181/ready
  log "up in $((SECONDS - t0))s: export KUBECONFIG=$KUBECONFIG (cluster DNS $NODE_IP:53)"
}

# --- down ------------------------------------------------------------------------

unmount_under() {
  local dir
  for dir in "$@"; do
    awk -v d="$dir" '$2 == d || index($2, d "/") == 1 {print $2}' /proc/mounts | sort -r |
      while IFS= read -r m; do umount -l "$m" 2>/dev/null || true; done
  done
}

remove_cgroups() {
  local top
  for top in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/*/kubepods.slice; do
    [[ -d $top ]] || continue
    find "$top" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
}

down() {
  local f
  if [[ ! -d $STATE && ! -d $RUN ]]; then
    log "nothing to take down"
    return 0
  fi
  # The kubelet first, so that it restarts nothing; then every container, whose
  # shims containerd does not stop with itself.
  [[ -f $RUN/pids/kubelet.pid ]] && stop_pid "$RUN/pids/kubelet.pid"
  if [[ -S $containerd_sock ]]; then
    local c=(ctr --address "$containerd_sock" -n k8s.io)
    for id in $("${c[@]}" tasks ls -q 2>/dev/null); do "${c[@]}" tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true; done
    sleep 1
    for id in $("${c[@]}" tasks ls -q 2>/dev/null); do "${c[@]}" tasks delete -f "$id" >/dev/null 2>&1 || true; done
  fi
  if [[ -d $RUN/pids ]]; then
    for f in "$RUN"/pids/*.pid; do [[ -f $f ]] && stop_pid "$f"; done
  fi
  pkill -KILL -f "containerd-shim-runc-v2 .*-address $containerd_sock" 2>/dev/null || true
  [[ -x $assets/kube-proxy ]] && "$assets/kube-proxy" --cleanup >/dev/null 2>&1 || true
  remove_kube_chains
  for ns in /run/netns/cni-*; do [[ -e $ns ]] && ip netns del "${ns##*/}" 2>/dev/null; done
  unmount_under /var/lib/kubelet "$RUN" "$STATE"
  remove_cgroups
  network_down
  restore_sysctls
  rm -rf /var/lib/kubelet /var/lib/cni "$RUN" "$STATE"
  log "down"
}

case ${1:-} in
build) build ;;
up) up ;;
down) down ;;
import) shift; for t in "$@"; do import_image "$t"; done ;;
env) printf 'export KUBECONFIG=%s RAFTKA_E2E_DNS=%s RAFTKA_E2E_CONTAINERD=%s\n' "$KUBECONFIG" "$NODE_IP:53" "$containerd_sock" ;;
*) echo "usage: $0 build|up|down|import TARBALL...|env" >&2; exit 2 ;;
esac
