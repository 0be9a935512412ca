#!/usr/bin/env bash
# Redis 7.0.15's cluster suite (`runtest-cluster`: tests/cluster/tests, 30 files) with embedis
# in the place of `src/redis-server`. The suite starts 20 instances with `cluster-enabled yes`,
# builds clusters with CLUSTER MEET/ADDSLOTS/REPLICATE, kills and restarts nodes, and checks
# failure detection, failover, resharding, pub/sub and the cluster commands' replies.
#
#   tests/redis-suite/cluster.sh                          # every file, embedis nodes only
#   tests/redis-suite/cluster.sh --mode mixed             # even ports embedis, odd redis-server
#   tests/redis-suite/cluster.sh --mode redis             # Redis itself: the baseline
#   tests/redis-suite/cluster.sh --single 02-failover     # one file (any runtest-cluster option)
#
# In mixed mode `src/redis-server` is a wrapper that starts embedis or the real redis-server by
# the port in the instance's config file, so every cluster the suite builds mixes the two and
# every failover, resharding and pub/sub test runs across them.
#
# Needs tclsh, the real Redis tools on PATH (redis-server, redis-cli), and Redis's source at tag
# 7.0.15 in REDIS_SRC (default /tmp/redis-src; see run.sh's header for staging it). The copy
# goes to STAGE (default /tmp/embedis-cluster-suite); Redis's files are never committed.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
REDIS_SRC=${REDIS_SRC:-/tmp/redis-src}
STAGE=${STAGE:-/tmp/embedis-cluster-suite}
MODE=embedis
if [ "${1:-}" = "--mode" ]; then
  MODE=$2
  shift 2
fi
[ -f "$REDIS_SRC/tests/cluster/run.tcl" ] || { echo "no Redis test sources in $REDIS_SRC" >&2; exit 2; }
case $MODE in embedis|mixed|redis) ;; *) echo "mode: embedis, mixed or redis" >&2; exit 2 ;; esac
[ "$MODE" = redis ] || cargo build --release --bin embedis-server
rm -rf "$STAGE"
mkdir -p "$STAGE/src"
cp -r "$REDIS_SRC/tests" "$STAGE/"
cp "$REDIS_SRC/runtest-cluster" "$STAGE/"
EMBEDIS="$ROOT/target/release/embedis-server"
REDIS="$(command -v redis-server)"
case $MODE in
  embedis)
    # As Redis 7.0, whose cluster suite this is (the server's default is newer).
    printf '#!/bin/sh\nexec "%s" "$@" --compat-version 7.0\n' "$EMBEDIS" > "$STAGE/src/redis-server"
    chmod +x "$STAGE/src/redis-server" ;;
  redis) ln -s "$REDIS" "$STAGE/src/redis-server" ;;
  mixed)
    cat > "$STAGE/src/redis-server" <<WRAPPER
#!/bin/sh
# The instance's port decides: even, embedis; odd, redis-server.
port=\$(awk '\$1 == "port" { print \$2; exit }' "\$1")
if [ \$((port % 2)) -eq 0 ]; then exec "$EMBEDIS" "\$@" --compat-version 7.0; else exec "$REDIS" "\$@"; fi
WRAPPER
    chmod +x "$STAGE/src/redis-server" ;;
esac
for tool in redis-cli redis-benchmark redis-check-aof redis-check-rdb; do
  ln -s "$(command -v $tool)" "$STAGE/src/$tool"
done
cd "$STAGE"
exec ./runtest-cluster "$@"
