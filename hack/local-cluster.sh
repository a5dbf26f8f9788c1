#!/usr/bin/env bash
# Runs a local Raftka cluster on 127.0.0.1 for development and tests.
#
#   hack/local-cluster.sh start [N]   start N brokers (default 3); returns when all are ready
#   hack/local-cluster.sh run [N]     start, then wait in the foreground; Ctrl-C stops the cluster
#   hack/local-cluster.sh stop        stop every broker (SIGTERM, then SIGKILL after 10 s)
#   hack/local-cluster.sh kill I      SIGKILL broker I
#   hack/local-cluster.sh restart I   start broker I again (after kill or stop)
#   hack/local-cluster.sh status      one line per broker
#
# Broker I serves Kafka on 127.0.0.1:$((RAFTKA_BASE_PORT+I)), Raft on that port + 10000,
# and /metrics, /readyz on that port - 1000. Data: $RAFTKA_LOCAL_DIR/broker-I.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
base=${RAFTKA_BASE_PORT:-9092}
dir=${RAFTKA_LOCAL_DIR:-$root/.local-cluster}
bin=${RAFTKA_BROKER_BIN:-$root/bin/raftka-broker}

kafka_port() { echo $((base + $1)); }
raft_port() { echo $((base + 10000 + $1)); }
http_port() { echo $((base - 1000 + $1)); }

count() {
  if [[ -f $dir/brokers ]]; then cat "$dir/brokers"; else echo 3; fi
}

join_addrs() {
  local n=$1 out="" i
  for ((i = 0; i < n && i < 3; i++)); do out+="${out:+,}127.0.0.1:$(http_port "$i")"; done
  echo "$out"
}

voters() {
  local n=$1 out="" i
  for ((i = 0; i < n && i < 3; i++)); do out+="${out:+,}$i=127.0.0.1:$(raft_port "$i")"; done
  echo "$out"
}

pid_of() {
  local f=$dir/broker-$1/pid
  [[ -f $f ]] && kill -0 "$(cat "$f")" 2>/dev/null && cat "$f"
}

start_one() {
  local i=$1 n; n=$(count)
  if pid_of "$i" >/dev/null; then return; fi
  mkdir -p "$dir/broker-$i"
  local extra=()
  ((n > 1)) && extra=(--join "$(join_addrs "$n")")
  "$bin" --id "$i" --data-dir "$dir/broker-$i/data" \
    --listen "127.0.0.1:$(kafka_port "$i")" --raft-address "127.0.0.1:$(raft_port "$i")" \
    --http-listen "127.0.0.1:$(http_port "$i")" --metadata-voters "$(voters "$n")" \
    --default-replication-factor "$((n < 3 ? n : 3))" "${extra[@]}" ${RAFTKA_BROKER_FLAGS:-} \
    >>"$dir/broker-$i/log" 2>&1 &
  echo $! >"$dir/broker-$i/pid"
}

ready() {
  local i=$1
  # bash's /dev/tcp keeps this free of curl.
  { exec 3<>"/dev/tcp/127.0.0.1/$(http_port "$i")"; } 2>/dev/null || return 1
  printf 'GET /readyz HTTP/1.0\r\n\r\n' >&3
  local status; read -r _ status _ <&3 || status=0
  exec 3<&- 3>&-
  [[ $status == 200 ]]
}

# wait_one_ready waits for broker $1 to answer /readyz, until $2 (seconds
# since the script began; default RAFTKA_START_TIMEOUT from now).
wait_one_ready() {
  local i=$1 deadline=${2:-$((SECONDS + ${RAFTKA_START_TIMEOUT:-60}))}
  until ready "$i"; do
    if ! pid_of "$i" >/dev/null; then
      echo "broker $i exited; last log lines:" >&2; tail -n 20 "$dir/broker-$i/log" >&2; return 1
    fi
    if ((SECONDS > deadline)); then echo "broker $i not ready in time" >&2; return 1; fi
    sleep 0.2
  done
}

wait_ready() {
  local n; n=$(count)
  local deadline=$((SECONDS + ${RAFTKA_START_TIMEOUT:-60})) i
  for ((i = 0; i < n; i++)); do wait_one_ready "$i" "$deadline" || return 1; done
}

cmd_start() {
  local n=${1:-3} i
  [[ -x $bin ]] || { echo "no broker binary at $bin: run 'make build'" >&2; exit 1; }
  mkdir -p "$dir"
  echo "$n" >"$dir/brokers"
  for ((i = 0; i < n; i++)); do start_one "$i"; done
  wait_ready
  echo "raftka: $n brokers ready; bootstrap servers $(bootstrap)"
}

bootstrap() {
  local n; n=$(count); local out="" i
  for ((i = 0; i < n; i++)); do out+="${out:+,}127.0.0.1:$(kafka_port "$i")"; done
  echo "$out"
}

cmd_stop() {
  local n; n=$(count); local i pid pids=()
  for ((i = 0; i < n; i++)); do
    if pid=$(pid_of "$i"); then kill -TERM "$pid"; pids+=("$pid"); fi
  done
  local deadline=$((SECONDS + 10))
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null; do
      if ((SECONDS > deadline)); then kill -KILL "$pid" 2>/dev/null || true; fi
      sleep 0.1
    done
  done
  rm -f "$dir"/broker-*/pid
}

cmd_kill() {
  local pid
  if pid=$(pid_of "$1"); then kill -KILL "$pid"; while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done; fi
  rm -f "$dir/broker-$1/pid"
}

cmd_status() {
  local n; n=$(count); local i
  for ((i = 0; i < n; i++)); do
    local state=stopped
    if pid_of "$i" >/dev/null; then if ready "$i"; then state=ready; else state=starting; fi; fi
    echo "broker $i  kafka 127.0.0.1:$(kafka_port "$i")  $state"
  done
}

case ${1:-} in
  start) cmd_start "${2:-3}" ;;
  run)
    cmd_start "${2:-3}"
    trap 'echo; echo "stopping"; cmd_stop; exit 0' INT TERM
    cat <<EOF

The cluster is up. In another terminal:
  export RAFTKA_BROKERS=$(bootstrap)
  bin/raftka topic create orders --partitions 3 --replication-factor 3
  printf 'one\ntwo\nthree\n' | bin/raftka produce orders
  bin/raftka consume orders --exit
  bin/raftka cluster info        # bin/raftka --help lists every command
Any Kafka client works too, e.g. kcat -L -b $(bootstrap)

Ctrl-C stops the cluster. Logs: $dir/broker-*/log
EOF
    while true; do sleep 1; done ;;
  stop) cmd_stop ;;
  kill) cmd_kill "${2:?broker index}" ;;
  restart) start_one "${2:?broker index}"; wait_one_ready "$2"; echo "broker $2 ready" ;;
  status) cmd_status ;;
  bootstrap) bootstrap ;;
  *) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
