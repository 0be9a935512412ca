#!/usr/bin/env bash
# Redis 7.0.15's own integration tests (tests/integration/*: replication, PSYNC, chains of
# replicas…) with embedis-server in the place of redis-server. Unlike run.sh, which runs the unit
# tests in external mode against one server, these tests start their own servers — primaries and
# replicas — so the harness must find embedis where it looks for `src/redis-server`: this script
# stages a copy of Redis's tests beside a `src/` of symlinks (embedis-server as redis-server, the
# real redis-cli, redis-benchmark and redis-check-* tools) and runs the units given.
#
#   tests/redis-suite/integration.sh integration/replication-psync
#   tests/redis-suite/integration.sh integration/replication-4 integration/block-repl
#
# Needs tclsh, the real Redis tools on PATH, and Redis's source at tag 7.0.15 in REDIS_SRC
# (default /tmp/redis-src; see run.sh's header for staging it). The copy goes to STAGE (default
# /tmp/embedis-integration); Redis's files are never committed. The harness's default.conf asks
# for `enable-module-command yes`, which embedis (no modules) refuses: the staged copy drops it.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
REDIS_SRC=${REDIS_SRC:-/tmp/redis-src}
STAGE=${STAGE:-/tmp/embedis-integration}
BASEPORT=${BASEPORT:-25000}
[ -f "$REDIS_SRC/tests/test_helper.tcl" ] || { echo "no Redis test sources in $REDIS_SRC" >&2; exit 2; }
[ $# -gt 0 ] || { echo "usage: $0 integration/<unit>..." >&2; exit 2; }
cargo build --release --bin embedis-server
rm -rf "$STAGE"
mkdir -p "$STAGE/src"
cp -r "$REDIS_SRC/tests" "$STAGE/"
cp "$REDIS_SRC/runtest" "$STAGE/"
sed -i '/^enable-module-command/d' "$STAGE/tests/assets/default.conf"
# embedis as the Redis whose tests these are (7.0 unless VERSION says otherwise; the server's
# default is newer): the option follows the config file the harness names first.
cat > "$STAGE/src/redis-server" <<WRAPPER
#!/bin/sh
case "\$1" in
  -*|"") exec "$ROOT/target/release/embedis-server" "\$@" ;;
  *) config=\$1; shift; exec "$ROOT/target/release/embedis-server" "\$config" --compat-version ${VERSION:-7.0} "\$@" ;;
esac
WRAPPER
chmod +x "$STAGE/src/redis-server"
for tool in redis-cli redis-benchmark redis-check-aof redis-check-rdb; do
  ln -s "$(command -v $tool)" "$STAGE/src/$tool"
done
cd "$STAGE"
status=0
for unit in "$@"; do
  ./runtest --single "$unit" --clients 1 --baseport "$BASEPORT" --timeout 1200 || status=$?
done
exit $status
