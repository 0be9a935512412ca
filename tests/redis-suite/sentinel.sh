#!/usr/bin/env bash
# Redis 7.0.15's Sentinel suite (`runtest-sentinel`: tests/sentinel/tests, 14 files) with the
# real redis-sentinel watching embedis instances: the suite starts 5 Sentinels and 5 servers,
# makes one server the primary of the others, and checks discovery, failover, reconfiguration of
# replicas, down conditions, ACL-protected instances and a primary's reboot.
#
#   tests/redis-suite/sentinel.sh                     # every file, embedis servers
#   tests/redis-suite/sentinel.sh --mode redis        # Redis itself: the baseline
#   tests/redis-suite/sentinel.sh --single 12-master-reboot
#
# Needs tclsh, redis-server, redis-sentinel and redis-cli on PATH, and Redis's source at tag
# 7.0.15 in REDIS_SRC (default /tmp/redis-src; see run.sh's header for staging it). The copy goes
# to STAGE (default /tmp/embedis-sentinel-suite); Redis's files are never committed.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
REDIS_SRC=${REDIS_SRC:-/tmp/redis-src}
STAGE=${STAGE:-/tmp/embedis-sentinel-suite}
MODE=embedis
if [ "${1:-}" = "--mode" ]; then
  MODE=$2
  shift 2
fi
[ -f "$REDIS_SRC/tests/sentinel/run.tcl" ] || { echo "no Redis test sources in $REDIS_SRC" >&2; exit 2; }
case $MODE in embedis|redis) ;; *) echo "mode: embedis or redis" >&2; exit 2 ;; esac
[ "$MODE" = redis ] || [ -n "${EMBEDIS_BIN:-}" ] || cargo build --release --bin embedis-server
EMBEDIS=${EMBEDIS_BIN:-$ROOT/target/release/embedis-server}
rm -rf "$STAGE"
mkdir -p "$STAGE/src"
cp -r "$REDIS_SRC/tests" "$STAGE/"
cp "$REDIS_SRC/runtest-sentinel" "$STAGE/"
if [ "$MODE" = redis ]; then
  ln -s "$(command -v redis-server)" "$STAGE/src/redis-server"
else
  # As Redis 7.0, whose suite this is (the server's default is newer).
  printf '#!/bin/sh\nexec "%s" "$@" --compat-version 7.0\n' "$EMBEDIS" > "$STAGE/src/redis-server"
  chmod +x "$STAGE/src/redis-server"
fi
for tool in redis-sentinel redis-cli; do
  ln -s "$(command -v $tool)" "$STAGE/src/$tool"
done
cd "$STAGE"
exec ./runtest-sentinel "$@"
