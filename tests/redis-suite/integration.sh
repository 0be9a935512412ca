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
#   tests/redis-suite/integration.sh --all           # every unit (or test) external mode cannot run
#
# EMBEDIS_BIN=<path> stages that embedis-server binary (a copy, so that rebuilding during a long
# run does not change the server under test). REFERENCE=/usr/bin/redis-server stages that server instead of embedis, for the baseline in the
# same harness on the same machine. TABLE=<file> appends one line per unit: unit, passed, failed,
# exceptions, seconds, and the log of each unit goes beside it (<file>.logs/). unit/tls runs with
# `--tls` (certificates made by Redis's utils/gen-test-certs.sh; needs the tcl-tls package).
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
[ $# -gt 0 ] || { echo "usage: $0 integration/<unit>... | --all" >&2; exit 2; }
if [ "$1" = "--all" ]; then
  # test_helper.tcl's units that start servers of their own, which run.sh's external mode skips,
  # and every unit with tests tagged external:skip (whole units such as obuf-limits, or single
  # tests of introspection, scripting…): here each runs whole, against servers of its own.
  set -- $(cd "$REDIS_SRC/tests" && {
    ls integration/*.tcl unit/cluster/*.tcl
    grep -l "external:skip" unit/*.tcl unit/type/*.tcl
    echo unit/tls
  } | sed 's/\.tcl$//' | sort -u)
fi
[ -n "${REFERENCE:-}${EMBEDIS_BIN:-}" ] || cargo build --release --bin embedis-server
EMBEDIS_BIN=${EMBEDIS_BIN:-$ROOT/target/release/embedis-server}
rm -rf "$STAGE"
mkdir -p "$STAGE/src"
cp -r "$REDIS_SRC/tests" "$STAGE/"
cp "$REDIS_SRC/runtest" "$STAGE/"
sed -i '/^enable-module-command/d' "$STAGE/tests/assets/default.conf"
# embedis as the Redis whose tests these are (7.0 unless VERSION says otherwise; the server's
# default is newer): the option follows the config file the harness names first.
if [ -n "${REFERENCE:-}" ]; then
  ln -s "$REFERENCE" "$STAGE/src/redis-server"
else
# `exec -a` keeps the name the harness ran (as the symlink a real src/redis-server would be):
# unit/other reads it back in the process title.
cat > "$STAGE/src/redis-server" <<WRAPPER
#!/bin/bash
case "\$1" in
  -*|"") exec -a "\$0" "$EMBEDIS_BIN" "\$@" ;;
  *) exec -a "\$0" "$EMBEDIS_BIN" "\$@" --compat-version ${VERSION:-7.0} ;;
esac
WRAPPER
chmod +x "$STAGE/src/redis-server"
fi
for tool in redis-cli redis-benchmark redis-check-aof redis-check-rdb; do
  ln -s "$(command -v $tool)" "$STAGE/src/$tool"
done
if [ -f "$REDIS_SRC/utils/gen-test-certs.sh" ]; then
  mkdir -p "$STAGE/utils" && cp "$REDIS_SRC/utils/gen-test-certs.sh" "$STAGE/utils/"
fi
[ -z "${TABLE:-}" ] || { TABLE=$(realpath -m "$TABLE"); mkdir -p "$TABLE.logs"; }
cd "$STAGE"
status=0
for unit in "$@"; do
  args=(--single "$unit" --clients 1 --baseport "$BASEPORT" --timeout 1200)
  if [ "$unit" = unit/tls ]; then
    [ -f tests/tls/ca.crt ] || ./utils/gen-test-certs.sh >/dev/null 2>&1
    args+=(--tls)
  fi
  start=$(date +%s)
  if [ -z "${TABLE:-}" ]; then
    ./runtest "${args[@]}" || status=$?
    continue
  fi
  log="$TABLE.logs/${unit//\//_}.log"
  TERM=dumb timeout "${UNIT_TIMEOUT:-1800}" ./runtest "${args[@]}" > "$log" 2>&1 || status=$?
  printf '%s\t%s\t%s\t%s\t%s\n' "$unit" "$(grep -c '^\[ok\]' "$log")" \
    "$(grep -c '^\[err\]' "$log")" "$(grep -c '^\[exception\]' "$log")" \
    "$(( $(date +%s) - start ))" >> "$TABLE"
done
exit $status
