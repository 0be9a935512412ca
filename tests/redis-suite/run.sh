#!/usr/bin/env bash
# Redis's own Tcl test suite against a freshly built embedis-server: the yardstick of
# conformance (see DEVELOPERS.md). Not part of CI: it needs Redis's test sources, which are Redis's
# files and are never committed, and it takes 10-20 minutes.
#
#   tests/redis-suite/run.sh                 # Redis 7.0.15's, every unit (PROFILE=full UNITS=all)
#   tests/redis-suite/run.sh unit/type/list  # some units
#   TAG=7.4.1 tests/redis-suite/run.sh       # Redis 7.4.1's 55 units, embedis as --compat-version 7.4
#
# TAG picks the suite: 7.0.15 (the default; deferred.txt explains its failures) or 7.4.1 (its
# units are those of the runner's 7.4.1 baseline; deferred-7.4.1.txt, when it exists, explains
# the failures). embedis runs as the version the tag names.
# Needs: tclsh (apt-get install -y tcl); the runner in ../shared/redis-suite (or REDIS_SUITE_RUNNER);
# Redis's source at the tag in REDIS_SRC (default /tmp/redis-src for 7.0.15, /tmp/redis-src-<tag>
# otherwise), staged for example with
#   git --git-dir=<a clone of github.com/redis/redis> archive 7.0.15 | tar -x -C /tmp/redis-src
# Prints the runner's per-unit table, then the failures that the deferred list does not explain
# (the gap the work must close) and the deferred tests that now pass.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
RUNNER=${REDIS_SUITE_RUNNER:-$ROOT/../shared/redis-suite/run.sh}
TAG=${TAG:-7.0.15}
case "$TAG" in
  7.0.15) default_src=/tmp/redis-src; DEFERRED=tests/redis-suite/deferred.txt ;;
  7.4.1) default_src=/tmp/redis-src-7.4.1; DEFERRED=tests/redis-suite/deferred-7.4.1.txt ;;
  *) echo "TAG is 7.0.15 or 7.4.1, not $TAG" >&2; exit 2 ;;
esac
VERSION=${TAG%.*}
export REDIS_SRC=${REDIS_SRC:-$default_src}
[ -f "$DEFERRED" ] || DEFERRED=/dev/null
PORT=${PORT:-17010}
OUT_DIR=${OUT_DIR:-$(mktemp -d /tmp/embedis-redis-suite.XXXXXX)}
[ -x "$RUNNER" ] || { echo "no runner at $RUNNER (set REDIS_SUITE_RUNNER)" >&2; exit 2; }
[ -f "$REDIS_SRC/tests/test_helper.tcl" ] || { echo "no Redis test sources in $REDIS_SRC (see the header of $0)" >&2; exit 2; }

cargo build --release --bin embedis-server
export PROFILE=${PROFILE:-full} OUT_DIR
if [ "$TAG" = 7.0.15 ]; then
  [ $# -eq 0 ] && export UNITS=${UNITS:-all}
else
  # The units of Redis's own run of this tag, in its order.
  baseline="$(dirname "$RUNNER")/baseline/redis-$TAG-full-55units.tsv"
  [ $# -eq 0 ] && export UNITS=${UNITS:-$(awk -F'\t' '$1 ~ /^unit\// { print $1 }' "$baseline" | tr '\n' ' ')}
fi
# EMBEDIS_ARGS: more arguments for the server, e.g. EMBEDIS_ARGS="--io-uring yes".
export SERVER_CMD="$ROOT/target/release/embedis-server --port $PORT --bind 127.0.0.1 --enable-debug-command yes --compat-version $VERSION ${EMBEDIS_ARGS:-}"
status=0
"$RUNNER" -p "$PORT" "$@" || status=$?

# Failures against the deferred list.
awk -F'\t' '
  FNR == NR { if ($0 !~ /^#/ && NF >= 2) deferred[$1 "\t" $2] = 1; next }
  { failed[$1 "\t" $2] = 1; if (!(($1 "\t" $2) in deferred) && !(($1 "\t*") in deferred)) gap[++n] = $1 "\t" $2 }
  END {
    print "\nfailures not in the deferred list: " n + 0
    for (i = 1; i <= n; i++) print "  " gap[i]
  }' "$DEFERRED" "$OUT_DIR/failed-tests.txt"

# Deferred tests that passed this time: remove them from the list.
echo "deferred tests that now pass:"
grep -v '^#' "$DEFERRED" | while IFS=$'\t' read -r unit name _; do
  [ -n "$unit" ] && [ "$name" != "*" ] || continue
  log="$OUT_DIR/$(echo "$unit" | tr / _).log"
  [ -f "$log" ] && grep -qF "[ok]: $name (" "$log" && printf '  %s\t%s\n' "$unit" "$name"  || true
done
exit "$status"
