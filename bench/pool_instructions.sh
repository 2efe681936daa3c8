#!/bin/bash
# Instructions an acquire+release pair costs on Redis, clients and server apart: a figure the
# load of a shared machine does not move, where pairs/s and the 4-process speedup swing with it.
#
# Run: bench/pool_instructions.sh CHECKOUT PROCS [PYTHON]
#   e.g. git worktree add /tmp/pool-before 2e29da2^1
#        bench/pool_instructions.sh /tmp/pool-before 4 .venv/bin/python
#
# Starts its own redis-server under callgrind on a free loopback port, then PROCS clients under
# callgrind, each running `bench/_pool_pairs.py` with CHECKOUT's urlcheck; twice, with 200 and
# 2,200 pairs per client: the difference over 2,000 x PROCS pairs leaves start-up and warm-up
# out. Redis's figure is its work on the clients' commands (readQueryFromClient, inclusive). Needs valgrind; takes a few minutes (callgrind runs code about 50 times slower).
set -euo pipefail
SRC=$(realpath "$1"); PROCS=$2; PY=${3:-python3}
HERE=$(dirname "$(realpath "$0")")
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

run() {  # run PAIRS -> "clients_Ir server_Ir"
  local pairs=$1 dir=$OUT/$1 port start
  mkdir -p "$dir"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  valgrind --tool=callgrind --callgrind-out-file="$dir/server.%p" \
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 &
  local server=$!
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.2; done
  start=$(python3 -c 'import time; print(time.time() + 15)')
  local clients=()
  for _ in $(seq "$PROCS"); do
    PYTHONPATH=$SRC valgrind --tool=callgrind --callgrind-out-file="$dir/client.%p" \
      "$PY" "$HERE/_pool_pairs.py" "redis://127.0.0.1:$port/0" cost "$pairs" "$start" \
      >/dev/null 2>"$dir/stderr" &
    clients+=($!)
  done
  wait "${clients[@]}"
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$server" || true
  local c=0 f
  for f in "$dir"/client.*; do c=$((c + $(grep -m1 '^totals:' "$f" | cut -d' ' -f2))); done
  echo "$c $(server_work "$dir"/server.*)"
}

server_work() {  # the server's instructions serving the clients: its timers (serverCron) run
  # by the wall clock, so their share depends on the load; without the symbol, everything
  local work
  work=$(callgrind_annotate --inclusive=yes "$1" 2>/dev/null \
    | awk '$NF ~ /^\[/ && $(NF-1) ~ /:readQueryFromClient$/ {gsub(",", "", $1); print $1; exit}')
  echo "${work:-$(grep -m1 '^totals:' "$1" | cut -d' ' -f2)}"
}

read -r c1 s1 < <(run 200)
read -r c2 s2 < <(run 2200)
pairs=$((2000 * PROCS))
echo "$SRC, $PROCS process(es): $(((c2 - c1) / pairs)) instructions a pair in the clients, $(((s2 - s1) / pairs)) in Redis"
